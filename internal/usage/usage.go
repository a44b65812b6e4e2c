// Package usage is the reading side of the usage ledger and the budgets
// over it (DESIGN §4 "Usage, cost and budgets"): reports of a user's LLM
// calls by day, app, agent, model or API key; budgets per user, app or
// key and per UTC day or month, checked when an agent is activated and
// before every LLM call of a run; and the budget_warning event at 80 %.
// The ledger's rows are written where the calls are answered
// (store.UsageInsert); this package only reads them.
package usage

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/store"
)

// EventRecorder records events in a transaction: events.Bus.
type EventRecorder interface {
	Record(ctx context.Context, tx *store.Store, evs ...*events.Event) error
}

// Service reads usage and keeps budgets.
type Service struct {
	store  *store.Store
	auth   *auth.Service
	events EventRecorder
	now    func() time.Time
	// none remembers the scopes no budget applies to (unbudgeted.go).
	none unbudgeted
}

// New returns the service; ev may be nil (no budget_warning events).
func New(st *store.Store, au *auth.Service, ev EventRecorder) *Service {
	return &Service{store: st, auth: au, events: ev, now: store.Now}
}

// Query is a report's request, as GET /api/v1/usage takes it.
type Query struct {
	From, To string // RFC 3339 times or YYYY-MM-DD dates; "": this month so far
	AppID    string
	AgentID  string
	APIKeyID int64
	GroupBy  string // day, app, agent, model or key; "": day
	// UserID is whose usage: "" the caller's; another user's for an admin
	// with a reason (audited).
	UserID string
}

// Row is one line of a report. CostMicroUSD sums the priced calls and
// Priced says whether any call was priced: a row of unpriced calls only
// has no cost (null), never a fake 0.
type Row struct {
	Key                       string
	Calls                     int64
	InputTokens, OutputTokens int64
	CostMicroUSD              int64
	UnpricedCalls             int64
}

// Priced reports whether the row has a cost: some of its calls were priced.
func (r *Row) Priced() bool { return r.UnpricedCalls < r.Calls }

// Report is a report's rows and their total.
type Report struct {
	Rows  []Row
	Total Row
	From  time.Time
	To    time.Time
}

var (
	errUserNotFound  = apperr.NotFoundf("User not found")
	errAgentNotFound = apperr.NotFoundf("Agent not found")
	groups           = map[string]store.UsageGroup{"day": store.UsageByDay, "app": store.UsageByApp, "agent": store.UsageByAgent,
		"model": store.UsageByModel, "key": store.UsageByKey}
)

// Report sums the usage q asks for. It is the caller's usage; a key bound
// to an app sees that app's only (another app is absent); an admin with an
// X-Admin-Reason may name another user (the access is audited).
func (s *Service) Report(ctx context.Context, c *auth.Caller, q Query) (*Report, error) {
	now := s.now()
	from, err := parseTime("from", q.From, false)
	if err != nil {
		return nil, err
	}
	to, err := parseTime("to", q.To, true)
	if err != nil {
		return nil, err
	}
	if q.From == "" {
		from = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	if q.To == "" {
		to = now.Add(time.Microsecond) // what was recorded up to now
	}
	if !from.Before(to) {
		return nil, apperr.Invalid("to", "Invalid value for field to: must be after from")
	}
	group, ok := groups[cmp.Or(q.GroupBy, "day")]
	if !ok {
		return nil, apperr.Invalid("group_by", "Invalid value for field group_by: expected day, app, agent, model or key")
	}
	userID := c.UserID
	if q.UserID != "" && q.UserID != c.UserID {
		if uuid.Validate(q.UserID) != nil {
			return nil, errUserNotFound
		}
		if err := s.auth.Reach(ctx, c, auth.Resource{Type: "usage", ID: q.UserID, OwnerID: q.UserID}, "usage.read", errUserNotFound); err != nil {
			return nil, err
		}
		userID = q.UserID
	}
	if err := auth.AllowApp(c, q.AppID); err != nil {
		return nil, err
	}
	if err := s.filterOf(ctx, c, userID, q.AppID, q.AgentID); err != nil {
		return nil, err
	}
	appID := cmp.Or(c.AppID, q.AppID)
	sums, err := s.store.UsageQuery(ctx, store.UsageFilter{UserID: userID, From: from, To: to, AppID: appID, AgentID: q.AgentID,
		APIKeyID: q.APIKeyID, GroupBy: group})
	if err != nil {
		return nil, err
	}
	rep := &Report{Rows: make([]Row, len(sums)), From: from, To: to}
	for i, r := range sums {
		rep.Rows[i] = Row(r)
		t := &rep.Total
		t.Calls += r.Calls
		t.InputTokens += r.InputTokens
		t.OutputTokens += r.OutputTokens
		t.CostMicroUSD += r.CostMicroUSD
		t.UnpricedCalls += r.UnpricedCalls
	}
	// Days in order; anything else by cost, the dearest first.
	slices.SortFunc(rep.Rows, func(a, b Row) int {
		if group == store.UsageByDay {
			return strings.Compare(a.Key, b.Key)
		}
		return cmp.Or(cmp.Compare(b.CostMicroUSD, a.CostMicroUSD), cmp.Compare(b.Calls, a.Calls), strings.Compare(a.Key, b.Key))
	})
	return rep, nil
}

// parseTime reads a report's bound: an RFC 3339 time, or a UTC date —
// its start for from, and for to its end (a date to includes its day).
func parseTime(field, v string, end bool) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		if end {
			t = t.Add(24 * time.Hour)
		}
		return t, nil
	}
	return time.Time{}, apperr.Invalid(field, "Invalid value for field "+field+": expected an RFC 3339 time or a date (YYYY-MM-DD)")
}

// MicroToUSD is a cost in micro-USD as USD.
func MicroToUSD(micro int64) float64 { return float64(micro) / 1e6 }

// USDToMicro is an amount of USD in micro-USD, rounded.
func USDToMicro(usd float64) int64 {
	return int64(usd*1e6 + 0.5)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// filterOf checks a report's app and agent filters as the lists' filters
// are checked: another user's app or agent, one that does not exist and a
// malformed id are a 404, not an empty report that hides the mistake. An
// app or agent deleted since is still the user's to ask about while the
// ledger holds its calls: what was spent stays spent.
func (s *Service) filterOf(ctx context.Context, c *auth.Caller, userID, appID, agentID string) error {
	if appID != "" {
		app, err := s.store.AppGet(ctx, appID)
		switch {
		case uuid.Validate(appID) != nil:
			return errAppNotFound
		case err == nil && app.UserID != userID:
			return errAppNotFound
		case errors.Is(err, store.ErrNotFound):
			if spent, err := s.store.UsageHas(ctx, userID, appID, ""); err != nil || !spent {
				return cmp.Or[error](err, errAppNotFound)
			}
		case err != nil:
			return err
		}
	}
	if agentID != "" {
		if uuid.Validate(agentID) != nil {
			return errAgentNotFound
		}
		a, err := s.store.AgentGet(ctx, agentID)
		switch {
		case err == nil && !a.IsSystem && (a.UserID != userID || !c.SeesApp(a.AppID)):
			return errAgentNotFound
		case errors.Is(err, store.ErrNotFound):
			if spent, err := s.store.UsageHas(ctx, userID, "", agentID); err != nil || !spent {
				return cmp.Or[error](err, errAgentNotFound)
			}
		case err != nil:
			return err
		}
	}
	return nil
}
