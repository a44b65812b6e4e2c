package activation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/agentplatform/agentplatform/internal/cleantext"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/telemetry"
)

// Args is the River job of one activation.
type Args struct {
	ActivationID string `json:"activation_id"`
	// UserID owns the activation: the unit of the slots' fair share
	// (empty in jobs queued before it was added: one shared owner).
	UserID string `json:"user_id,omitempty"`
	// Resume marks the job of a run whose wait was answered: it is still
	// running, held by no worker, and the job takes it over.
	Resume bool `json:"resume,omitempty"`
}

// Kind names the job in the queue.
func (Args) Kind() string { return "activation" }

type jobWorker struct {
	river.WorkerDefaults[Args]
	svc *Service
}

// Timeout: none from River; each agent's own timeout applies inside.
// River's rescuer therefore never takes the job back: when its process
// dies before the claim, the reaper does (Recovery.reap).
func (w *jobWorker) Timeout(*river.Job[Args]) time.Duration { return -1 }

// Work runs the activation a job resumes. It returns an error only when
// the process is stopping with the activation unfinished: River then
// retries the job. A job whose user already holds their share of the
// slots snoozes unless one of them frees within a second, and leaves the
// River worker to other users' jobs, which this process cannot see
// waiting while they are in the database. A job of a first run (queued
// by a build before the dispatcher) has nothing to do: its activation,
// queued, is a dispatcher's to claim.
func (w *jobWorker) Work(ctx context.Context, job *river.Job[Args]) error {
	if !job.Args.Resume {
		w.svc.queued()
		return nil
	}
	if _, here := w.svc.running.Load(job.Args.ActivationID); here {
		return nil // running on this process already
	}
	release := func() {}
	if l := w.svc.local.Load(); l != nil {
		owner := job.Args.UserID
		if err := queue.TakeSlot(ctx, l.slots, owner, job.JobRow); err != nil {
			return err
		}
		release = sync.OnceFunc(func() { l.slots.Release(owner) })
	}
	defer release()
	return w.svc.resume(ctx, job.Args.ActivationID, release)
}

// Causes of a run's context ending.
var (
	errCancelled = errors.New("cancelled")
	errTimedOut  = errors.New("timed out")
	errShutdown  = errors.New("worker stopping")
)

// resume takes over activation id, whose wait was answered, and runs it,
// for River; the caller holds an execution slot, which release frees.
func (s *Service) resume(ctx context.Context, id string, release func()) error {
	r := s.track(ctx, id)
	if r == nil {
		return nil // running on this process already
	}
	r.resumed = true
	// The run is still running, and nobody holds it. It has started
	// already, so no started event.
	a, _, err := s.Store.ActivationTakeOver(ctx, id, s.opts.WorkerID)
	if err != nil || a == nil {
		s.untrack(r)
		return err // a == nil: not resumable any more (cancelled, or a duplicate job)
	}
	held := func(context.Context) (func(), error) { return release, nil }
	return s.runClaimed(ctx, r, a, nil, held)
}

// tracked is a run that Cancel on this node reaches through s.running.
type tracked struct {
	id     string
	ctx    context.Context // the run's context; cancel ends it
	cancel context.CancelCauseFunc
	// resumed: the run comes back from a wait, which paused its timeout.
	resumed bool
}

// track registers a run of activation id, under ctx, for Cancel on this
// node; nil means a run of id is tracked here already. A run is tracked
// before the commit that claims its activation, never after: a cancel that
// commits once the activation is claimed then always finds the run to stop,
// however late the run gets going (the goroutine of a local run may start
// well after Create has answered when the machine is busy), and a run
// cancelled before it starts never reaches the provider.
func (s *Service) track(ctx context.Context, id string) *tracked {
	runCtx, cancel := context.WithCancelCause(ctx)
	r := &tracked{id: id, ctx: runCtx, cancel: cancel}
	if _, dup := s.running.LoadOrStore(id, r); dup {
		cancel(nil)
		return nil
	}
	return r
}

// untrack ends tracked run r. Only r's own entry goes: a run that gave
// itself up to wait (journal.Wait) may have a successor tracked already.
func (s *Service) untrack(r *tracked) {
	s.running.CompareAndDelete(r.id, r)
	r.cancel(nil)
}

// runClaimed runs activation a, claimed by this process, and records its
// end. slot waits for an execution slot and returns what frees it, which
// happens as soon as the agent has run: recording the end needs no slot.
// r is the run, tracked since before a was claimed (track), and ended
// here. agent is a's agent when the caller has it, else nil.
func (s *Service) runClaimed(ctx context.Context, r *tracked, a *store.Activation, agent *store.Agent, slot func(context.Context) (func(), error)) error {
	var err error
	s.runToEnd(ctx, r, a, agent, slot)(false, func(e error) { err = e })
	return err
}

// An ending records a run's end (and ends its tracking), then calls then
// with the outcome. Queued, its write queues for the writer
// (store.InTxThen) and nothing waits for it: then runs later, on another
// goroutine. Otherwise then has run when it returns.
type ending func(queued bool, then func(error))

// unqueued is an ending whose record never queues for the writer: it
// runs record on the caller's goroutine, queued or not.
func unqueued(record func() error) ending {
	return func(_ bool, then func(error)) { then(record()) }
}

// untracking is record followed, before then, by also and the end of r's
// tracking.
func (s *Service) untracking(r *tracked, record ending, also func()) ending {
	return func(queued bool, then func(error)) {
		record(queued, func(err error) {
			also()
			s.untrack(r)
			then(err)
		})
	}
}

// runToEnd is runClaimed up to its end: it runs a and returns the ending.
// A local run queues it under load (local.go): the end then waits for the
// writer behind hundreds of others without a goroutine, where the run's
// own, its stack grown by the agent's call (an SDK's request, JSON by
// reflection), would hold that stack all the while.
func (s *Service) runToEnd(ctx context.Context, r *tracked, a *store.Activation, agent *store.Agent, slot func(context.Context) (func(), error)) ending {
	if agent == nil {
		var err error
		if agent, err = s.Store.AgentGet(ctx, a.AgentID); err != nil {
			return s.untracking(r, func(queued bool, then func(error)) {
				s.finish(ctx, a, nil, nil, fmt.Errorf("load agent: %w", err), queued, then)
			}, func() {})
		}
	}
	// A cancel interrupts the run through runCtx, whether it executes or
	// still waits for a slot: at once on this node (Cancel), within a
	// second on another (Worker.watchCancels).
	runCtx := r.ctx
	// The run is an invoke_agent span (tracing on); what it records at
	// its end (webhook jobs) is in it too.
	var res *executor.Result
	var runErr error
	runCtx, span := telemetry.StartAgent(runCtx, agent.Name, agent.ID)
	ctx = telemetry.Continue(ctx, runCtx)
	ends := func(record ending) ending {
		return s.untracking(r, record, func() { endAgentSpan(span, a, res, runErr) })
	}
	// finishing records the run's result (res) with err, its error.
	finishing := func(err error) ending {
		return ends(func(queued bool, then func(error)) { s.finish(ctx, a, agent, res, err, queued, then) })
	}

	timeout := time.Duration(max(agent.TimeoutSeconds, 1)) * time.Second
	limit := timeout
	if r.resumed {
		var err error
		if limit, err = s.timeLeft(ctx, a, timeout); err != nil {
			return finishing(fmt.Errorf("read the run's waits: %w", err))
		}
	}
	release, runErr := slot(runCtx)
	if runErr == nil && runCtx.Err() != nil {
		// Cancelled before it could start (a slot that came free at the
		// same moment may have won the wait): the agent does not run.
		release()
		runErr = runCtx.Err()
	}
	cause := context.Cause(runCtx)
	if runErr == nil {
		execCtx, stopTimer := context.WithTimeoutCause(runCtx, limit, errTimedOut)
		res, runErr = s.execute(execCtx, r, a, agent)
		s.Events.EndTokens(a.UserID, a.ID)
		cause = context.Cause(execCtx)
		stopTimer()
		release()
	}
	switch {
	case runErr == nil:
		return finishing(nil)
	case errors.Is(runErr, executor.ErrWaiting):
		// Recorded by the journal with everything it needs: nothing holds
		// the run until its answer queues it again.
		return ends(unqueued(func() error { return nil }))
	case errors.Is(cause, errCancelled):
		// Cancel already recorded the end.
		return ends(unqueued(func() error { return nil }))
	case errors.Is(cause, errTimedOut):
		return finishing(fmt.Errorf("Activation timed out after %d s", int(timeout.Seconds())))
	case ctx.Err() != nil:
		// The process is stopping: hand the activation back; River retries
		// the job, here or on another worker.
		return ends(unqueued(func() error {
			hand, cancelHand := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancelHand()
			if err := s.handBack(hand, a); err != nil {
				s.Log.Error("hand back activation", "activation_id", a.ID, "err", err)
			}
			return errShutdown
		}))
	default:
		return finishing(runErr)
	}
}

// timeLeft is what a resumed run has left of its timeout: waits pause
// it, so the time it ran is its time since it started less its waits.
func (s *Service) timeLeft(ctx context.Context, a *store.Activation, timeout time.Duration) (time.Duration, error) {
	if a.StartedAt == nil {
		return timeout, nil
	}
	wps, err := s.Store.WaitpointsOf(ctx, a.ID)
	if err != nil {
		return 0, err
	}
	now := s.now()
	spent := now.Sub(*a.StartedAt)
	for _, w := range wps {
		if w.CreatedAt.Before(*a.StartedAt) {
			continue // before a hand-back restarted the clock
		}
		end := now
		if w.AnsweredAt != nil {
			end = *w.AnsweredAt
		}
		spent -= end.Sub(w.CreatedAt)
	}
	// A run whose clock ran out while it was taken over still gets a
	// moment: its timeout then ends it with the usual error.
	return max(timeout-spent, time.Millisecond), nil
}

// finish records the outcome, its event and its webhook in one transaction
// and publishes the event after commit, then calls then (queued: see
// ending). The output is stored as the agent returned it, except for what
// the databases cannot store (NUL, invalid UTF-8: U+FFFD instead). agent
// is the activation's agent when the run loaded it, else nil. ctx ends
// when the process stops.
func (s *Service) finish(ctx context.Context, a *store.Activation, agent *store.Agent, res *executor.Result, runErr error, queued bool, then func(error)) {
	if res == nil {
		res = &executor.Result{}
	}
	o := store.Outcome{Status: store.StatusCompleted, OutputData: cleantext.JSON(res.Output), CompletedAt: s.now()}
	if runErr != nil {
		o = store.Outcome{Status: store.StatusFailed, Error: cleantext.Error(runErr.Error()), CompletedAt: s.now()}
	}
	if len(res.Logs) > 0 {
		o.Logs, o.LogsTruncated = cleantext.JSON(mustJSON(res.Logs)), res.LogsTruncated
	}
	for _, r := range res.Usage {
		s.bill(a, r)
	}
	// The result must be saved even when the run's context is gone.
	s.recordEnd(context.WithoutCancel(ctx), a, agent, o, res.Usage, queued, func(err error) {
		if err != nil {
			err = s.retryEnd(ctx, a, agent, o, res.Usage, err)
		}
		then(err)
	})
}

// ErrNotStored is the error of an activation whose result the database
// refused: its cause is in the log, not in the activation.
const ErrNotStored = "The activation ended but its result could not be stored"

// retryEnd keeps trying to record an end that failed to be: a store error
// must never leave an activation running. Each round tries the outcome
// again (the database may be back), then a failure with ErrNotStored (an
// outcome the database refuses, whatever it holds, fails every time; the
// short reason always fits). Rounds go on with backoff until one is stored
// or the process stops; then the worker's end makes the reaper requeue it.
//
// The usage of the calls whose answers the run got goes with either: the
// provider was paid for them, whatever became of the output.
func (s *Service) retryEnd(ctx context.Context, a *store.Activation, agent *store.Agent, o store.Outcome, usage []*store.UsageRecord, err error) error {
	save := context.WithoutCancel(ctx)
	fallback := store.Outcome{Status: store.StatusFailed, Error: ErrNotStored, CompletedAt: o.CompletedAt}
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		s.Log.Error("record the end of an activation", "activation_id", a.ID, "attempt", attempt, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, 10*time.Second)
		if err = s.recordEndNow(save, a, agent, o, usage); err == nil {
			return nil
		}
		if s.recordEndNow(save, a, agent, fallback, usage) == nil {
			s.Log.Warn("activation failed: its result could not be stored", "activation_id", a.ID, "err", err)
			return nil
		}
	}
}

// recordEndNow is recordEnd waited for.
func (s *Service) recordEndNow(ctx context.Context, a *store.Activation, agent *store.Agent, o store.Outcome, usage []*store.UsageRecord) error {
	var err error
	s.recordEnd(ctx, a, agent, o, usage, false, func(e error) { err = e })
	return err
}

// recordEnd stores outcome o of a in one transaction with its event and
// webhook, and the usage of the LLM calls no step recorded, and publishes
// the event after commit, then calls then (queued: see ending). An end
// recorded already (a cancel) records none of it.
func (s *Service) recordEnd(ctx context.Context, a *store.Activation, agent *store.Agent, o store.Outcome, usage []*store.UsageRecord, queued bool, then func(error)) {
	if s.endsAlone(a, agent) {
		s.recordEndAlone(ctx, a, o, usage, queued, then)
		return
	}
	fn := func(tx *store.Store) error {
		ended, ok, err := tx.ActivationFinish(ctx, a.ID, o)
		if err != nil {
			return err
		}
		if !ok {
			return nil // ended already: by a cancel, or by the run this one was handed to
		}
		if err := s.endedTx(ctx, tx, ended, agent, usage...); err != nil {
			return err
		}
		s.afterUsage(ctx, tx, usage)
		return nil
	}
	if queued {
		s.Store.InTxThen(ctx, fn, then)
		return
	}
	then(s.Store.InTx(ctx, fn))
}

// endsAlone reports whether the end of a is its row, its event and its
// usage, with nothing else to write along (no end hook applies, no webhook
// is due): the store then writes them in one statement where it can
// (store.ActivationFinishRecorded), a run's end being most runs' last
// round trips.
func (s *Service) endsAlone(a *store.Activation, agent *store.Agent) bool {
	if agent == nil {
		return false
	}
	for _, h := range s.EndHooks {
		if h.Applies(a) {
			return false
		}
	}
	return s.Webhooks == nil || webhookTarget(a, agent) == ""
}

// errEndedAlready stops recordEndAlone's write of an end someone else
// recorded first.
var errEndedAlready = errors.New("activation ended already")

// recordEndAlone is recordEnd of an end that endsAlone: its event is made
// from a as o leaves it, and stored only if a was still running.
func (s *Service) recordEndAlone(ctx context.Context, a *store.Activation, o store.Outcome, usage []*store.UsageRecord, queued bool, then func(error)) {
	ev := s.endEvent(o.Applied(*a))
	var ended *store.Activation
	write := func(rows []*store.EventRow, done func(error)) {
		finished := func(e *store.Activation, ok bool, err error) {
			if ended = e; err == nil && !ok {
				err = errEndedAlready
			}
			done(err)
		}
		if queued {
			s.Store.ActivationFinishRecordedThen(ctx, a.ID, o, rows, usage, finished)
			return
		}
		finished(s.Store.ActivationFinishRecorded(ctx, a.ID, o, rows, usage...))
	}
	s.Events.RecordWithThen(s.Store, write, func(err error) {
		switch {
		case errors.Is(err, errEndedAlready):
			err = nil // by a cancel, or by the run this one was handed to
		case err == nil:
			s.Metrics.ActivationEnded(ended.Status, ended.DurationMS)
			s.afterUsage(ctx, s.Store, usage)
		}
		then(err)
	}, &ev)
}

// endEvent is the event of a's end.
func (s *Service) endEvent(a *store.Activation) events.Event {
	if a.Status == store.StatusFailed {
		return s.event(events.ActivationFailed, a)
	}
	return s.event(events.ActivationCompleted, a)
}

// endedTx records in tx everything that follows any end of activation a
// (a run's end, a cancel, a reaped worker's last attempt): the end hooks,
// its webhook and its event, published after commit with its metrics, and
// usage, the run's LLM calls that no step recorded. agent may be nil.
func (s *Service) endedTx(ctx context.Context, tx *store.Store, a *store.Activation, agent *store.Agent, usage ...*store.UsageRecord) error {
	for _, h := range s.EndHooks {
		if !h.Applies(a) {
			continue
		}
		if err := h.Run(ctx, tx, a); err != nil {
			return err
		}
	}
	ev := s.endEvent(a)
	// Recorded first: that hands out the event's seq, which the webhook
	// carries as the socket and the stream do. The usage goes with it, in
	// one statement on PostgreSQL, and late: the daily sums' row stays
	// locked until the commit, and every run of the account on every node
	// adds to a few such rows.
	if err := s.Events.RecordWith(tx, func(rows []*store.EventRow) error {
		return tx.EventAppendWithUsage(ctx, rows, usage...)
	}, &ev); err != nil {
		return err
	}
	if err := s.webhookTx(ctx, tx, a, agent, ev); err != nil {
		return err
	}
	tx.AfterCommit(func() { s.Metrics.ActivationEnded(a.Status, a.DurationMS) })
	return nil
}

// handBack returns a running activation to the queue when this process
// stops before it ends: a worker's dispatcher runs it again, here after a
// restart or on another node. A River run (a resumed one) has its job
// retried by River as well, whose claim then finds it taken.
func (s *Service) handBack(ctx context.Context, a *store.Activation) error {
	return s.Store.InTx(ctx, func(tx *store.Store) error { return s.requeueTx(ctx, tx, a.ID) })
}

// requeueTx puts running activation id back in the queue in tx, for a
// worker's dispatcher to take once tx has committed.
func (s *Service) requeueTx(ctx context.Context, tx *store.Store, id string) error {
	ok, err := tx.ActivationRequeue(ctx, id)
	if ok {
		tx.AfterCommit(s.queued)
	}
	return err
}

// webhookTx queues the delivery of an ended activation's event to
// metadata.webhook_url, else the agent's webhook_url. agent may be nil (a
// cancel, a reaped activation): it is read only if needed.
func (s *Service) webhookTx(ctx context.Context, tx *store.Store, a *store.Activation, agent *store.Agent, ev events.Event) error {
	if s.Webhooks == nil {
		return nil
	}
	target := webhookTarget(a, agent)
	if target == "" && agent == nil {
		if agent, _ = tx.AgentGet(ctx, a.AgentID); agent != nil {
			target = agent.WebhookURL
		}
	}
	if target == "" {
		return nil
	}
	return s.Webhooks.EnqueueTx(ctx, tx, a.AppID, target, ev)
}

// webhookTarget is where a's end is delivered: its own webhook_url, else
// its agent's (agent may be nil), else nowhere ("").
func webhookTarget(a *store.Activation, agent *store.Agent) string {
	var meta struct {
		WebhookURL string `json:"webhook_url"`
	}
	_ = json.Unmarshal(a.Metadata, &meta)
	if meta.WebhookURL == "" && agent != nil {
		return agent.WebhookURL
	}
	return meta.WebhookURL
}

// endAgentSpan ends a run's invoke_agent span: its conversation, and its
// input and output only where content may be recorded. A wait is no
// failure: the span ends there and the resumed run has one of its own.
func endAgentSpan(span telemetry.Span, a *store.Activation, res *executor.Result, err error) {
	if !span.Recording() {
		return
	}
	span.SetConversation(a.ChatID)
	if span.Capture() {
		var out []telemetry.Message
		if res != nil && len(res.Output) > 0 {
			out = []telemetry.Message{telemetry.Text("assistant", string(res.Output))}
		}
		span.SetContent("", []telemetry.Message{telemetry.Text("user", string(a.InputData))}, out)
	}
	if errors.Is(err, executor.ErrWaiting) {
		err = nil
	}
	span.End(err)
}

// mustJSON encodes what always encodes (log lines).
func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// execute runs the agent through its executor: its output_data, and its
// logs (a custom agent's), kept whether it failed or not.
func (s *Service) execute(ctx context.Context, r *tracked, a *store.Activation, agent *store.Agent) (*executor.Result, error) {
	e, err := s.Executors.For(agent.AgentTypeID, agent.Config)
	if err != nil {
		return nil, err
	}
	// A run that calls the platform back gets its agent key now, in a statement of its
	// own (no transaction waits on it); an end hook deletes it with the
	// activation's end, and from that end on it opens nothing.
	var key string
	if e.NeedsAgentKey() && a.AppID != "" && s.Auth != nil {
		if key, err = s.Auth.IssueAgentKey(ctx, a); err != nil {
			return nil, fmt.Errorf("issue the run's agent key: %w", err)
		}
	}
	res, err := e.Execute(ctx, &executor.Run{Kind: executor.Activation, ID: a.ID, UserID: a.UserID, AppID: a.AppID,
		AgentID: a.AgentID, ChatID: a.ChatID, CreatedAt: a.CreatedAt, Input: a.InputData, Context: a.Context,
		Metadata: a.Metadata, Config: agent.Config, TimeoutSeconds: agent.TimeoutSeconds, AgentKey: key,
		OnDelta: func(text string) { s.Events.PublishDelta(ctx, a.UserID, a.ID, cleantext.String(text)) },
		Journal: &journal{s: s, a: a, r: r}, APIKeyID: a.APIKeyID})
	if res == nil {
		res = &executor.Result{}
	}
	return res, err
}
