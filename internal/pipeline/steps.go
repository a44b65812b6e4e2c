package pipeline

import (
	"bytes"
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
	"github.com/agentplatform/agentplatform/internal/function"
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

// Timeout: none from River; a function step runs under its function's
// timeout, an agent step only starts an activation. River's rescuer skips
// a job without a timeout: a job whose process died between River's fetch
// and the step's claim comes back through the activation reaper
// (queue.RescueStranded) once that worker is dead (30 s); a job still
// running on a live worker is left alone.
func (w *stepWorker) Timeout(*river.Job[StepArgs]) time.Duration { return -1 }

// Work runs one step. A job that finds its step no longer current (a
// retry after the run moved on), or claimed by a worker process, does
// nothing: a run moves on once per step, and a step runs again only once
// its worker is dead (the reaper hands it back, RecoverWorker). A step
// whose user holds their share of the workers snoozes unless one of theirs
// frees within a second (queue.TakeSlot), leaving the worker to other
// users' steps.
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
	key := fmt.Sprintf("%s/%d", runID, step)
	if _, dup := s.running.LoadOrStore(key, struct{}{}); dup {
		return nil // running on this process already
	}
	defer s.running.Delete(key)
	claimed, err := s.claim(ctx, runID, step)
	if err != nil || !claimed {
		return err
	}
	if err := s.execStep(ctx, w, def, input); err != nil {
		// River runs the job again, here or elsewhere: the claim goes.
		s.release(ctx, runID, step)
		return err
	}
	return nil
}

// execStep runs step def of w, claimed by this process, with its input.
func (s *Service) execStep(ctx context.Context, w *where, def apps.Step, input json.RawMessage) error {
	if def.Type != "function" {
		return s.startAgent(ctx, w, def, input)
	}
	runID, step := w.run.ID, w.step
	e, err := s.functions.ExecuteStep(ctx, w.run.UserID, w.run.AppID, def.Ref, function.Step{RunID: runID, StepID: def.ID, APIKeyID: w.run.APIKeyID}, input)
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
}

// startAgent starts an agent step's activation; its end moves the run on
// (EndHook). The Idempotency-Key makes a retried job find the same one.
func (s *Service) startAgent(ctx context.Context, w *where, def apps.Step, input json.RawMessage) error {
	agents, err := s.store.AgentListByApp(ctx, w.run.AppID)
	if err != nil {
		return err
	}
	// The ref is the agent's name or id; a name wins, as for functions.
	agentID := ""
	for _, a := range agents {
		if a.Name == def.Ref || (agentID == "" && a.ID == def.Ref) {
			agentID = a.ID
		}
	}
	if agentID == "" {
		return s.finishStep(ctx, w.run.ID, w.step, stepEnd{err: fmt.Sprintf("agent %q not found in the app", def.Ref)})
	}
	// The step's calls count to the key that started the run.
	caller := &auth.Caller{UserID: w.run.UserID, Kind: auth.KindSession, AppID: w.run.AppID, KeyID: w.run.APIKeyID}
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
		// The activation's own recovery covers the step from here.
		cur.run.WorkerID = ""
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
// the transaction that records that end.
func (s *Service) EndHook() activation.EndHook {
	return activation.EndHook{Applies: waitedOn, Run: s.stepActivationEnded}
}

// waitedOn reports whether a may be an agent step's activation: only those
// are waited on, and their context names the run, so any other end (nearly
// all of them) asks the database nothing.
func waitedOn(a *store.Activation) bool {
	return bytes.Contains(a.Context, []byte(`"pipeline_run_id"`))
}

// stepActivationEnded moves on the run whose agent step waited on a.
func (s *Service) stepActivationEnded(ctx context.Context, tx *store.Store, a *store.Activation) error {
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

// claim makes this worker process the one running step of run runID and
// marks the step (and the run) running. It fails (false) when the step is
// no longer current or another worker holds it: a live one runs it, a dead
// one's steps are handed back by the reaper (RecoverWorker).
func (s *Service) claim(ctx context.Context, runID string, step int) (bool, error) {
	me := s.acts.WorkerID()
	claimed := false
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		w, err := s.load(ctx, tx, runID, step)
		if err != nil || w == nil || (w.run.WorkerID != "" && w.run.WorkerID != me) {
			return err
		}
		claimed = true
		w.run.WorkerID = me
		w.run.Attempt++
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
	return claimed && err == nil, err
}

// release gives up this process's claim on step of run runID, so that
// River's next try of the job may run it on any worker. A release that
// fails leaves the claim to the reaper.
func (s *Service) release(ctx context.Context, runID string, step int) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	me := s.acts.WorkerID()
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		w, err := s.load(ctx, tx, runID, step)
		if err != nil || w == nil || w.run.WorkerID != me {
			return err
		}
		w.run.WorkerID = ""
		return s.save(ctx, tx, w)
	})
	if err != nil {
		s.log.Warn("release a pipeline step", "run_id", runID, "step", step, "err", err)
	}
}

// maxStepAttempts bounds how often a step is claimed before a dying worker
// fails it instead of handing it back (a step that kills its worker).
const maxStepAttempts = 3

// RecoverWorker hands back the steps dead worker workerID was running,
// each with a fresh job (its own job is stuck "running" until River's
// rescuer gets to it), or, past maxStepAttempts, fails them with a reason.
// The activation reaper calls it (activation.DeadWorkerHook).
func (s *Service) RecoverWorker(ctx context.Context, workerID string) (int, error) {
	ids, err := s.store.PipelineRunsClaimedBy(ctx, workerID)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		err := s.store.InTx(ctx, func(tx *store.Store) error {
			r, err := tx.PipelineRunGet(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil || r.WorkerID != workerID {
				return err
			}
			w, err := s.load(ctx, tx, id, r.Current)
			if err != nil {
				return err
			}
			if w == nil { // ended: nothing to run
				r.WorkerID = ""
				return tx.PipelineRunUpdate(ctx, r)
			}
			if w.run.Attempt >= maxStepAttempts {
				return s.stepEndedTx(ctx, tx, w, stepEnd{err: fmt.Sprintf("The worker running this step stopped responding (attempt %d of %d)",
					w.run.Attempt, maxStepAttempts)})
			}
			w.run.WorkerID = ""
			if err := s.save(ctx, tx, w); err != nil {
				return err
			}
			return s.enqueue(ctx, tx, w.run, w.step)
		})
		if err != nil {
			return 0, err
		}
	}
	return len(ids), nil
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
	w.run.WorkerID, w.run.Attempt = "", 0
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
