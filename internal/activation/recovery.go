package activation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/version"
)

// Worker is this process as a worker: its row in the workers table, its
// heartbeat and the local fast path. It starts before the queue and stops
// after it, so that River's jobs drain under a live heartbeat (another
// node's reaper would otherwise take them back mid-run) and the row goes
// only once nothing runs under its id.
type Worker struct {
	svc  *Service
	stop chan struct{}
	done sync.WaitGroup
	// running is set by Start and cleared by the first Stop.
	running atomic.Bool
}

// Worker is the service that registers this process, heartbeats for it
// and runs the fast path (see Worker).
func (s *Service) Worker() *Worker { return &Worker{svc: s} }

// Start registers the worker, opens the fast path and heartbeats.
func (w *Worker) Start(ctx context.Context) error {
	if err := w.svc.RegisterWorker(ctx); err != nil {
		return err
	}
	w.svc.startLocal()
	w.stop = make(chan struct{})
	w.running.Store(true)
	w.done.Add(1)
	go w.heartbeat(context.WithoutCancel(ctx), w.svc.self)
	if w.svc.Store.MultiNode() {
		w.done.Add(1)
		go w.watchCancels(context.WithoutCancel(ctx))
	}
	return nil
}

// cancelPollEvery is how often a worker reads the cancel flags of its runs.
const cancelPollEvery = time.Second

// watchCancels stops, within a second, the runs of this process that a
// cancel received by another node flagged: one read a second for all of
// them, however many wait on an LLM. On SQLite one process serves the
// database, and its cancels reach its runs at once (Cancel): no poll.
func (w *Worker) watchCancels(ctx context.Context) {
	defer w.done.Done()
	t := time.NewTicker(cancelPollEvery)
	defer t.Stop()
	var ids []string
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		ids = ids[:0]
		w.svc.running.Range(func(id, _ any) bool {
			ids = append(ids, id.(string))
			return true
		})
		if len(ids) == 0 {
			continue
		}
		cancelled, err := w.svc.Store.ActivationsCancelled(ctx, ids)
		if err != nil {
			w.svc.Log.Warn("read the cancels of running activations", "err", err)
			continue
		}
		for _, id := range cancelled {
			if r, ok := w.svc.running.Load(id); ok {
				r.(*tracked).cancel(errCancelled)
			}
		}
	}
}

func (w *Worker) heartbeat(ctx context.Context, self store.Worker) {
	defer w.done.Done()
	t := time.NewTicker(w.svc.opts.HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			self.HeartbeatAt = w.svc.now()
			self.Running = w.svc.runningCount()
			err := w.svc.Store.WorkerHeartbeat(ctx, &self)
			if err != nil {
				w.svc.Log.Warn("worker heartbeat", "err", err)
			}
			w.svc.Metrics.WorkerHeartbeat(err)
		}
	}
}

// Stop drains the fast path (runs finish until ctx ends, then hand their
// activations back), stops heartbeating and unregisters the worker.
func (w *Worker) Stop(ctx context.Context) error {
	if !w.running.CompareAndSwap(true, false) {
		return nil
	}
	w.svc.stopLocal(ctx)
	close(w.stop)
	w.done.Wait()
	if err := w.svc.Store.WorkerDelete(ctx, w.svc.self.ID); err != nil {
		return fmt.Errorf("unregister worker: %w", err)
	}
	return nil
}

// Recovery reaps the activations of workers that went silent, and follows
// the queue's pause for the fast path. Every worker process runs one, so a
// dead worker's activations come back as soon as any other worker (a
// restarted one included) is up. It needs the queue started (it enqueues),
// and a Worker: its own activations must not look orphaned.
type Recovery struct {
	svc  *Service
	stop chan struct{}
	done sync.WaitGroup
	// running is set by Start and cleared by the first Stop.
	running atomic.Bool
	// worker is the Worker StartRecovery started for it, stopped with it.
	worker *Worker
	// suspects are the activations the last sweep found running under
	// this worker's id but run by nothing here (loop only; see strays).
	suspects map[string]bool
}

// Recovery is the reaper service (see Recovery).
func (s *Service) Recovery() *Recovery { return &Recovery{svc: s} }

// RegisterWorker records this worker process before it takes any work: an
// activation claimed under a worker id with no row would look orphaned to
// other nodes' reapers.
func (s *Service) RegisterWorker(ctx context.Context) error {
	host, _ := os.Hostname()
	now := s.now()
	s.self = store.Worker{ID: s.opts.WorkerID, Hostname: host, PID: os.Getpid(), Version: version.Version,
		StartedAt: now, HeartbeatAt: now, Concurrency: s.opts.Concurrency}
	err := s.Store.WorkerHeartbeat(ctx, &s.self)
	s.Metrics.WorkerHeartbeat(err)
	if err != nil {
		return fmt.Errorf("register worker: %w", err)
	}
	return nil
}

// StartRecovery starts a Worker and a Recovery in one go, for a process
// whose queue already runs; stopping the Recovery stops both.
func (s *Service) StartRecovery(ctx context.Context) (*Recovery, error) {
	w := s.Worker()
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	r := s.Recovery()
	if err := r.Start(ctx); err != nil {
		return nil, errors.Join(err, w.Stop(ctx))
	}
	r.worker = w
	return r, nil
}

// Start reaps at once (a restarted worker picks up what a dead one left),
// then every heartbeat period.
func (r *Recovery) Start(ctx context.Context) error {
	r.svc.refreshPaused(ctx)
	r.stop = make(chan struct{})
	r.running.Store(true)
	r.done.Add(1)
	go r.loop(context.WithoutCancel(ctx))
	return nil
}

func (r *Recovery) loop(ctx context.Context) {
	defer r.done.Done()
	r.reap(ctx)
	t := time.NewTicker(r.svc.opts.HeartbeatEvery)
	defer t.Stop()
	// A pause set on another node reaches this one's fast path within a
	// second.
	pause := time.NewTicker(time.Second)
	defer pause.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-pause.C:
			r.svc.refreshPaused(ctx)
		case <-t.C:
			r.reap(ctx)
			r.strays(ctx)
		}
	}
}

// Stop ends the reaper (and the Worker StartRecovery started with it).
func (r *Recovery) Stop(ctx context.Context) error {
	if !r.running.CompareAndSwap(true, false) {
		return nil
	}
	close(r.stop)
	r.done.Wait()
	if r.worker != nil {
		return r.worker.Stop(ctx)
	}
	return nil
}

// reap hands back the running activations (and, through DeadWorkerHooks,
// the pipeline steps) of every worker silent for DeadAfter, and of workers
// that hold either without a worker row; then the River jobs that such
// workers had fetched (queue.RescueStranded). A process that holds its
// SQLite database alone (store.Sole) knows every other worker dead at
// once: a restart after a crash resumes the crashed runs without waiting
// out DeadAfter.
func (r *Recovery) reap(ctx context.Context) {
	s := r.svc
	horizon := s.now().Add(-s.opts.DeadAfter)
	if s.Store.Sole() {
		horizon = s.now()
	}
	workers, err := s.Store.WorkerList(ctx)
	if err != nil {
		s.Log.Warn("find dead workers", "err", err)
		return
	}
	live := map[string]bool{s.opts.WorkerID: true}
	var ids []string
	for _, w := range workers {
		if w.HeartbeatAt.Before(horizon) {
			ids = append(ids, w.ID)
		} else {
			live[w.ID] = true
		}
	}
	orphans, err := s.Store.WorkersWithoutHeartbeat(ctx)
	if err != nil {
		s.Log.Warn("find orphaned activations", "err", err)
		return
	}
	ids = append(ids, orphans...)
	for _, id := range ids {
		if id == s.opts.WorkerID {
			continue
		}
		n, err := s.recoverWorker(ctx, id)
		if err != nil {
			s.Log.Error("recover activations of a dead worker", "worker_id", id, "err", err)
			continue
		}
		others, err := s.runDeadWorkerHooks(ctx, id)
		if err != nil {
			s.Log.Error("recover the work of a dead worker", "worker_id", id, "err", err)
			continue
		}
		if err := s.Store.WorkerDelete(ctx, id); err != nil {
			s.Log.Warn("remove dead worker", "worker_id", id, "err", err)
		}
		s.Log.Warn("worker presumed dead: its activations were recovered", "worker_id", id, "activations", n, "other", others)
	}
	// A job fetched by a worker that died before its claim: the activation
	// or step is still queued, and River would leave the job running for
	// good. Jobs of live workers, and younger than DeadAfter, stay.
	n, err := s.Queue.RescueStranded(ctx, horizon, func(id string) bool { return live[id] })
	if err != nil {
		s.Log.Error("rescue the queue jobs of dead workers", "err", err)
	} else if n > 0 {
		s.Log.Warn("queue jobs of dead workers handed back", "jobs", n)
	}
}

// strays hands back the activations that run under this worker's id in
// the database but are run by nothing on this process: without a River
// job behind a fast-path run (local.go), a run lost while the process
// lives would otherwise stay running for good. A run is tracked before the
// commit that claims it and until its end is recorded, so only a moment
// between two of its own transactions (a run giving itself up to wait)
// looks untracked: one is handed back only when two sweeps a heartbeat
// apart both found it.
func (r *Recovery) strays(ctx context.Context) {
	s := r.svc
	ids, err := s.Store.ActivationsRunningOn(ctx, s.opts.WorkerID)
	if err != nil {
		s.Log.Warn("find this worker's lost activations", "err", err)
		return
	}
	found := map[string]bool{}
	var lost []string
	for _, id := range ids {
		if _, here := s.running.Load(id); here {
			continue
		}
		found[id] = true
		if r.suspects[id] {
			lost = append(lost, id)
		}
	}
	r.suspects = found
	if len(lost) == 0 {
		return
	}
	if err := s.requeue(ctx, s.opts.WorkerID, lost); err != nil {
		s.Log.Error("hand back this worker's lost activations", "err", err)
		return
	}
	s.Log.Warn("activations this worker had lost track of were handed back", "activations", len(lost))
}

func (s *Service) runDeadWorkerHooks(ctx context.Context, workerID string) (int, error) {
	total := 0
	for _, h := range s.DeadWorkerHooks {
		n, err := h(ctx, workerID)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// WorkerID names this process in the workers table: what it claims (an
// activation, a pipeline step) carries this id, and the reaper hands it
// back once the process stops heartbeating.
func (s *Service) WorkerID() string { return s.opts.WorkerID }

// recoverWorker re-queues or, past MaxAttempts, fails each activation a
// dead worker was running.
func (s *Service) recoverWorker(ctx context.Context, workerID string) (int, error) {
	ids, err := s.Store.ActivationsRunningOn(ctx, workerID)
	if err != nil {
		return 0, err
	}
	return len(ids), s.requeue(ctx, workerID, ids)
}

// requeue re-queues or, past MaxAttempts, fails each of activations ids
// that still runs under workerID.
func (s *Service) requeue(ctx context.Context, workerID string, ids []string) error {
	for _, id := range ids {
		err := s.Store.InTx(ctx, func(tx *store.Store) error {
			a, err := tx.ActivationGet(ctx, id)
			if err != nil || a.Status != store.StatusRunning || a.WorkerID != workerID {
				return err
			}
			if a.Attempt >= s.opts.MaxAttempts {
				ended, ok, err := tx.ActivationFinish(ctx, id, store.Outcome{Status: store.StatusFailed, CompletedAt: s.now(),
					Error: fmt.Sprintf("The worker running this activation stopped responding (attempt %d of %d)", a.Attempt, s.opts.MaxAttempts)})
				if err != nil || !ok {
					return err
				}
				return s.endedTx(ctx, tx, ended, nil)
			}
			return s.requeueTx(ctx, tx, id)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) runningCount() int {
	n := 0
	s.running.Range(func(any, any) bool { n++; return true })
	return n
}

// Worker status, for GET /api/v1/worker/status.
type Status struct {
	Workers    []store.Worker
	Queued     int
	Running    int
	LastMinute [2]int // completed, failed
	LastHour   [2]int
}

// Status reports the worker processes, queue depth and throughput.
func (s *Service) Status(ctx context.Context) (*Status, error) {
	st := &Status{}
	var err error
	if st.Workers, err = s.Store.WorkerList(ctx); err != nil {
		return nil, err
	}
	if st.Queued, st.Running, err = s.Store.ActivationDepth(ctx); err != nil {
		return nil, err
	}
	now := s.now()
	if st.LastMinute[0], st.LastMinute[1], err = s.Store.ActivationCountsSince(ctx, now.Add(-time.Minute)); err != nil {
		return nil, err
	}
	if st.LastHour[0], st.LastHour[1], err = s.Store.ActivationCountsSince(ctx, now.Add(-time.Hour)); err != nil {
		return nil, err
	}
	return st, nil
}
