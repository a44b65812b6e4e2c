package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func TestUsageInsert(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		act := newRunningActivation(t, s, "w1")
		day := time.Date(2026, 11, 27, 23, 59, 0, 0, time.UTC)
		rec := func(step *int, cost *int64, at time.Time) *store.UsageRecord {
			return &store.UsageRecord{ID: uuid.NewString(), UserID: act.UserID, AppID: act.AppID, AgentID: act.AgentID,
				ActivationID: act.ID, StepIndex: step, APIKeyID: 7, Provider: "openai", Model: "gpt-5-mini",
				InputTokens: 100, OutputTokens: 20, CacheReadTokens: 40, CostMicroUSD: cost, CreatedAt: at}
		}
		zero, one, price := 0, 1, int64(55)
		require.NoError(t, s.InTx(ctx, func(tx *store.Store) error {
			return tx.UsageInsert(ctx, rec(&zero, &price, day), rec(&one, nil, day))
		}))
		require.NoError(t, s.UsageInsert(ctx, rec(nil, &price, day), rec(nil, &price, day.Add(time.Minute))))
		err := s.InTx(ctx, func(tx *store.Store) error { return tx.UsageInsert(ctx, rec(&zero, &price, day)) })
		require.ErrorIs(t, err, store.ErrConflict, "a step's usage is in the ledger once")

		sums, rows, err := s.UsageDailyTotals(ctx, act.UserID, "2026-11-27")
		require.NoError(t, err)
		require.Equal(t, [5]int64{3, 300, 60, 110, 1}, sums, "calls, input, output, cost, unpriced of the day")
		require.GreaterOrEqual(t, rows, 1)
		sums, _, err = s.UsageDailyTotals(ctx, act.UserID, "2026-11-28")
		require.NoError(t, err)
		require.Equal(t, [5]int64{1, 100, 20, 55, 0}, sums, "a call after midnight UTC counts for the next day")
		// The key an activation was made with is kept with it.
		keyed := &store.Activation{ID: uuid.NewString(), UserID: act.UserID, AppID: act.AppID, AgentID: act.AgentID,
			Status: store.StatusQueued, CreatedAt: store.Now(), APIKeyID: 7}
		require.NoError(t, s.ActivationCreate(ctx, keyed))
		got, err := s.ActivationGet(ctx, keyed.ID)
		require.NoError(t, err)
		require.EqualValues(t, 7, got.APIKeyID)
		got, err = s.ActivationGet(ctx, act.ID)
		require.NoError(t, err)
		require.Zero(t, got.APIKeyID)

		require.Equal(t, "2026-11-27", store.UsageDay(time.Date(2026, 11, 28, 0, 30, 0, 0, time.FixedZone("x", 3600))), "days are UTC days")
	})
}

// EventAppendWithUsage stores a run's end event and its one usage record
// together (one statement on PostgreSQL): the ledger, the day's sums and
// the event; a usage record already in the ledger fails the whole.
func TestEventAppendWithUsage(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		act := newRunningActivation(t, s, "w1")
		day := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		rec := &store.UsageRecord{ID: uuid.NewString(), UserID: act.UserID, AppID: act.AppID, AgentID: act.AgentID,
			ActivationID: act.ID, Provider: "openai", Model: "gpt-5-mini", InputTokens: 100, OutputTokens: 20, CreatedAt: day}
		ended := func() *store.EventRow {
			return &store.EventRow{UserID: act.UserID, Type: "activation.completed", ActivationID: act.ID, Payload: []byte(`{}`), CreatedAt: store.Now()}
		}
		row := ended()
		require.NoError(t, s.InTx(ctx, func(tx *store.Store) error { return tx.EventAppendWithUsage(ctx, []*store.EventRow{row}, rec) }))
		require.NotZero(t, row.Seq)
		sums, _, err := s.UsageDailyTotals(ctx, act.UserID, "2026-11-27")
		require.NoError(t, err)
		require.Equal(t, [5]int64{1, 100, 20, 0, 1}, sums)

		again := ended()
		err = s.InTx(ctx, func(tx *store.Store) error { return tx.EventAppendWithUsage(ctx, []*store.EventRow{again}, rec) })
		require.ErrorIs(t, err, store.ErrConflict)
		sums, _, err = s.UsageDailyTotals(ctx, act.UserID, "2026-11-27")
		require.NoError(t, err)
		require.Equal(t, [5]int64{1, 100, 20, 0, 1}, sums, "nothing of the failed one")
		requireOnlyEvent(t, s, act.UserID, row.Seq)
	})
}

// requireOnlyEvent waits until the user's events, once final, are the one
// of seq alone.
func requireOnlyEvent(t *testing.T, s *store.Store, userID string, seq int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		evs, err := s.EventListAfter(context.Background(), userID, 0, 10)
		require.NoError(t, err)
		return len(evs) == 1 && evs[0].Seq == seq
	}, 10*time.Second, 5*time.Millisecond, "the first end's event only")
}

// TestUsageCompact: the shards of days over fold into one row each, with
// the same sums; today's stay as they are, and folding again changes
// nothing.
func TestUsageCompact(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		act := newRunningActivation(t, s, "w1")
		yesterday := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		today := yesterday.Add(24 * time.Hour)
		price := int64(5)
		var recs []*store.UsageRecord
		for i := range 200 {
			at := yesterday
			if i%2 == 1 {
				at = today
			}
			recs = append(recs, &store.UsageRecord{ID: uuid.NewString(), UserID: act.UserID, AppID: act.AppID, AgentID: act.AgentID,
				Provider: "openai", Model: "gpt-5-mini", InputTokens: 10, OutputTokens: 2, CostMicroUSD: &price, CreatedAt: at})
		}
		require.NoError(t, s.UsageInsert(ctx, recs...))
		before, shards, err := s.UsageDailyTotals(ctx, act.UserID, "2026-11-26")
		require.NoError(t, err)
		todayBefore, todayShards, err := s.UsageDailyTotals(ctx, act.UserID, "2026-11-27")
		require.NoError(t, err)
		if d == store.Postgres {
			require.Greater(t, shards, 1, "100 calls spread over shards on PostgreSQL")
		}

		for range 2 {
			_, err = s.UsageCompact(ctx, "2026-11-27")
			require.NoError(t, err)
			after, rows, err := s.UsageDailyTotals(ctx, act.UserID, "2026-11-26")
			require.NoError(t, err)
			require.Equal(t, before, after, "the same sums")
			require.Equal(t, 1, rows, "in one row")
			todayAfter, todayRows, err := s.UsageDailyTotals(ctx, act.UserID, "2026-11-27")
			require.NoError(t, err)
			require.Equal(t, todayBefore, todayAfter)
			require.Equal(t, todayShards, todayRows, "today is not folded")
		}
		require.Equal(t, [5]int64{100, 1000, 200, 500, 0}, before)
	})
}

// TestActivationFinishRecorded: a running activation's end, its event and
// its usage are stored together (one statement on PostgreSQL), the event
// given its seq; an activation no longer running (a cancel won) stores
// none of them, and one whose usage conflicts stores none either.
func TestActivationFinishRecorded(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		day := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
		usage := func(act *store.Activation) *store.UsageRecord {
			return &store.UsageRecord{ID: uuid.NewString(), UserID: act.UserID, AppID: act.AppID, AgentID: act.AgentID,
				ActivationID: act.ID, Provider: "openai", Model: "gpt-5-mini", InputTokens: 100, OutputTokens: 20, CreatedAt: day}
		}
		ended := func(act *store.Activation) []*store.EventRow {
			return []*store.EventRow{{UserID: act.UserID, Type: "activation.completed", ActivationID: act.ID, Payload: []byte(`{}`), CreatedAt: store.Now()}}
		}
		done := store.Outcome{Status: store.StatusCompleted, OutputData: []byte(`{"response":"ok"}`), CompletedAt: store.Now()}

		act := newRunningActivation(t, s, "w1")
		rec, rows := usage(act), ended(act)
		a, ok, err := s.ActivationFinishRecorded(ctx, act.ID, done, rows, rec)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, store.StatusCompleted, a.Status)
		require.JSONEq(t, `{"response":"ok"}`, string(a.OutputData))
		require.NotNil(t, a.DurationMS)
		require.NotZero(t, rows[0].Seq)
		got, err := s.ActivationGet(ctx, act.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, got.Status)
		sums, _, err := s.UsageDailyTotals(ctx, act.UserID, "2026-11-28")
		require.NoError(t, err)
		require.Equal(t, [5]int64{1, 100, 20, 0, 1}, sums)

		// Ended already: nothing more is stored.
		again := ended(act)
		a, ok, err = s.ActivationFinishRecorded(ctx, act.ID, done, again, usage(act))
		require.NoError(t, err)
		require.False(t, ok)
		require.Nil(t, a)
		require.Zero(t, again[0].Seq)

		// A usage record stored already fails the whole end.
		other := newRunningActivation(t, s, "w1")
		dup := usage(other)
		dup.ID = rec.ID
		_, _, err = s.ActivationFinishRecorded(ctx, other.ID, done, ended(other), dup)
		require.ErrorIs(t, err, store.ErrConflict)
		got, err = s.ActivationGet(ctx, other.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusRunning, got.Status)

		sums, _, err = s.UsageDailyTotals(ctx, act.UserID, "2026-11-28")
		require.NoError(t, err)
		require.Equal(t, [5]int64{1, 100, 20, 0, 1}, sums, "once")
		requireOnlyEvent(t, s, act.UserID, rows[0].Seq)
	})
}
