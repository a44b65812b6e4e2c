package usage_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/usage"
)

type fixture struct {
	s    *store.Store
	svc  *usage.Service
	bus  *events.Bus
	user *store.User
	app  *store.App
	c    *auth.Caller
}

func newFixture(t testing.TB, d store.Dialect) *fixture {
	s := testdb.Open(t, d)
	au, err := auth.New(s, testdb.Logger(), auth.Options{Password: auth.PasswordParams{Memory: 64, Time: 1, Threads: 1}})
	require.NoError(t, err)
	bus := events.New(s, testdb.Logger())
	t.Cleanup(bus.Stop) // its NOTIFY sender lingers a second otherwise
	u, app := testdb.UserApp(t, s)
	return &fixture{s: s, svc: usage.New(s, au, bus), bus: bus, user: u, app: app,
		c: &auth.Caller{UserID: u.ID, Kind: auth.KindSession}}
}

// spend records one call of cost micro-USD now, for the fixture's app
// made with key keyID.
func (f *fixture) spend(t testing.TB, cost int64, keyID int64) {
	require.NoError(t, f.s.UsageInsert(context.Background(), &store.UsageRecord{ID: uuid.NewString(), UserID: f.user.ID, AppID: f.app.ID,
		AgentID: "a", APIKeyID: keyID, Provider: "openai", Model: "gpt-5-mini", InputTokens: 10, OutputTokens: 5, CostMicroUSD: &cost,
		CreatedAt: store.Now()}))
}

func (f *fixture) warnings(t testing.TB) []events.Event {
	require.NoError(t, f.s.EventSettle(context.Background()))
	var got []events.Event
	require.NoError(t, f.bus.Replay(context.Background(), f.user.ID, 0, func(ev events.Event) bool {
		if ev.Type == usage.EventBudgetWarning {
			got = append(got, ev)
		}
		return true
	}))
	return got
}

// TestBudgetRefusesAndWarns: a budget under its limit admits, warns once
// at 80 %, and once spent refuses with a 429 naming it; budgets of
// another app or key do not apply.
func TestBudgetRefusesAndWarns(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		f := newFixture(t, d)
		b, err := f.svc.CreateBudget(ctx, f.c, usage.BudgetInput{Scope: "app", ScopeID: f.app.ID, Period: "day", LimitUSD: 0.001})
		require.NoError(t, err)
		run := &executor.Run{UserID: f.user.ID, AppID: f.app.ID}
		require.NoError(t, f.svc.Allow(ctx, run))
		f.spend(t, 700, 0)
		require.NoError(t, f.svc.Allow(ctx, run))
		require.Empty(t, f.warnings(t), "70 %: no warning")
		f.spend(t, 150, 0)
		require.NoError(t, f.svc.Allow(ctx, run))
		require.NoError(t, f.svc.Admit(ctx, f.user.ID, f.app.ID, 0))
		w := f.warnings(t)
		require.Len(t, w, 1, "85 %: one warning, however often checked")
		require.Equal(t, map[string]any{"budget_id": b.ID, "scope": "app", "scope_id": f.app.ID, "period": "day",
			"limit_usd": 0.001, "spent_usd": 0.00085, "app_id": f.app.ID}, w[0].Context)
		f.spend(t, 150, 0)
		err = f.svc.Allow(ctx, run)
		require.True(t, apperr.Is(err, apperr.BudgetExceeded), "%v", err)
		require.Contains(t, err.Error(), b.ID)
		require.True(t, apperr.Is(f.svc.Admit(ctx, f.user.ID, f.app.ID, 0), apperr.BudgetExceeded))
		require.NoError(t, f.svc.Admit(ctx, f.user.ID, "", 0), "another app's calls are not this budget's")

		// A key's budget: only its calls.
		key := &store.APIKey{UserID: f.user.ID, Name: "k", KeyHash: []byte(uuid.NewString()), KeyPrefix: "ap_x", Scopes: []string{"write:all"}, CreatedAt: store.Now()}
		require.NoError(t, f.s.APIKeyCreate(ctx, key))
		kb, err := f.svc.CreateBudget(ctx, f.c, usage.BudgetInput{Scope: "key", ScopeID: itoa(key.ID), Period: "month", LimitUSD: 0.0001})
		require.NoError(t, err)
		require.NoError(t, f.svc.Admit(ctx, f.user.ID, "", key.ID))
		f.spend(t, 100, key.ID)
		err = f.svc.Admit(ctx, f.user.ID, "", key.ID)
		require.True(t, apperr.Is(err, apperr.BudgetExceeded))
		require.Contains(t, err.Error(), kb.ID)

		// Raising the limit lets calls through again.
		limit := 1.0
		_, err = f.svc.UpdateBudget(ctx, f.c, b.ID, usage.BudgetPatch{LimitUSD: &limit})
		require.NoError(t, err)
		require.NoError(t, f.svc.Allow(ctx, run))
	})
}

// TestBudgetCRUD: validation names the field; scope_id must be the
// caller's own; another user's budget is absent.
func TestBudgetCRUD(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		f := newFixture(t, d)
		otherUser, otherApp := testdb.UserApp(t, f.s)
		other := &auth.Caller{UserID: otherUser.ID, Kind: auth.KindSession}
		field := func(err error) string {
			ae, ok := apperr.As(err)
			require.True(t, ok, "%v", err)
			if ae.Kind == apperr.NotFound {
				return "404"
			}
			require.Equal(t, apperr.Validation, ae.Kind)
			return ae.Field
		}
		for _, tc := range []struct {
			in   usage.BudgetInput
			want string
		}{
			{usage.BudgetInput{Scope: "team", Period: "day", LimitUSD: 1}, "scope"},
			{usage.BudgetInput{Scope: "user", Period: "week", LimitUSD: 1}, "period"},
			{usage.BudgetInput{Scope: "user", Period: "day", LimitUSD: 0}, "limit_usd"},
			{usage.BudgetInput{Scope: "user", Period: "day", LimitUSD: -3}, "limit_usd"},
			{usage.BudgetInput{Scope: "user", Period: "day", LimitUSD: 2e9}, "limit_usd"},
			{usage.BudgetInput{Scope: "app", Period: "day", LimitUSD: 1}, "scope_id"},
			{usage.BudgetInput{Scope: "key", ScopeID: "x", Period: "day", LimitUSD: 1}, "scope_id"},
			{usage.BudgetInput{Scope: "user", ScopeID: otherUser.ID, Period: "day", LimitUSD: 1}, "404"},
			{usage.BudgetInput{Scope: "app", ScopeID: otherApp.ID, Period: "day", LimitUSD: 1}, "404"},
			{usage.BudgetInput{Scope: "app", ScopeID: "not-a-uuid", Period: "day", LimitUSD: 1}, "404"},
			{usage.BudgetInput{Scope: "key", ScopeID: "999999", Period: "day", LimitUSD: 1}, "404"},
		} {
			_, err := f.svc.CreateBudget(ctx, f.c, tc.in)
			require.Equal(t, tc.want, field(err), "%+v", tc.in)
		}
		b, err := f.svc.CreateBudget(ctx, f.c, usage.BudgetInput{Scope: "user", Period: "month", LimitUSD: 12.5})
		require.NoError(t, err)
		require.Equal(t, f.user.ID, b.ScopeID)
		require.Equal(t, int64(12_500_000), b.LimitMicroUSD)
		_, err = f.svc.Budget(ctx, other, b.ID)
		require.Equal(t, "404", field(err))
		limit := 3.0
		_, err = f.svc.UpdateBudget(ctx, other, b.ID, usage.BudgetPatch{LimitUSD: &limit})
		require.Equal(t, "404", field(err))
		require.Equal(t, "404", field(f.svc.DeleteBudget(ctx, other, b.ID)))
		week := "week"
		_, err = f.svc.UpdateBudget(ctx, f.c, b.ID, usage.BudgetPatch{Period: &week})
		require.Equal(t, "period", field(err))
		list, total, err := f.svc.Budgets(ctx, other, 10, 0)
		require.NoError(t, err)
		require.Zero(t, total)
		require.Empty(t, list)
		require.NoError(t, f.svc.DeleteBudget(ctx, f.c, b.ID))
	})
}

// TestBudgetUnderConcurrency: runs that each check before every call and
// record it after, as the runtimes and the ledger do, overshoot a small
// budget by no more than the calls in flight when it ran out.
func TestBudgetUnderConcurrency(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		f := newFixture(t, d)
		const runs, callCost, limitMicro = 8, 1000, 20_000
		_, err := f.svc.CreateBudget(ctx, f.c, usage.BudgetInput{Scope: "user", Period: "day", LimitUSD: float64(limitMicro) / 1e6})
		require.NoError(t, err)
		run := &executor.Run{UserID: f.user.ID, AppID: f.app.ID}
		var wg sync.WaitGroup
		var refused atomic.Int64
		for range runs {
			wg.Go(func() {
				for {
					if err := f.svc.Allow(ctx, run); err != nil {
						require.True(t, apperr.Is(err, apperr.BudgetExceeded), "%v", err)
						refused.Add(1)
						return
					}
					time.Sleep(time.Millisecond) // the provider answers
					f.spend(t, callCost, 0)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, runs, refused.Load(), "every run ends refused")
		rep, err := f.svc.Report(ctx, f.c, usage.Query{From: store.UsageDay(store.Now())})
		require.NoError(t, err)
		spent := rep.Total.CostMicroUSD
		require.GreaterOrEqual(t, spent, int64(limitMicro))
		require.LessOrEqual(t, spent, int64(limitMicro+runs*callCost), "overshoot bounded by the calls in flight")
		t.Logf("%s: spent %d of %d micro-USD with %d runs", d, spent, limitMicro, runs)
	})
}

// BenchmarkAllow is the check before every LLM call: a user with three
// budgets that apply (user, app, key) and a month of daily sums, and a
// user with none.
func BenchmarkAllow(b *testing.B) {
	for _, d := range testdb.Dialects {
		b.Run(string(d)+"/no-budgets", func(b *testing.B) {
			f := newFixture(b, d)
			run := &executor.Run{UserID: f.user.ID, AppID: f.app.ID, APIKeyID: 1}
			for b.Loop() {
				if err := f.svc.Allow(context.Background(), run); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(string(d)+"/three-budgets", func(b *testing.B) {
			ctx := context.Background()
			f := newFixture(b, d)
			key := &store.APIKey{UserID: f.user.ID, Name: "k", KeyHash: []byte(uuid.NewString()), KeyPrefix: "ap_x", Scopes: []string{"write:all"}, CreatedAt: store.Now()}
			require.NoError(b, f.s.APIKeyCreate(ctx, key))
			for _, in := range []usage.BudgetInput{{Scope: "user", Period: "month", LimitUSD: 1000}, {Scope: "app", ScopeID: f.app.ID, Period: "day", LimitUSD: 1000},
				{Scope: "key", ScopeID: itoa(key.ID), Period: "month", LimitUSD: 1000}} {
				_, err := f.svc.CreateBudget(ctx, f.c, in)
				require.NoError(b, err)
			}
			now := store.Now()
			for day := range 30 {
				for agent := range 10 {
					cost := int64(10)
					require.NoError(b, f.s.UsageInsert(ctx, &store.UsageRecord{ID: uuid.NewString(), UserID: f.user.ID, AppID: f.app.ID,
						AgentID: itoa(int64(agent)), APIKeyID: key.ID, Provider: "openai", Model: "m", CostMicroUSD: &cost,
						CreatedAt: now.AddDate(0, 0, -day)}))
				}
			}
			run := &executor.Run{UserID: f.user.ID, AppID: f.app.ID, APIKeyID: key.ID}
			for b.Loop() {
				if err := f.svc.Allow(ctx, run); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestNoBudgetIsRemembered: that no budget applies is remembered, a
// budget made through the service applies at once all the same, and one
// made elsewhere (another node: straight into the store here) within the
// time "none" is believed.
func TestNoBudgetIsRemembered(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		f := newFixture(t, d)
		f.spend(t, 5000, 0)
		require.NoError(t, f.svc.Admit(ctx, f.user.ID, f.app.ID, 0), "no budget")
		_, err := f.svc.CreateBudget(ctx, f.c, usage.BudgetInput{Scope: "app", ScopeID: f.app.ID, Period: "day", LimitUSD: 0.001})
		require.NoError(t, err)
		require.ErrorContains(t, f.svc.Admit(ctx, f.user.ID, f.app.ID, 0), "exceeded", "made here: applies at once")

		other := newFixture(t, d)
		other.spend(t, 5000, 0)
		require.NoError(t, other.svc.Admit(ctx, other.user.ID, other.app.ID, 0))
		now := store.Now()
		require.NoError(t, other.s.BudgetCreate(ctx, &store.Budget{ID: uuid.NewString(), UserID: other.user.ID, Scope: "user",
			ScopeID: other.user.ID, Period: "month", LimitMicroUSD: 1000, CreatedAt: now, UpdatedAt: now}))
		require.Eventually(t, func() bool { return other.svc.Admit(ctx, other.user.ID, other.app.ID, 0) != nil },
			5*time.Second, 50*time.Millisecond, "made elsewhere: applies within seconds")
	})
}

// TestAfterUsageWarns: a recorded call that takes a budget past 80 % is
// warned of as it is handed over, once; where no budget was found to
// apply lately, handing a call over asks the database nothing.
func TestAfterUsageWarns(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		f := newFixture(t, d)
		b, err := f.svc.CreateBudget(ctx, f.c, usage.BudgetInput{Scope: "app", ScopeID: f.app.ID, Period: "day", LimitUSD: 0.001})
		require.NoError(t, err)
		rec := &store.UsageRecord{UserID: f.user.ID, AppID: f.app.ID}
		f.spend(t, 700, 0)
		require.NoError(t, f.svc.AfterUsage(ctx, rec))
		require.Empty(t, f.warnings(t), "70 %: no warning")
		f.spend(t, 150, 0)
		require.NoError(t, f.svc.AfterUsage(ctx, rec, rec))
		require.NoError(t, f.svc.AfterUsage(ctx, rec))
		w := f.warnings(t)
		require.Len(t, w, 1, "85 %: one warning")
		require.Equal(t, b.ID, w[0].Context["budget_id"])

		// No budget applied when last checked: none is looked for, so one
		// made elsewhere (straight into the store) is not seen yet.
		other := newFixture(t, d)
		require.NoError(t, other.svc.Admit(ctx, other.user.ID, other.app.ID, 0))
		now := store.Now()
		require.NoError(t, other.s.BudgetCreate(ctx, &store.Budget{ID: uuid.NewString(), UserID: other.user.ID, Scope: "user",
			ScopeID: other.user.ID, Period: "day", LimitMicroUSD: 1000, CreatedAt: now, UpdatedAt: now}))
		other.spend(t, 900, 0)
		require.NoError(t, other.svc.AfterUsage(ctx, &store.UsageRecord{UserID: other.user.ID, AppID: other.app.ID}))
		require.Empty(t, other.warnings(t), "no budget remembered: not asked")
	})
}

// TestReportFilterOfADeletedApp: an app deleted since its calls is still
// reported on (what was spent stays spent); an app that never spent and
// does not exist is a 404, as another user's is.
func TestReportFilterOfADeletedApp(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		f := newFixture(t, d)
		f.spend(t, 300, 0)
		require.NoError(t, f.s.AppDelete(ctx, f.app.ID))
		rep, err := f.svc.Report(ctx, f.c, usage.Query{AppID: f.app.ID})
		require.NoError(t, err)
		require.EqualValues(t, 1, rep.Total.Calls)
		_, err = f.svc.Report(ctx, f.c, usage.Query{AppID: uuid.NewString()})
		require.True(t, apperr.Is(err, apperr.NotFound), "%v", err)
		_, err = f.svc.Report(ctx, f.c, usage.Query{AgentID: "not-an-id"})
		require.True(t, apperr.Is(err, apperr.NotFound), "%v", err)
	})
}
