package activation

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/store"
)

// RunStep is a step as GET /api/v1/activations/{id}/steps and the
// activation_step event show it.
type RunStep struct {
	Index      int             `json:"index"`
	Kind       string          `json:"kind" enum:"llm,tool,wait"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	Input      json.RawMessage `json:"input"`
	Output     json.RawMessage `json:"output"`
	Error      *string         `json:"error"`
	Status     string          `json:"status" enum:"running,waiting,completed,failed"`
	Usage      *llm.Usage      `json:"usage" doc:"An LLM step's tokens; null for the others"`
	StartedAt  time.Time       `json:"started_at"`
	EndedAt    *time.Time      `json:"ended_at"`
}

// StepOf is the public view of a stored step.
func StepOf(st *store.Step) RunStep {
	out := RunStep{Index: st.Index, Kind: st.Kind, Name: st.Name, ToolCallID: st.ToolCallID, Input: st.Input,
		Output: st.Output, Error: st.Error, Status: st.Status, StartedAt: st.StartedAt, EndedAt: st.EndedAt}
	if len(st.Usage) > 0 {
		out.Usage = &llm.Usage{}
		_ = json.Unmarshal(st.Usage, out.Usage)
	}
	if out.Input == nil {
		out.Input = json.RawMessage("null")
	}
	if out.Output == nil {
		out.Output = json.RawMessage("null")
	}
	return out
}

// Waiting is an activation's waiting object: what its run waits for.
type Waiting struct {
	WaitpointID string              `json:"waitpoint_id"`
	Kind        string              `json:"kind" enum:"approval,tool_result"`
	ToolCalls   []executor.WaitCall `json:"tool_calls"`
	ExpiresAt   time.Time           `json:"expires_at"`
}

// journal is the executor.Journal of one run of activation a on this
// process: r is the run.
type journal struct {
	s *Service
	a *store.Activation
	r *tracked
}

func (j *journal) Steps(ctx context.Context) ([]store.Step, error) {
	return j.s.Store.StepsAll(ctx, j.a.ID)
}

func (j *journal) Record(ctx context.Context, steps ...*store.Step) error {
	for _, st := range steps {
		st.ActivationID = j.a.ID
	}
	var bills []*store.UsageRecord
	for _, st := range steps {
		if st.Bill != nil {
			idx := st.Index
			st.Bill.StepIndex = &idx
			bills = append(bills, j.s.bill(j.a, st.Bill))
		}
	}
	return j.s.Store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.StepsInsert(ctx, steps...); err != nil {
			return err
		}
		var evs []*events.Event
		for _, st := range steps {
			if st.EndedAt != nil {
				evs = append(evs, j.s.stepEvent(j.a, st))
			}
		}
		if err := j.s.Events.Record(ctx, tx, evs...); err != nil {
			return err
		}
		// With the step that holds the answer: both or neither, once (a
		// step of the activation is unique, and so is its record). Last,
		// as at a run's end: the daily sums' row is locked until the commit.
		if err := tx.UsageInsert(ctx, bills...); err != nil {
			return err
		}
		j.s.afterUsage(ctx, tx, bills)
		return nil
	})
}

func (j *journal) End(ctx context.Context, st *store.Step) error {
	st.ActivationID = j.a.ID
	if st.EndedAt == nil {
		now := j.s.now()
		st.EndedAt = &now
	}
	return j.s.Store.InTx(ctx, func(tx *store.Store) error {
		ok, err := tx.StepEnd(ctx, j.a.ID, st.Index, st.Status, st.Output, st.Error, st.Usage, *st.EndedAt)
		if err != nil || !ok {
			return err // ended already: by the run this one took over from
		}
		return j.s.Events.Record(ctx, tx, j.s.stepEvent(j.a, st))
	})
}

// errNotRunning is a wait's when the run was no longer this worker's (a
// cancel committed first, or the reaper handed it on).
var errNotRunning = errors.New("activation: the run is no longer this worker's")

// Wait records w and gives the run up. The run stops being tracked here
// before the commit: its answer may come the moment the wait commits, and
// the job that answer queues must not find a run of the activation still
// tracked on this node (it would take it for a duplicate and drop it).
func (j *journal) Wait(ctx context.Context, w *executor.Wait) error {
	s, a := j.s, j.a
	now := s.now()
	wp := &store.Waitpoint{ID: uuid.Must(uuid.NewV7()).String(), ActivationID: a.ID, UserID: a.UserID, Kind: w.Kind,
		StepIndex: w.Step.Index, ExpiresAt: now.Add(w.For), CreatedAt: now}
	waiting, err := json.Marshal(Waiting{WaitpointID: wp.ID, Kind: w.Kind, ToolCalls: w.Calls, ExpiresAt: wp.ExpiresAt})
	if err != nil {
		return err
	}
	if wp.ToolCalls, err = json.Marshal(w.Calls); err != nil {
		return err
	}
	w.Step.ActivationID, w.Step.Status, w.Step.Input = a.ID, store.StepWaiting, waiting
	s.running.CompareAndDelete(a.ID, j.r)
	return s.Store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.StepsInsert(ctx, w.Step); err != nil {
			return err
		}
		if err := tx.WaitpointCreate(ctx, wp); err != nil {
			return err
		}
		ok, err := tx.ActivationWait(ctx, a.ID, s.opts.WorkerID, waiting)
		if err != nil {
			return err
		}
		if !ok {
			return errNotRunning
		}
		if _, err := s.Queue.InsertTx(ctx, tx, WaitTimeoutArgs{WaitpointID: wp.ID},
			&river.InsertOpts{ScheduledAt: wp.ExpiresAt, MaxAttempts: 10}); err != nil {
			return err
		}
		cur := *a
		cur.Waiting = waiting
		ev := s.event(events.ActivationWaiting, &cur)
		ev.Waiting = waiting
		if err := s.Events.Record(ctx, tx, &ev); err != nil {
			return err
		}
		// Whoever gets the end by webhook gets the wait too: it may be
		// theirs to answer.
		return s.webhookTx(ctx, tx, &cur, nil, ev)
	})
}

// bill makes r a record of a's: who spent it, when, under a new id.
func (s *Service) bill(a *store.Activation, r *store.UsageRecord) *store.UsageRecord {
	r.ID = uuid.Must(uuid.NewV7()).String()
	r.UserID, r.AppID, r.AgentID, r.ActivationID, r.APIKeyID = a.UserID, a.AppID, a.AgentID, a.ID, a.APIKeyID
	if r.CreatedAt.IsZero() {
		r.CreatedAt = s.now()
	}
	return r
}

// afterUsage hands recs, recorded in tx, to the budgets once tx commits:
// a budget they take past its warning line warns with them. A warning
// that fails is logged; the calls are answered and recorded, the run
// goes on.
func (s *Service) afterUsage(ctx context.Context, tx *store.Store, recs []*store.UsageRecord) {
	if s.Budgets == nil || len(recs) == 0 {
		return
	}
	tx.AfterCommit(func() {
		if err := s.Budgets.AfterUsage(context.WithoutCancel(ctx), recs...); err != nil {
			s.Log.Warn("budget warning failed", "activation_id", recs[0].ActivationID, "err", err)
		}
	})
}

// stepEvent is the activation_step event of a's step st.
func (s *Service) stepEvent(a *store.Activation, st *store.Step) *events.Event {
	ev := s.event(events.ActivationStep, a)
	ev.Step, _ = json.Marshal(StepOf(st))
	return &ev
}

// WaitTimeoutArgs is the job that ends a wait nobody answered in time.
type WaitTimeoutArgs struct {
	WaitpointID string `json:"waitpoint_id"`
}

// Kind names the job in the queue.
func (WaitTimeoutArgs) Kind() string { return "waitpoint_timeout" }

type waitTimeoutWorker struct {
	river.WorkerDefaults[WaitTimeoutArgs]
	svc *Service
}

func (w *waitTimeoutWorker) Work(ctx context.Context, job *river.Job[WaitTimeoutArgs]) error {
	return w.svc.expire(ctx, job.Args.WaitpointID)
}

// addWaitWorkers registers the jobs of waits on q.
func addWaitWorkers(q *queue.Queue, s *Service) {
	queue.AddWorker(q, &waitTimeoutWorker{svc: s})
}
