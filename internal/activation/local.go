package activation

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/riverqueue/river"
)

// The local fast path. A transactional insert does not wake River's
// producer without LISTEN/NOTIFY, so a queued job waits for the next poll;
// and River's fetch and completion are two more write transactions per
// activation. When the process that creates an activation is a worker with
// a free slot, it runs the activation at once. Durability is unchanged: the
// activation and its job still commit together. The job is inserted
// scheduled for deferFor later, so River leaves it alone while the
// activation runs here, and the transaction that records the end cancels
// it. If the process dies before its run claims the activation, that job
// runs it once due; if it dies after, the reaper re-queues the activation
// with a fresh job within a minute. A job that comes due while its
// activation still runs here completes at once, as a no-op.
type local struct {
	slots  chan struct{} // one token per concurrent activation (AP_WORKERS)
	paused atomic.Bool   // the queue is paused: run nothing locally
	ctx    context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// deferFor is when a locally run activation's job becomes due: after the
// 30 s in which a dead worker is noticed, plus a heartbeat.
const deferFor = 45 * time.Second

func (s *Service) startLocal() {
	ctx, cancel := context.WithCancel(context.Background())
	s.local.Store(&local{slots: make(chan struct{}, max(1, s.opts.Concurrency)), ctx: ctx, stop: cancel})
}

// stopLocal lets local runs finish until ctx ends, then stops them (they
// hand their activations back to the queue).
func (s *Service) stopLocal(ctx context.Context) {
	l := s.local.Load()
	if l == nil {
		return
	}
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		l.stop()
		<-done
	}
	l.stop()
}

// takeSlot reserves a local slot without waiting; false means "leave it to
// River" (no local worker, the queue paused, or every slot busy).
func (s *Service) takeSlot() bool {
	l := s.local.Load()
	if l == nil || l.paused.Load() || l.ctx.Err() != nil {
		return false
	}
	select {
	case l.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// waitSlot reserves a slot for a River job, waiting while local runs hold
// them all, so that AP_WORKERS bounds both paths together.
func (s *Service) waitSlot(ctx context.Context) (release func(), err error) {
	l := s.local.Load()
	if l == nil {
		return func() {}, nil
	}
	select {
	case l.slots <- struct{}{}:
		return func() { <-l.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runLocal runs a created activation on this process (its slot taken).
func (s *Service) runLocal(id string, jobID int64) {
	l := s.local.Load()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer func() { <-l.slots }()
		if err := s.run(l.ctx, id, jobID); err != nil && err != errShutdown {
			s.Log.Error("run activation", "activation_id", id, "err", err)
		}
	}()
}

// deferredOpts is the job of an activation about to run locally: a safety
// net, cancelled when the activation ends.
func deferredOpts(priority int) *river.InsertOpts {
	opts := jobOpts(priority)
	opts.ScheduledAt = time.Now().Add(deferFor)
	return opts
}

// refreshPaused follows the queue's pause state, which an admin may set on
// any node.
func (s *Service) refreshPaused(ctx context.Context) {
	l := s.local.Load()
	if l == nil {
		return
	}
	q, err := s.Queue.Client().QueueGet(ctx, queue.Activations)
	if err == nil {
		l.paused.Store(q.PausedAt != nil)
	}
}
