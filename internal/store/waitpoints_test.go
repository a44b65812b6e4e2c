package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// newWaitpoint stores an unanswered approval waitpoint of act at step 2.
func newWaitpoint(t *testing.T, s *store.Store, act *store.Activation, created time.Time) *store.Waitpoint {
	t.Helper()
	w := &store.Waitpoint{ID: uuid.NewString(), ActivationID: act.ID, UserID: act.UserID, Kind: store.WaitApproval,
		ToolCalls: json.RawMessage(`[{"tool_call_id":"c1","name":"pay","arguments":{"amount":3}}]`), StepIndex: 2,
		ExpiresAt: created.Add(24 * time.Hour), CreatedAt: created}
	require.NoError(t, s.WaitpointCreate(context.Background(), w))
	return w
}

func TestWaitpoints(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		act := newRunningActivation(t, s, "w1")
		now := store.Now()
		w := newWaitpoint(t, s, act, now)
		later := newWaitpoint(t, s, act, now.Add(time.Second))
		require.ErrorIs(t, s.WaitpointCreate(ctx, w), store.ErrConflict)

		got, err := s.WaitpointGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, act.ID, got.ActivationID)
		require.Equal(t, act.UserID, got.UserID)
		require.Equal(t, store.WaitApproval, got.Kind)
		require.JSONEq(t, string(w.ToolCalls), string(got.ToolCalls))
		require.Equal(t, 2, got.StepIndex)
		require.True(t, got.ExpiresAt.Equal(w.ExpiresAt))
		require.True(t, got.CreatedAt.Equal(now))
		require.Nil(t, got.AnsweredAt)
		require.Nil(t, got.Answer)

		for _, id := range []string{uuid.NewString(), "not-a-uuid", "", "urn:uuid:" + w.ID} {
			_, err = s.WaitpointGet(ctx, id)
			require.ErrorIs(t, err, store.ErrNotFound, "id %q", id)
			_, _, err = s.WaitpointAnswer(ctx, id, json.RawMessage(`{}`), now)
			require.ErrorIs(t, err, store.ErrNotFound, "id %q", id)
		}

		answerAt := now.Add(time.Minute)
		answered, ok, err := s.WaitpointAnswer(ctx, w.ID, json.RawMessage(`{"decisions":[{"tool_call_id":"c1","type":"approve"}]}`), answerAt)
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, answered.AnsweredAt.Equal(answerAt))
		require.JSONEq(t, `{"decisions":[{"tool_call_id":"c1","type":"approve"}]}`, string(answered.Answer))
		again, ok, err := s.WaitpointAnswer(ctx, w.ID, json.RawMessage(`{"decisions":[{"tool_call_id":"c1","type":"reject"}]}`), answerAt.Add(time.Second))
		require.NoError(t, err)
		require.False(t, ok, "a waitpoint is answered once")
		require.True(t, again.AnsweredAt.Equal(answerAt), "the first answer is kept")
		require.JSONEq(t, string(answered.Answer), string(again.Answer))

		list, err := s.WaitpointsOf(ctx, act.ID)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, []string{w.ID, later.ID}, []string{list[0].ID, list[1].ID}, "oldest first")
		require.NotNil(t, list[0].AnsweredAt)
		require.Nil(t, list[1].AnsweredAt)
	})
}

// An activation's steps and waitpoints go with it, whichever way it goes:
// with its app, its agent or its user.
func TestStepsAndWaitpointsGoWithTheirActivation(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		journal := func(act *store.Activation) {
			t.Helper()
			require.NoError(t, s.StepsInsert(ctx, &store.Step{ActivationID: act.ID, Index: 0, Kind: store.StepWait,
				Status: store.StepWaiting, StartedAt: store.Now()}))
			newWaitpoint(t, s, act, store.Now())
		}
		left := func(act *store.Activation) (steps, waitpoints int) {
			t.Helper()
			all, err := s.StepsAll(ctx, act.ID)
			require.NoError(t, err)
			wps, err := s.WaitpointsOf(ctx, act.ID)
			require.NoError(t, err)
			return len(all), len(wps)
		}
		byApp, byAgent, byUser := newRunningActivation(t, s, "w"), newRunningActivation(t, s, "w"), newRunningActivation(t, s, "w")
		for _, act := range []*store.Activation{byApp, byAgent, byUser} {
			journal(act)
		}

		require.NoError(t, s.AppDelete(ctx, byApp.AppID))
		require.NoError(t, s.AgentDelete(ctx, byAgent.AgentID))
		require.NoError(t, s.ExecOnWriter(ctx, fmt.Sprintf(`DELETE FROM users WHERE id = '%s'`, byUser.UserID)))
		for _, act := range []*store.Activation{byApp, byAgent, byUser} {
			steps, wps := left(act)
			require.Zero(t, steps)
			require.Zero(t, wps)
			_, err := s.ActivationGet(ctx, act.ID)
			require.ErrorIs(t, err, store.ErrNotFound)
		}
	})
}
