package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// newRunningActivation creates a user, an app, an agent and an activation of
// theirs that workerID runs.
func newRunningActivation(t *testing.T, s *store.Store, workerID string) *store.Activation {
	t.Helper()
	u := newUser(t, s, uuid.NewString()+"@x.io", false)
	agent := newAgent(t, s, newApp(t, s, u.ID, "a"), "g", "")
	return newActivationOf(t, s, agent, workerID)
}

// newActivationOf creates an activation of agent that workerID runs.
func newActivationOf(t *testing.T, s *store.Store, agent *store.Agent, workerID string) *store.Activation {
	t.Helper()
	now := store.Now()
	a := &store.Activation{ID: uuid.NewString(), UserID: agent.UserID, AppID: agent.AppID, AgentID: agent.ID, Status: store.StatusRunning,
		Priority: 2, CreatedAt: now, StartedAt: &now, WorkerID: workerID, Attempt: 1}
	require.NoError(t, s.ActivationCreate(context.Background(), a))
	return a
}

func TestStepsJournal(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		act := newRunningActivation(t, s, "w1")
		t0 := store.Now()
		ended, boom := t0.Add(time.Second), "boom"
		llm := &store.Step{ActivationID: act.ID, Index: 0, Kind: store.StepLLM, Input: json.RawMessage(`{"messages":[]}`),
			Output: json.RawMessage(`{"tool_calls":[{"id":"c1"}]}`), Status: store.StepCompleted, Usage: json.RawMessage(`{"input_tokens":3}`),
			StartedAt: t0, EndedAt: &ended}
		tool := &store.Step{ActivationID: act.ID, Index: 1, Kind: store.StepTool, Name: "lookup", ToolCallID: "c1",
			Input: json.RawMessage(`{"q":"x"}`), Error: &boom, Status: store.StepFailed, StartedAt: t0, EndedAt: &ended}
		wait := &store.Step{ActivationID: act.ID, Index: 2, Kind: store.StepWait, Status: store.StepWaiting, StartedAt: t0.Add(time.Millisecond)}
		require.NoError(t, s.StepsInsert(ctx, llm, tool, wait))
		require.NoError(t, s.StepsInsert(ctx), "no steps, nothing to do")

		all, err := s.StepsAll(ctx, act.ID)
		require.NoError(t, err)
		require.Len(t, all, 3)
		for i, want := range []*store.Step{llm, tool, wait} {
			requireStep(t, want, &all[i])
		}
		require.Nil(t, all[2].Input, "a NULL stays nil")
		require.Nil(t, all[2].Output)
		require.Nil(t, all[2].Usage)
		require.Nil(t, all[2].Error)
		require.Nil(t, all[2].EndedAt)

		dup := &store.Step{ActivationID: act.ID, Index: 3, Kind: store.StepLLM, Status: store.StepRunning, StartedAt: t0}
		again := &store.Step{ActivationID: act.ID, Index: 1, Kind: store.StepTool, Status: store.StepRunning, StartedAt: t0}
		require.ErrorIs(t, s.StepsInsert(ctx, dup, again), store.ErrConflict)
		all, err = s.StepsAll(ctx, act.ID)
		require.NoError(t, err)
		require.Len(t, all, 3, "a refused insert stores none of its steps")

		// A waiting step runs again, then ends once.
		ok, err := s.StepSetStatus(ctx, act.ID, 2, store.StepRunning, store.StepWaiting)
		require.NoError(t, err)
		require.False(t, ok, "the step is not running")
		ok, err = s.StepSetStatus(ctx, act.ID, 2, store.StepWaiting, store.StepRunning)
		require.NoError(t, err)
		require.True(t, ok)
		_, err = s.StepSetStatus(ctx, act.ID, 2, store.StepRunning, store.StepCompleted)
		require.Error(t, err, "ending a step is StepEnd's")

		end := t0.Add(time.Minute)
		ok, err = s.StepEnd(ctx, act.ID, 2, store.StepCompleted, json.RawMessage(`{"decisions":[]}`), nil, nil, end)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.StepEnd(ctx, act.ID, 2, store.StepFailed, json.RawMessage(`{"late":true}`), &boom, nil, end.Add(time.Second))
		require.NoError(t, err)
		require.False(t, ok, "a step ends once")
		ok, err = s.StepEnd(ctx, act.ID, 9, store.StepCompleted, nil, nil, nil, end)
		require.NoError(t, err)
		require.False(t, ok, "no such step")
		ok, err = s.StepSetStatus(ctx, act.ID, 2, store.StepRunning, store.StepWaiting)
		require.NoError(t, err)
		require.False(t, ok, "an ended step stays ended")
		wait.Status, wait.Output, wait.EndedAt = store.StepCompleted, json.RawMessage(`{"decisions":[]}`), &end
		all, err = s.StepsAll(ctx, act.ID)
		require.NoError(t, err)
		requireStep(t, wait, &all[2])

		// An LLM step's answer and usage come at its end; an input given at
		// its start is kept.
		require.NoError(t, s.StepsInsert(ctx, dup))
		ok, err = s.StepEnd(ctx, act.ID, 3, store.StepCompleted, json.RawMessage(`{"content":"hi"}`), nil, json.RawMessage(`{"output_tokens":2}`), end)
		require.NoError(t, err)
		require.True(t, ok)

		page, total, err := s.StepsList(ctx, act.ID, 2, 1)
		require.NoError(t, err)
		require.Equal(t, 4, total)
		require.Len(t, page, 2)
		require.Equal(t, []int{1, 2}, []int{page[0].Index, page[1].Index})
		page, total, err = s.StepsList(ctx, act.ID, 2, 2)
		require.NoError(t, err)
		require.Equal(t, 4, total)
		require.Equal(t, 3, page[1].Index)
		require.JSONEq(t, `{"output_tokens":2}`, string(page[1].Usage))
		require.JSONEq(t, `{"content":"hi"}`, string(page[1].Output))

		page, total, err = s.StepsList(ctx, uuid.NewString(), 10, 0)
		require.NoError(t, err)
		require.Zero(t, total)
		require.NotNil(t, page, "an empty page is [], not null")
		require.Empty(t, page)
	})
}

// requireStep checks that got is want as read back.
func requireStep(t *testing.T, want, got *store.Step) {
	t.Helper()
	require.Equal(t, want.ActivationID, got.ActivationID)
	require.Equal(t, want.Index, got.Index)
	require.Equal(t, want.Kind, got.Kind)
	require.Equal(t, want.Name, got.Name)
	require.Equal(t, want.ToolCallID, got.ToolCallID)
	requireJSON(t, want.Input, got.Input)
	requireJSON(t, want.Output, got.Output)
	requireJSON(t, want.Usage, got.Usage)
	require.Equal(t, want.Error, got.Error)
	require.Equal(t, want.Status, got.Status)
	require.True(t, want.StartedAt.Equal(got.StartedAt), "started_at %v, want %v", got.StartedAt, want.StartedAt)
	if want.EndedAt == nil {
		require.Nil(t, got.EndedAt)
	} else {
		require.NotNil(t, got.EndedAt)
		require.True(t, want.EndedAt.Equal(*got.EndedAt), "ended_at %v, want %v", *got.EndedAt, *want.EndedAt)
	}
}

// requireJSON checks a nullable JSON value: nil stays nil, else the same JSON.
func requireJSON(t *testing.T, want, got json.RawMessage) {
	t.Helper()
	if want == nil {
		require.Nil(t, got)
		return
	}
	require.JSONEq(t, string(want), string(got))
}

// TestStepsInsertMany: the 1,001 steps of a hostile answer go in several
// statements; in a transaction, a conflict in the last one stores none.
func TestStepsInsertMany(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		act := newRunningActivation(t, s, "w1")
		newSteps := func(from, n int) []*store.Step {
			steps := make([]*store.Step, n)
			for i := range steps {
				steps[i] = &store.Step{ActivationID: act.ID, Index: from + i, Kind: store.StepTool, Name: "t", ToolCallID: "c",
					Status: store.StepRunning, StartedAt: store.Now()}
			}
			return steps
		}
		require.NoError(t, s.InTx(ctx, func(tx *store.Store) error { return tx.StepsInsert(ctx, newSteps(0, 1001)...) }))
		all, err := s.StepsAll(ctx, act.ID)
		require.NoError(t, err)
		require.Len(t, all, 1001)
		for i := range all {
			require.Equal(t, i, all[i].Index)
		}
		// Rows 1001..1119 are new, 1000 is not: the last statement fails.
		err = s.InTx(ctx, func(tx *store.Store) error {
			return tx.StepsInsert(ctx, append(newSteps(1001, 119), newSteps(1000, 1)...)...)
		})
		require.ErrorIs(t, err, store.ErrConflict)
		all, err = s.StepsAll(ctx, act.ID)
		require.NoError(t, err)
		require.Len(t, all, 1001, "a refused transaction stores none of its steps")
	})
}
