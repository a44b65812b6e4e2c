package activation_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// asker is a runtime that waits once for the caller's result of one
// client call, then completes with what it was told.
type asker struct{ runs atomic.Int32 }

func (*asker) Runtime() string                                 { return executor.LLMRuntime }
func (*asker) Validate(context.Context, *executor.Check) error { return nil }
func (*asker) NeedsAgentKey() bool                             { return false }
func (a *asker) Execute(ctx context.Context, run *executor.Run) (*executor.Result, error) {
	a.runs.Add(1)
	steps, err := run.Journal.Steps(ctx)
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		err := run.Journal.Wait(ctx, &executor.Wait{Kind: store.WaitToolResult, For: time.Hour,
			Calls: []executor.WaitCall{{ToolCallID: "c1", Name: "ask", Arguments: json.RawMessage(`{}`)}},
			Step:  &store.Step{Index: 0, Kind: store.StepWait, StartedAt: time.Now()}})
		if err != nil {
			return nil, err
		}
		return nil, executor.ErrWaiting
	}
	if steps[0].Status != store.StepCompleted {
		return nil, errors.New("resumed before the answer")
	}
	return &executor.Result{Output: steps[0].Output}, nil
}

// answerOnWait is the event bus of a caller that answers a wait the moment
// its event commits: inside the commit of the run that waits, before that
// run has returned. It holds that run there until a worker has taken the
// activation over again (or 3 s have passed), so the job its answer
// queued meets the run that is still on its way out.
type answerOnWait struct {
	noEvents
	store  *store.Store
	svc    atomic.Pointer[activation.Service]
	caller *auth.Caller
	mu     sync.Mutex
	errs   []error
}

func (b *answerOnWait) Record(ctx context.Context, tx *store.Store, evs ...*events.Event) error {
	for _, ev := range evs {
		if ev.Type != events.ActivationWaiting {
			continue
		}
		var w activation.Waiting
		if err := json.Unmarshal(ev.Waiting, &w); err != nil {
			return err
		}
		id := ev.ActivationID
		tx.AfterCommit(func() {
			_, err := b.svc.Load().AnswerWait(context.Background(), b.caller, id, w.WaitpointID,
				activation.WaitAnswer{Results: []activation.WaitResult{{ToolCallID: "c1", Output: json.RawMessage(`"early"`)}}})
			for deadline := time.Now().Add(3 * time.Second); err == nil && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if a, _ := b.store.ActivationGet(context.Background(), id); a != nil && (a.WorkerID != "" || a.Status != store.StatusRunning) {
					break
				}
			}
			b.mu.Lock()
			b.errs = append(b.errs, err)
			b.mu.Unlock()
		})
	}
	return nil
}

// TestAnswerDuringTheWaitsCommitIsNeverLost: an answer that comes while
// the waiting run still holds its activation (its wait just committed)
// queues the run again, and the run completes with it, on the fast path
// and on River's.
func TestAnswerDuringTheWaitsCommitIsNeverLost(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		run := &asker{}
		bus := &answerOnWait{}
		b := setup(t, d, true, activation.Options{Concurrency: 2}, func(deps *activation.Deps) {
			bus.store = deps.Store
			deps.Events = bus
			deps.Executors = executor.NewRegistry(run)
		})
		bus.svc.Store(b.svc)
		bus.caller = b.caller
		ctx := context.Background()
		r, err := b.svc.StartRecovery(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { r.Stop(context.Background()) })

		const n = 4
		for range n {
			a, _, err := b.svc.Create(ctx, b.caller, activation.Request{AgentID: b.agent.ID, InputData: json.RawMessage(`{"prompt":"hi"}`)})
			require.NoError(t, err)
			got := awaitEnd(t, b.store, a.ID)
			require.Equal(t, store.StatusCompleted, got.Status, got.Error)
			require.JSONEq(t, `{"results":[{"tool_call_id":"c1","output":"early"}]}`, string(got.OutputData))
			require.Nil(t, got.Waiting)
		}
		// The last answer's caller may still be on its way back from
		// watching the take-over when its run has ended.
		require.Eventually(t, func() bool {
			bus.mu.Lock()
			defer bus.mu.Unlock()
			return len(bus.errs) == n
		}, 5*time.Second, 5*time.Millisecond)
		bus.mu.Lock()
		defer bus.mu.Unlock()
		for _, err := range bus.errs {
			require.NoError(t, err)
		}
		require.EqualValues(t, 2*n, run.runs.Load(), "each run ran twice: before its wait, and after its answer")
	})
}
