package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// usageRecs makes n records of userID spread over [start, start+span),
// over a few apps, agents, keys and models; one call in ten has no price.
func usageRecs(rng *rand.Rand, userID string, n int, start time.Time, span time.Duration) []store.UsageRecord {
	recs := make([]store.UsageRecord, n)
	models := []string{"gpt-5-mini", "gpt-5", "claude-sonnet-4-5"}
	for i := range recs {
		app := rng.IntN(3)
		r := store.UsageRecord{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, AppID: fmt.Sprintf("app-%d", app),
			AgentID: fmt.Sprintf("agent-%d-%d", app, rng.IntN(4)), ActivationID: uuid.NewString(), APIKeyID: int64(rng.IntN(4)),
			Provider: "openai", Model: models[rng.IntN(len(models))], InputTokens: int64(rng.IntN(2000)), OutputTokens: int64(rng.IntN(500)),
			CreatedAt: start.Add(time.Duration(rng.Int64N(int64(span)))).Truncate(time.Microsecond)}
		if app == 2 && rng.IntN(3) == 0 {
			r.AppID = "" // a system agent's run
		}
		if rng.IntN(10) > 0 {
			c := int64(rng.IntN(5000))
			r.CostMicroUSD = &c
		}
		recs[i] = r
	}
	return recs
}

// reference sums recs as UsageQuery should, one record at a time.
func reference(recs []store.UsageRecord, f store.UsageFilter) []store.UsageSum {
	sums := map[string]*store.UsageSum{}
	for _, r := range recs {
		if r.UserID != f.UserID || r.CreatedAt.Before(f.From) || !r.CreatedAt.Before(f.To) ||
			(f.AppID != "" && r.AppID != f.AppID) || (f.AgentID != "" && r.AgentID != f.AgentID) || (f.APIKeyID != 0 && r.APIKeyID != f.APIKeyID) {
			continue
		}
		key := map[store.UsageGroup]string{store.UsageByDay: store.UsageDay(r.CreatedAt), store.UsageByApp: r.AppID,
			store.UsageByAgent: r.AgentID, store.UsageByModel: r.Model, store.UsageByKey: strconv.FormatInt(r.APIKeyID, 10)}[f.GroupBy]
		s := sums[key]
		if s == nil {
			s = &store.UsageSum{Key: key}
			sums[key] = s
		}
		s.Calls++
		s.InputTokens += r.InputTokens
		s.OutputTokens += r.OutputTokens
		if r.CostMicroUSD != nil {
			s.CostMicroUSD += *r.CostMicroUSD
		} else {
			s.UnpricedCalls++
		}
	}
	out := []store.UsageSum{}
	for _, s := range sums {
		out = append(out, *s)
	}
	return out
}

func byKey(rows []store.UsageSum) []store.UsageSum {
	slices.SortFunc(rows, func(a, b store.UsageSum) int {
		if a.Key < b.Key {
			return -1
		}
		if a.Key > b.Key {
			return 1
		}
		return 0
	})
	return rows
}

// TestUsageQuery: the sums read from the daily table for whole days and
// from the records at the edges are the records' sums, whatever the
// bounds (within a day, across one midnight, over many days) and filters.
func TestUsageQuery(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "usage@example.com", false)
		other := newUser(t, s, "other@example.com", false)
		rng := rand.New(rand.NewPCG(1, 2))
		start := time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC)
		recs := usageRecs(rng, u.ID, 600, start, 5*24*time.Hour)
		// Through UsageInsert, as the ledger writes them: the daily sums
		// are its (sharded on PostgreSQL).
		for i := range recs {
			require.NoError(t, s.UsageInsert(ctx, &recs[i]))
		}
		require.NoError(t, s.UsageInsert(ctx, &usageRecs(rng, other.ID, 1, start.Add(time.Hour), time.Hour)[0]))

		at := func(day int, h, m int) time.Time {
			return start.Add(time.Duration(day)*24*time.Hour + time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
		}
		spans := [][2]time.Time{
			{start, at(5, 0, 0)},         // whole days only
			{at(0, 3, 17), at(4, 21, 5)}, // both edges partial
			{at(1, 2, 0), at(1, 9, 30)},  // within one day
			{at(1, 20, 0), at(2, 6, 0)},  // across one midnight
			{at(2, 0, 0), at(2, 13, 0)},  // from a midnight to within its day
			{at(2, 7, 0), at(3, 0, 0)},   // to a midnight
			{at(-3, 0, 0), at(9, 0, 0)},  // beyond the records
			{at(3, 0, 0), at(3, 0, 0)},   // empty
		}
		filters := []store.UsageFilter{{}, {AppID: "app-1"}, {AgentID: "agent-0-2"}, {APIKeyID: 3}, {AppID: "app-2", APIKeyID: 1}}
		for _, span := range spans {
			for _, g := range []store.UsageGroup{store.UsageByDay, store.UsageByApp, store.UsageByAgent, store.UsageByModel, store.UsageByKey} {
				for _, f := range filters {
					f.UserID, f.From, f.To, f.GroupBy = u.ID, span[0], span[1], g
					got, err := s.UsageQuery(ctx, f)
					require.NoError(t, err)
					require.Equal(t, byKey(reference(recs, f)), byKey(got), "%v", f)
				}
			}
		}
	})
}

// TestBudgetsStore: CRUD, and the budgets that apply to a call with what
// was spent in their current periods.
func TestBudgetsStore(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "budget@example.com", false)
		now := store.Now()
		mk := func(scope, scopeID, period string, limit int64) *store.Budget {
			b := &store.Budget{ID: uuid.NewString(), UserID: u.ID, Scope: scope, ScopeID: scopeID, Period: period, LimitMicroUSD: limit,
				CreatedAt: now, UpdatedAt: now}
			require.NoError(t, s.BudgetCreate(ctx, b))
			return b
		}
		user := mk(store.BudgetScopeUser, u.ID, store.BudgetMonth, 1000)
		app := mk(store.BudgetScopeApp, "app-1", store.BudgetDay, 100)
		key := mk(store.BudgetScopeKey, "7", store.BudgetDay, 50)
		mk(store.BudgetScopeApp, "app-2", store.BudgetDay, 100)

		cost := func(c int64) *int64 { return &c }
		today := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		for _, r := range []store.UsageRecord{
			{AppID: "app-1", APIKeyID: 7, CostMicroUSD: cost(10), CreatedAt: today},
			{AppID: "app-1", CostMicroUSD: cost(20), CreatedAt: today.Add(-24 * time.Hour)}, // this month, not today
			{AppID: "app-2", APIKeyID: 7, CostMicroUSD: cost(40), CreatedAt: today},
			{AppID: "app-1", CostMicroUSD: cost(80), CreatedAt: today.AddDate(0, -1, 0)}, // last month
			{AppID: "app-1", CreatedAt: today},                                           // unpriced
		} {
			r.ID, r.UserID, r.Provider, r.Model = uuid.NewString(), u.ID, "openai", "m"
			require.NoError(t, s.UsageInsert(ctx, &r))
		}
		got, err := s.BudgetsApplying(ctx, u.ID, "app-1", 7, store.UsageDay(today))
		require.NoError(t, err)
		spent := map[string]int64{}
		for _, b := range got {
			spent[b.ID] = b.SpentMicroUSD
		}
		require.Equal(t, map[string]int64{user.ID: 70, app.ID: 10, key.ID: 50}, spent)
		got, err = s.BudgetsApplying(ctx, u.ID, "", 0, store.UsageDay(today))
		require.NoError(t, err)
		require.Len(t, got, 1, "without an app or a key, the user's budget alone applies")

		list, total, err := s.BudgetListByUser(ctx, u.ID, 2, 1)
		require.NoError(t, err)
		require.Equal(t, 4, total)
		require.Len(t, list, 2)
		app.LimitMicroUSD, app.Period = 5, store.BudgetMonth
		require.NoError(t, s.BudgetUpdate(ctx, app))
		b, err := s.BudgetGet(ctx, app.ID)
		require.NoError(t, err)
		require.Equal(t, int64(5), b.LimitMicroUSD)
		first, err := s.BudgetWarnOnce(ctx, app.ID, "2026-11")
		require.NoError(t, err)
		require.True(t, first)
		first, err = s.BudgetWarnOnce(ctx, app.ID, "2026-11")
		require.NoError(t, err)
		require.False(t, first, "one warning per period")
		require.NoError(t, s.BudgetDelete(ctx, app.ID))
		_, err = s.BudgetGet(ctx, app.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// BenchmarkUsageQuery1M reads reports over a million records of one
// user, spread over two months, on each database; it reports the p99 of
// each kind of query. The bounds cut days in the middle, so the edges are
// read from the records. Run: go test -run '^$' -bench UsageQuery1M
// ./internal/store/ (with AP_TEST_DATABASE_URL for PostgreSQL).
func BenchmarkUsageQuery1M(b *testing.B) {
	for _, d := range testdb.Dialects {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			s := testdb.Open(b, d)
			u, _ := testdb.UserApp(b, s)
			start := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
			rng := rand.New(rand.NewPCG(3, 4))
			began := time.Now()
			total, chunk := 1_000_000, 50_000
			if n, err := strconv.Atoi(os.Getenv("AP_BENCH_USAGE_RECORDS")); err == nil {
				total = n // a quicker run
			}
			bulk := s.NewUsageBulk()
			for n := 0; n < total; n += chunk {
				require.NoError(b, bulk.Add(ctx, usageRecs(rng, u.ID, min(chunk, total-n), start, 61*24*time.Hour)))
			}
			require.NoError(b, bulk.Flush(ctx))
			// The days over folded into one row each, as the hourly job
			// (usage.CompactArgs) keeps them; today's stay sharded.
			_, err := s.UsageCompact(ctx, store.UsageDay(time.Now()))
			require.NoError(b, err)
			require.NoError(b, s.Analyze(ctx))
			b.Logf("%s: %d records inserted in %s", d, total, time.Since(began).Round(time.Second))
			// The daily table agrees with the records.
			all, err := s.UsageQuery(ctx, store.UsageFilter{UserID: u.ID, From: start, To: start.AddDate(0, 3, 0), GroupBy: store.UsageByModel})
			require.NoError(b, err)
			var calls int64
			for _, r := range all {
				calls += r.Calls
			}
			require.EqualValues(b, total, calls)
			cut, err := s.UsageQuery(ctx, store.UsageFilter{UserID: u.ID, From: start.Add(time.Hour), To: start.AddDate(0, 0, 20).Add(-time.Hour), GroupBy: store.UsageByDay})
			require.NoError(b, err)
			require.Len(b, cut, 20)
			from, to := time.Date(2026, 10, 1, 9, 30, 0, 0, time.UTC), time.Date(2026, 10, 31, 17, 45, 0, 0, time.UTC)
			queries := map[string]store.UsageFilter{
				"whole-days-by-agent": {GroupBy: store.UsageByAgent, From: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
					To: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
				"month-by-day":   {GroupBy: store.UsageByDay},
				"month-by-agent": {GroupBy: store.UsageByAgent},
				"month-by-model": {GroupBy: store.UsageByModel},
				"month-by-key":   {GroupBy: store.UsageByKey},
				"one-key":        {GroupBy: store.UsageByDay, APIKeyID: 2},
				"one-app":        {GroupBy: store.UsageByAgent, AppID: "app-1"},
			}
			names := []string{}
			for n := range queries {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, name := range names {
				f := queries[name]
				f.UserID = u.ID
				if f.From.IsZero() {
					f.From, f.To = from, to
				}
				b.Run(name, func(b *testing.B) {
					var took []time.Duration
					for b.Loop() {
						t0 := time.Now()
						_, err := s.UsageQuery(ctx, f)
						took = append(took, time.Since(t0))
						require.NoError(b, err)
					}
					slices.Sort(took)
					p99 := took[min(len(took)-1, len(took)*99/100)]
					b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
					if p99 > 50*time.Millisecond {
						b.Errorf("%s: p99 %s over 50 ms", name, p99)
					}
				})
			}
		})
	}
}
