package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/store"
)

// StepArgs is the River job of one step of a run.
type StepArgs struct {
	RunID string `json:"run_id"`
	Step  int    `json:"step"`
	// UserID owns the run: the unit of the workers' fair share (empty in
	// jobs queued before it was added: one shared owner).
	UserID string `json:"user_id,omitempty"`
}

// Kind names the job in the queue.
func (StepArgs) Kind() string { return "pipeline_step" }

type stepWorker struct {
	river.WorkerDefaults[StepArgs]
	svc *Service
}

// Timeout: a function step runs under its own timeout; an agent step only
// starts an activation.
func (w *stepWorker) Timeout(*river.Job[StepArgs]) time.Duration { return 10 * time.Minute }

// Work runs one step. A job that finds its step no longer current (a
// retry after the run moved on) does nothing: steps run at least once,
// and a run moves on once per step. A step whose user holds their share
// of the workers snoozes unless one of theirs frees within a second
// (queue.TakeSlot), leaving the worker to other users' steps.
func (w *stepWorker) Work(ctx context.Context, job *river.Job[StepArgs]) error {
	if err := queue.TakeSlot(ctx, w.svc.slots, job.Args.UserID, job.JobRow); err != nil {
		return err
	}
	defer w.svc.slots.Release(job.Args.UserID)
	return w.svc.runStep(ctx, job.Args.RunID, job.Args.Step)
}

// where is a step's place in its run.
type where struct {
	run    *store.PipelineRun
	step   int
	def    []apps.Step
	states []StepState
}

func (s *Service) load(ctx context.Context, st *store.Store, runID string, step int) (*where, error) {
	r, err := st.PipelineRunGet(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // deleted with its pipeline
	}
	if err != nil {
		return nil, err
	}
	if r.Current != step || r.Status == StatusCompleted || r.Status == StatusFailed {
		return nil, nil
	}
	w := &where{run: r, step: step}
	if err := json.Unmarshal(r.Definition, &w.def); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(r.Steps, &w.states); err != nil {
		return nil, err
	}
	if step >= len(w.def) || step >= len(w.states) {
		return nil, fmt.Errorf("pipeline run %s has no step %d", runID, step)
	}
	return w, nil
}

// scope is what a step's template sees: the run's input and the outputs
// of the steps that completed.
func (w *where) scope() map[string]any {
	var input any
	_ = json.Unmarshal(w.run.Input, &input)
	steps := map[string]any{}
	for _, st := range w.states[:w.step] {
		var out any
		_ = json.Unmarshal(st.Output, &out)
		steps[st.ID] = map[string]any{"output": out}
	}
	return map[string]any{"input": input, "steps": steps}
}

func (s *Service) runStep(ctx context.Context, runID string, step int) error {
	w, err := s.load(ctx, s.store, runID, step)
	if err != nil || w == nil {
		return err
	}
	def := w.def[step]
	input, err := Render(def.Input, w.scope())
	if err != nil {
		return s.finishStep(ctx, runID, step, stepEnd{err: err.Error()})
	}
	if err := s.markRunning(ctx, runID, step); err != nil {
		return err
	}
	switch def.Type {
	case "function":
		e, err := s.functions.ExecuteStep(ctx, w.run.UserID, w.run.AppID, def.Ref, input)
		if err != nil {
			if ctx.Err() != nil {
				return err // stopping: River runs the step again
			}
			if e, ok := apperr.As(err); ok {
				return s.finishStep(ctx, runID, step, stepEnd{err: e.Detail})
			}
			return err
		}
		end := stepEnd{executionID: e.ExecutionID, output: e.Output}
		if e.Error != nil {
			end.err = *e.Error
		}
		return s.finishStep(ctx, runID, step, end)
	default:
		return s.startAgent(ctx, w, def, input)
	}
}

// startAgent starts an agent step's activation; its end moves the run on
// (EndHook). The Idempotency-Key makes a retried job find the same one.
func (s *Service) startAgent(ctx context.Context, w *where, def apps.Step, input json.RawMessage) error {
	agents, err := s.store.AgentListByApp(ctx, w.run.AppID)
	if err != nil {
		return err
	}
	agentID := ""
	for _, a := range agents {
		if a.Name == def.Ref {
			agentID = a.ID
		}
	}
	if agentID == "" {
		return s.finishStep(ctx, w.run.ID, w.step, stepEnd{err: fmt.Sprintf("agent %q not found in the app", def.Ref)})
	}
	caller := &auth.Caller{UserID: w.run.UserID, Kind: auth.KindSession, AppID: w.run.AppID}
	a, _, err := s.acts.Create(ctx, caller, activation.Request{AgentID: agentID, AppID: w.run.AppID, InputData: input,
		Context:        map[string]any{"pipeline_run_id": w.run.ID, "pipeline_step": def.ID},
		IdempotencyKey: fmt.Sprintf("pipeline-%s-%d", w.run.ID, w.step)})
	if err != nil {
		if e, ok := apperr.As(err); ok {
			return s.finishStep(ctx, w.run.ID, w.step, stepEnd{err: e.Detail})
		}
		return err
	}
	return s.store.InTx(ctx, func(tx *store.Store) error {
		cur, err := s.load(ctx, tx, w.run.ID, w.step)
		if err != nil || cur == nil {
			return err
		}
		cur.states[w.step].ActivationID = a.ID
		if err := s.save(ctx, tx, cur); err != nil {
			return err
		}
		if err := tx.PipelineWaitPut(ctx, a.ID, w.run.ID, w.step); err != nil {
			return err
		}
		// The activation may have ended already (the end's hook found no
		// wait then); the lock makes an end committing meanwhile wait
		// for this wait row.
		ended, done, err := tx.ActivationEndedLocked(ctx, a.ID)
		if err != nil || !done {
			return err
		}
		if _, _, ok, err := tx.PipelineWaitTake(ctx, a.ID); err != nil || !ok {
			return err
		}
		return s.stepEndedTx(ctx, tx, cur, endOf(ended))
	})
}

// EndHook moves a run on when the activation of its agent step ends, in
// the transaction that records that end (activation.EndHook).
func (s *Service) EndHook(ctx context.Context, tx *store.Store, a *store.Activation) error {
	runID, step, ok, err := tx.PipelineWaitTake(ctx, a.ID)
	if err != nil || !ok {
		return err
	}
	w, err := s.load(ctx, tx, runID, step)
	if err != nil || w == nil {
		return err
	}
	return s.stepEndedTx(ctx, tx, w, endOf(a))
}

// stepEnd is how a step ended.
type stepEnd struct {
	output       json.RawMessage
	err          string
	activationID string
	executionID  string
}

func endOf(a *store.Activation) stepEnd {
	if a.Status == store.StatusFailed {
		msg := "the activation failed"
		if a.Error != nil && *a.Error != "" {
			msg = *a.Error
		}
		return stepEnd{activationID: a.ID, err: msg}
	}
	return stepEnd{activationID: a.ID, output: a.OutputData}
}

func (s *Service) markRunning(ctx context.Context, runID string, step int) error {
	return s.store.InTx(ctx, func(tx *store.Store) error {
		w, err := s.load(ctx, tx, runID, step)
		if err != nil || w == nil || w.states[step].Status == StatusRunning {
			return err
		}
		w.states[step].Status = StatusRunning
		if w.run.Status == StatusQueued {
			w.run.Status = StatusRunning
			if err := s.save(ctx, tx, w); err != nil {
				return err
			}
			return s.event(ctx, tx, w.run, EventStarted)
		}
		return s.save(ctx, tx, w)
	})
}

// finishStep records a step's end in a transaction of its own.
func (s *Service) finishStep(ctx context.Context, runID string, step int, end stepEnd) error {
	return s.store.InTx(context.WithoutCancel(ctx), func(tx *store.Store) error {
		w, err := s.load(ctx, tx, runID, step)
		if err != nil || w == nil {
			return err
		}
		return s.stepEndedTx(ctx, tx, w, end)
	})
}

// stepEndedTx records a step's end in tx and moves the run on: the next
// step's job, or the run's end (a failed step fails it, the steps after it
// are skipped).
func (s *Service) stepEndedTx(ctx context.Context, tx *store.Store, w *where, end stepEnd) error {
	st := &w.states[w.step]
	st.Output, st.ActivationID, st.ExecutionID = end.output, firstOf(end.activationID, st.ActivationID), end.executionID
	if end.err != "" {
		msg := end.err
		st.Status, st.Error, st.Output = StatusFailed, &msg, nil
		for i := w.step + 1; i < len(w.states); i++ {
			w.states[i].Status = StatusSkipped
		}
		w.run.Status, w.run.Error, w.run.Current = StatusFailed, fmt.Sprintf("Step %s failed: %s", st.ID, end.err), len(w.states)
		if err := s.save(ctx, tx, w); err != nil {
			return err
		}
		return s.event(ctx, tx, w.run, EventFailed)
	}
	st.Status = StatusCompleted
	if w.step+1 < len(w.states) {
		w.run.Current = w.step + 1
		if err := s.save(ctx, tx, w); err != nil {
			return err
		}
		return s.enqueue(ctx, tx, w.run, w.step+1)
	}
	w.run.Status, w.run.Output, w.run.Current = StatusCompleted, end.output, len(w.states)
	if err := s.save(ctx, tx, w); err != nil {
		return err
	}
	return s.event(ctx, tx, w.run, EventCompleted)
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s *Service) save(ctx context.Context, tx *store.Store, w *where) error {
	w.run.Steps, _ = json.Marshal(w.states)
	w.run.UpdatedAt = s.now()
	return tx.PipelineRunUpdate(ctx, w.run)
}

func (s *Service) event(ctx context.Context, tx *store.Store, r *store.PipelineRun, typ string) error {
	ev := &events.Event{Type: typ, UserID: r.UserID, RunID: r.ID, PipelineID: r.PipelineID, Status: r.Status,
		Context: map[string]any{"app_id": r.AppID}, Error: r.Error}
	if typ == EventCompleted {
		ev.OutputData = r.Output
	}
	return s.events.Record(ctx, tx, ev)
}
