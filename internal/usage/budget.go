package usage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/store"
)

// EventBudgetWarning is announced once per period when a budget's spent
// reaches WarnAt of its limit.
const EventBudgetWarning = "budget_warning"

// WarnAt is the share of a budget whose spending is warned of.
const WarnAt = 0.8

// MaxLimitUSD bounds a budget's limit, so that it fits micro-USD in 64 bits
// with room to sum.
const MaxLimitUSD = 1e9

var (
	errBudgetNotFound = apperr.NotFoundf("Budget not found")
	errAppNotFound    = apperr.NotFoundf("App not found")
	errKeyNotFound    = apperr.NotFoundf("API key not found")
)

// BudgetExceeded is the error of a call a budget refuses: 429
// BudgetExceededError, naming the budget.
func BudgetExceeded(b *store.BudgetSpent) error {
	return apperr.Newf(apperr.BudgetExceeded, "Budget %s exceeded: $%.6f spent of $%.6f this %s (%s %s)",
		b.ID, MicroToUSD(b.SpentMicroUSD), MicroToUSD(b.LimitMicroUSD), b.Period, b.Scope, b.ScopeID)
}

// BudgetInput is a new budget.
type BudgetInput struct {
	Scope    string
	ScopeID  string // "" for scope user: the caller
	Period   string
	LimitUSD float64
}

// BudgetPatch changes a budget's period or limit; nil leaves it.
type BudgetPatch struct {
	Period   *string
	LimitUSD *float64
}

func checkPeriod(p string) error {
	if p != store.BudgetDay && p != store.BudgetMonth {
		return apperr.Invalid("period", "Invalid value for field period: expected day or month")
	}
	return nil
}

func limitMicro(usd float64) (int64, error) {
	if math.IsNaN(usd) || usd <= 0 || usd > MaxLimitUSD {
		return 0, apperr.Invalid("limit_usd", fmt.Sprintf("Invalid value for field limit_usd: expected more than 0 and at most %g", float64(MaxLimitUSD)))
	}
	return USDToMicro(usd), nil
}

// CreateBudget adds a budget on the caller's own account, app or key.
func (s *Service) CreateBudget(ctx context.Context, c *auth.Caller, in BudgetInput) (*store.Budget, error) {
	if err := checkPeriod(in.Period); err != nil {
		return nil, err
	}
	limit, err := limitMicro(in.LimitUSD)
	if err != nil {
		return nil, err
	}
	switch in.Scope {
	case store.BudgetScopeUser:
		if in.ScopeID == "" {
			in.ScopeID = c.UserID
		}
		if in.ScopeID != c.UserID {
			return nil, errUserNotFound
		}
	case store.BudgetScopeApp:
		if in.ScopeID == "" {
			return nil, apperr.Invalid("scope_id", "Missing required field: scope_id (the app's id)")
		}
		_, err := auth.Find(ctx, s.auth, ownOnly(c), in.ScopeID, s.store.AppGet,
			func(a *store.App) auth.Resource {
				return auth.Resource{Type: "app", ID: a.ID, OwnerID: a.UserID, AppID: a.ID}
			}, "app.budget", errAppNotFound)
		if err != nil {
			return nil, err
		}
	case store.BudgetScopeKey:
		id, err := strconv.ParseInt(in.ScopeID, 10, 64)
		if err != nil || id <= 0 {
			return nil, apperr.Invalid("scope_id", "Invalid value for field scope_id: expected an API key's id")
		}
		k, err := s.store.APIKeyGet(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		if err != nil || k.UserID != c.UserID {
			return nil, errKeyNotFound
		}
		in.ScopeID = strconv.FormatInt(id, 10)
	default:
		return nil, apperr.Invalid("scope", "Invalid value for field scope: expected user, app or key")
	}
	now := s.now()
	b := &store.Budget{ID: uuid.Must(uuid.NewV7()).String(), UserID: c.UserID, Scope: in.Scope, ScopeID: in.ScopeID,
		Period: in.Period, LimitMicroUSD: limit, CreatedAt: now, UpdatedAt: now}
	if err := s.store.BudgetCreate(ctx, b); err != nil {
		return nil, err
	}
	// After the commit: a check that read "no budget" before it is then
	// not remembered (unbudgeted.go).
	s.none.forget(b.UserID)
	return b, nil
}

// ownOnly is c without admin rights: a budget is set on one's own things.
func ownOnly(c *auth.Caller) *auth.Caller {
	own := *c
	own.AdminReason = ""
	return &own
}

// Budgets lists a page of the caller's budgets, oldest first.
func (s *Service) Budgets(ctx context.Context, c *auth.Caller, limit, offset int) ([]store.Budget, int, error) {
	return s.store.BudgetListByUser(ctx, c.UserID, limit, offset)
}

// Budget returns one of the caller's budgets (another user's is absent,
// but to an admin with a reason).
func (s *Service) Budget(ctx context.Context, c *auth.Caller, id string) (*store.Budget, error) {
	return auth.Find(ctx, s.auth, c, id, s.store.BudgetGet,
		func(b *store.Budget) auth.Resource { return auth.Resource{Type: "budget", ID: b.ID, OwnerID: b.UserID} },
		"budget.read", errBudgetNotFound)
}

// UpdateBudget changes a budget's period or limit. A budget that was
// warned of may warn again under its new terms.
func (s *Service) UpdateBudget(ctx context.Context, c *auth.Caller, id string, p BudgetPatch) (*store.Budget, error) {
	b, err := s.Budget(ctx, ownOnly(c), id)
	if err != nil {
		return nil, err
	}
	if p.Period != nil {
		if err := checkPeriod(*p.Period); err != nil {
			return nil, err
		}
		b.Period = *p.Period
	}
	if p.LimitUSD != nil {
		if b.LimitMicroUSD, err = limitMicro(*p.LimitUSD); err != nil {
			return nil, err
		}
	}
	b.WarnedFor, b.UpdatedAt = "", s.now()
	if err := s.store.BudgetUpdate(ctx, b); err != nil {
		return nil, err
	}
	s.none.forget(b.UserID)
	return b, nil
}

// DeleteBudget deletes one of the caller's budgets.
func (s *Service) DeleteBudget(ctx context.Context, c *auth.Caller, id string) error {
	b, err := s.Budget(ctx, ownOnly(c), id)
	if err != nil {
		return err
	}
	return s.store.BudgetDelete(ctx, b.ID)
}

// Spent is what was spent in b's current period.
func (s *Service) Spent(ctx context.Context, b *store.Budget) (int64, error) {
	var appID string
	var keyID int64
	switch b.Scope {
	case store.BudgetScopeApp:
		appID = b.ScopeID
	case store.BudgetScopeKey:
		keyID, _ = strconv.ParseInt(b.ScopeID, 10, 64)
	}
	list, err := s.store.BudgetsApplying(ctx, b.UserID, appID, keyID, store.UsageDay(s.now()))
	if err != nil {
		return 0, err
	}
	for _, got := range list {
		if got.ID == b.ID {
			return got.SpentMicroUSD, nil
		}
	}
	return 0, nil
}

// Admit refuses a call for app appID ("": none) made with key keyID (0:
// none) while a budget that applies to it — the user's, the app's, the
// key's — is spent for its current period (BudgetExceeded, 429). It is
// the check of activate and, through Allow, of every LLM call. Budgets
// crossing WarnAt are warned of on the way (see warn).
//
// Spent is read from the daily sums, which every recorded call is in,
// and nothing is reserved: calls already in flight when the budget runs
// out still end and count, so concurrent runs overshoot by at most those
// calls' cost, and no call starts once the overshoot is recorded.
func (s *Service) Admit(ctx context.Context, userID, appID string, keyID int64) error {
	now := s.now()
	scope := scopeKey{userID, appID, keyID}
	none, forgets := s.none.known(scope, now)
	if none {
		return nil
	}
	list, err := s.store.BudgetsApplying(ctx, userID, appID, keyID, store.UsageDay(now))
	if err != nil {
		return err
	}
	if len(list) == 0 {
		s.none.remember(scope, now, forgets)
	}
	var exceeded error
	for i := range list {
		b := &list[i]
		if b.SpentMicroUSD >= b.LimitMicroUSD {
			if exceeded == nil {
				exceeded = BudgetExceeded(b)
			}
		}
		if err := s.warn(ctx, b, now); err != nil {
			return err
		}
	}
	return exceeded
}

// Allow is Admit for a run's next LLM call: executor.Budgets.
func (s *Service) Allow(ctx context.Context, run *executor.Run) error {
	return s.Admit(ctx, run.UserID, run.AppID, run.APIKeyID)
}

// AfterUsage warns of the budgets recs' calls took past WarnAt: the
// ledger hands it each call once it is recorded (after the commit), so
// that the warning comes with the call that crossed the line, not at the
// next check of the same budgets. Scopes no budget applies to are known
// from Admit's memory (unbudgeted.go): most calls cost no query here.
func (s *Service) AfterUsage(ctx context.Context, recs ...*store.UsageRecord) error {
	now := s.now()
	seen := make(map[scopeKey]bool, 1)
	for _, rec := range recs {
		scope := scopeKey{rec.UserID, rec.AppID, rec.APIKeyID}
		if seen[scope] {
			continue
		}
		seen[scope] = true
		none, forgets := s.none.known(scope, now)
		if none {
			continue
		}
		list, err := s.store.BudgetsApplying(ctx, rec.UserID, rec.AppID, rec.APIKeyID, store.UsageDay(now))
		if err != nil {
			return err
		}
		if len(list) == 0 {
			s.none.remember(scope, now, forgets)
		}
		for i := range list {
			if err := s.warn(ctx, &list[i], now); err != nil {
				return err
			}
		}
	}
	return nil
}

// periodOf names b's period holding now: YYYY-MM-DD or YYYY-MM.
func periodOf(period string, now time.Time) string {
	if period == store.BudgetDay {
		return store.UsageDay(now)
	}
	return now.UTC().Format("2006-01")
}

// warn announces budget_warning once per period, when b's spent has
// reached WarnAt of its limit: the budget's warned_for is set to the
// period in the transaction that records the event, by one conditional
// update, so concurrent checks announce it once between them.
func (s *Service) warn(ctx context.Context, b *store.BudgetSpent, now time.Time) error {
	period := periodOf(b.Period, now)
	if s.events == nil || b.WarnedFor == period || float64(b.SpentMicroUSD) < WarnAt*float64(b.LimitMicroUSD) {
		return nil
	}
	return s.store.InTx(ctx, func(tx *store.Store) error {
		first, err := tx.BudgetWarnOnce(ctx, b.ID, period)
		if err != nil || !first {
			return err
		}
		evCtx := map[string]any{"budget_id": b.ID, "scope": b.Scope, "scope_id": b.ScopeID, "period": b.Period,
			"limit_usd": MicroToUSD(b.LimitMicroUSD), "spent_usd": MicroToUSD(b.SpentMicroUSD)}
		if b.Scope == store.BudgetScopeApp {
			evCtx["app_id"] = b.ScopeID // an app's subscribers hear of its budget
		}
		return s.events.Record(ctx, tx, &events.Event{Type: EventBudgetWarning, UserID: b.UserID, Status: "warning",
			Context: evCtx, Timestamp: now})
	})
}
