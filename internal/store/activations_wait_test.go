package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// A run that waits holds no worker; its answer resumes it, and one worker
// takes it over.
func TestActivationWaitResumeTakeOver(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		act := newRunningActivation(t, s, "w1")
		waiting := json.RawMessage(`{"waitpoint_id":"x","kind":"approval","tool_calls":[],"expires_at":"2030-01-01T00:00:00Z"}`)
		get := func() *store.Activation {
			a, err := s.ActivationGet(ctx, act.ID)
			require.NoError(t, err)
			return a
		}

		ok, err := s.ActivationResume(ctx, act.ID)
		require.NoError(t, err)
		require.False(t, ok, "it does not wait")
		_, ok, err = s.ActivationTakeOver(ctx, act.ID, "w2")
		require.NoError(t, err)
		require.False(t, ok, "w1 holds it")
		ok, err = s.ActivationWait(ctx, act.ID, "w2", waiting)
		require.NoError(t, err)
		require.False(t, ok, "w2 does not run it")

		ok, err = s.ActivationWait(ctx, act.ID, "w1", waiting)
		require.NoError(t, err)
		require.True(t, ok)
		a := get()
		require.Equal(t, store.StatusRunning, a.Status)
		require.Empty(t, a.WorkerID, "a waiting run holds no worker")
		require.JSONEq(t, string(waiting), string(a.Waiting))
		ids, err := s.ActivationsRunningOn(ctx, "w1")
		require.NoError(t, err)
		require.Empty(t, ids, "the reaper of w1 does not find it")
		ok, err = s.ActivationRequeue(ctx, act.ID)
		require.NoError(t, err)
		require.False(t, ok, "a waiting run is not handed back to the queue")

		ok, err = s.ActivationWait(ctx, act.ID, "w1", waiting)
		require.NoError(t, err)
		require.False(t, ok, "it waits already")
		_, ok, err = s.ActivationTakeOver(ctx, act.ID, "w2")
		require.NoError(t, err)
		require.False(t, ok, "it waits")

		ok, err = s.ActivationResume(ctx, act.ID)
		require.NoError(t, err)
		require.True(t, ok)
		a = get()
		require.Equal(t, store.StatusRunning, a.Status)
		require.Nil(t, a.Waiting)
		require.Empty(t, a.WorkerID, "no worker until one takes it over")
		ok, err = s.ActivationResume(ctx, act.ID)
		require.NoError(t, err)
		require.False(t, ok, "resumed once")

		taken, ok, err := s.ActivationTakeOver(ctx, act.ID, "w2")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "w2", taken.WorkerID)
		require.Equal(t, 1, taken.Attempt, "a take-over is no new attempt")
		require.True(t, act.StartedAt.Equal(*taken.StartedAt), "nor a new start")
		require.Equal(t, "w2", get().WorkerID)
		_, ok, err = s.ActivationTakeOver(ctx, act.ID, "w3")
		require.NoError(t, err)
		require.False(t, ok, "w2 took it")

		// It waits again and ends while waiting: nothing takes it over.
		ok, err = s.ActivationWait(ctx, act.ID, "w2", waiting)
		require.NoError(t, err)
		require.True(t, ok)
		ended, ok, err := s.ActivationFinish(ctx, act.ID, store.Outcome{Status: store.StatusFailed, Error: "No result in time for t", CompletedAt: store.Now()})
		require.NoError(t, err)
		require.True(t, ok)
		require.Nil(t, ended.Waiting, "an ended run waits for nothing")
		require.Nil(t, get().Waiting)
		ok, err = s.ActivationResume(ctx, act.ID)
		require.NoError(t, err)
		require.False(t, ok)
		_, ok, err = s.ActivationTakeOver(ctx, act.ID, "w3")
		require.NoError(t, err)
		require.False(t, ok, "it ended")
		ok, err = s.ActivationWait(ctx, act.ID, "w2", waiting)
		require.NoError(t, err)
		require.False(t, ok, "it ended")

		// A cancel ends a waiting run too.
		other := newActivationOf(t, s, &store.Agent{ID: act.AgentID, AppID: act.AppID, UserID: act.UserID}, "w1")
		ok, err = s.ActivationWait(ctx, other.ID, "w1", waiting)
		require.NoError(t, err)
		require.True(t, ok)
		cancelled, ok, err := s.ActivationCancel(ctx, other.ID, "Cancelled by user", store.Now())
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, store.StatusFailed, cancelled.Status)
		require.Nil(t, cancelled.Waiting)
		got, err := s.ActivationGet(ctx, other.ID)
		require.NoError(t, err)
		require.Nil(t, got.Waiting)
	})
}

// status=waiting lists the running activations that wait; running lists
// them all.
func TestActivationListWaiting(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		first := newRunningActivation(t, s, "w1")
		agent := &store.Agent{ID: first.AgentID, AppID: first.AppID, UserID: first.UserID}
		waits := newActivationOf(t, s, agent, "w1")
		ok, err := s.ActivationWait(ctx, waits.ID, "w1", json.RawMessage(`{"kind":"tool_result"}`))
		require.NoError(t, err)
		require.True(t, ok)
		done := newActivationOf(t, s, agent, "w1")
		_, ok, err = s.ActivationFinish(ctx, done.ID, store.Outcome{Status: store.StatusCompleted, CompletedAt: store.Now()})
		require.NoError(t, err)
		require.True(t, ok)

		ids := func(statuses ...string) []string {
			list, total, err := s.ActivationList(ctx, store.ActivationFilter{UserID: first.UserID, Statuses: statuses, Limit: 10})
			require.NoError(t, err)
			require.Len(t, list, total)
			out := []string{}
			for _, a := range list {
				out = append(out, a.ID)
			}
			return out
		}
		require.Equal(t, []string{waits.ID}, ids(store.StatusWaiting))
		require.ElementsMatch(t, []string{first.ID, waits.ID}, ids(store.StatusRunning))
		require.ElementsMatch(t, []string{first.ID, waits.ID}, ids(store.StatusRunning, store.StatusWaiting))
		require.ElementsMatch(t, []string{waits.ID, done.ID}, ids(store.StatusWaiting, store.StatusCompleted))
		require.ElementsMatch(t, []string{first.ID, waits.ID, done.ID}, ids())
		list, _, err := s.ActivationList(ctx, store.ActivationFilter{UserID: first.UserID, Statuses: []string{store.StatusWaiting}, Limit: 10})
		require.NoError(t, err)
		require.JSONEq(t, `{"kind":"tool_result"}`, string(list[0].Waiting))
	})
}
