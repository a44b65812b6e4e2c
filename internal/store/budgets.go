package store

import (
	"context"
	"strconv"
	"time"
)

// Budget is a spending limit on a user's usage (DESIGN §4 "Usage, cost
// and budgets"): all of it (scope user), one app's, or one API key's, per
// UTC day or month.
type Budget struct {
	ID            string
	UserID        string
	Scope         string // user, app or key
	ScopeID       string // the user's id, the app's id, the key's id in decimal
	Period        string // day or month
	LimitMicroUSD int64
	// WarnedFor is the period (YYYY-MM-DD or YYYY-MM) whose 80 % warning
	// was sent: one warning per period.
	WarnedFor string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// The budget scopes and periods.
const (
	BudgetScopeUser = "user"
	BudgetScopeApp  = "app"
	BudgetScopeKey  = "key"
	BudgetDay       = "day"
	BudgetMonth     = "month"
)

const budgetColumns = `id, user_id, scope, scope_id, period, limit_micro_usd, warned_for, created_at, updated_at`

func scanBudget(row interface{ Scan(...any) error }, b *Budget, extra ...any) error {
	return row.Scan(append([]any{&b.ID, &b.UserID, &b.Scope, &b.ScopeID, &b.Period, &b.LimitMicroUSD, &b.WarnedFor,
		&b.CreatedAt, &b.UpdatedAt}, extra...)...)
}

// BudgetCreate inserts b.
func (s *Store) BudgetCreate(ctx context.Context, b *Budget) error {
	_, err := s.writer().ExecContext(ctx, `INSERT INTO budgets (`+budgetColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		b.ID, b.UserID, b.Scope, b.ScopeID, b.Period, b.LimitMicroUSD, b.WarnedFor, s.ts(b.CreatedAt), s.ts(b.UpdatedAt))
	return mapErr(err)
}

// BudgetGet returns the budget with id, whoever owns it.
func (s *Store) BudgetGet(ctx context.Context, id string) (*Budget, error) {
	var b Budget
	err := scanBudget(s.reader().QueryRowContext(ctx, `SELECT `+budgetColumns+` FROM budgets WHERE id = $1`, id), &b)
	return &b, mapErr(err)
}

// BudgetListByUser returns a page of a user's budgets, oldest first, and
// the total count.
func (s *Store) BudgetListByUser(ctx context.Context, userID string, limit, offset int) ([]Budget, int, error) {
	total, err := s.count(ctx, `SELECT COUNT(*) FROM budgets WHERE user_id = $1`, userID)
	if err != nil {
		return nil, 0, err
	}
	list, err := queryAll(ctx, s.reader(), func(row interface{ Scan(...any) error }, b *Budget) error { return scanBudget(row, b) },
		`SELECT `+budgetColumns+` FROM budgets WHERE user_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`, userID, limit, offset)
	return list, total, err
}

// BudgetUpdate writes b's period and limit; a changed period or limit
// may warn again (warned_for is b's).
func (s *Store) BudgetUpdate(ctx context.Context, b *Budget) error {
	return expectOne(s.writer().ExecContext(ctx, `UPDATE budgets SET period = $2, limit_micro_usd = $3, warned_for = $4, updated_at = $5 WHERE id = $1`,
		b.ID, b.Period, b.LimitMicroUSD, b.WarnedFor, s.ts(b.UpdatedAt)))
}

// BudgetDelete deletes a budget.
func (s *Store) BudgetDelete(ctx context.Context, id string) error {
	return expectOne(s.writer().ExecContext(ctx, `DELETE FROM budgets WHERE id = $1`, id))
}

// BudgetSpent is a budget with what was spent in its current period.
type BudgetSpent struct {
	Budget
	SpentMicroUSD int64
}

// BudgetsApplying returns the budgets of userID that apply to a call made
// for app appID ("": none) with key keyID (0: none) — the user's, the
// app's, the key's — each with what was spent in its current period: the
// days of today's month for a monthly budget, today for a daily one
// (today is a UTC day, YYYY-MM-DD). One query over the daily sums, which
// hold every recorded call, today's included: a period needs no reset,
// its spent starts from nothing when its first day comes.
func (s *Store) BudgetsApplying(ctx context.Context, userID, appID string, keyID int64, today string) ([]BudgetSpent, error) {
	monthStart := today[:len("2006-01")] + "-01"
	key := ""
	if keyID != 0 {
		key = strconv.FormatInt(keyID, 10)
	}
	return queryAll(ctx, s.reader(), func(row interface{ Scan(...any) error }, b *BudgetSpent) error {
		return scanBudget(row, &b.Budget, &b.SpentMicroUSD)
	}, `SELECT `+budgetColumns+`, (SELECT COALESCE(SUM(d.cost_micro_usd), 0) FROM usage_daily d
			WHERE d.user_id = b.user_id AND d.day <= $2 AND d.day >= (CASE WHEN b.period = 'day' THEN $2 ELSE $3 END)
			AND (b.scope = 'user' OR (b.scope = 'app' AND d.app_id = b.scope_id) OR (b.scope = 'key' AND d.api_key_id = $5)))
		FROM budgets b
		WHERE b.user_id = $1 AND (b.scope = 'user' OR (b.scope = 'app' AND b.scope_id = $4) OR (b.scope = 'key' AND b.scope_id = $6))
		ORDER BY b.created_at, b.id`, userID, today, monthStart, appID, keyID, key)
}

// BudgetWarnOnce marks the budget warned for period, and reports whether
// this call did (false: it was already), so that concurrent callers send
// one warning between them.
func (s *Store) BudgetWarnOnce(ctx context.Context, id, period string) (bool, error) {
	res, err := s.writer().ExecContext(ctx, `UPDATE budgets SET warned_for = $2 WHERE id = $1 AND warned_for <> $2`, id, period)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
