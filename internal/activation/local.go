package activation

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentplatform/agentplatform/internal/fairshare"
	"github.com/agentplatform/agentplatform/internal/gcpace"
	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/telemetry"
	"github.com/agentplatform/agentplatform/internal/warm"
)

// The local fast path. When the process that creates an activation is a
// worker with room for it, the creating transaction also claims it for
// this process (queued, then running at once: both events are written), and
// the process runs it as soon as one of its AP_MAX_INFLIGHT slots is free;
// one it has no room for stays queued for a dispatcher (dispatch.go), which
// runs what it claims the same way. Such a run has no River job: the
// activation row, running under this worker's id, is what stands for it. A
// stopping process hands its runs back to the queue (handBack); when the
// process dies, any worker's reaper (a restarted one included) re-queues
// them once its heartbeat is DeadAfter old; and a run this live process
// lost track of (a bug) comes back through its own sweep (strays).
type local struct {
	// claims bounds the activations this process has claimed and not yet
	// executed to AP_MAX_INFLIGHT, so that one claimed here (running)
	// waits for a slot only while River runs hold it.
	claims chan struct{}
	// slots are the activations in flight (AP_MAX_INFLIGHT), local and
	// River runs together, shared fairly between users: one user's runs
	// take at most their share while others wait (fairshare). A slot is
	// held through the run's waits (an LLM call, a tool, a webhook
	// agent), which use no CPU; what does (JavaScript) takes a CPU slot
	// of its own as well (runtimes.JavaScript).
	slots  *fairshare.Pool
	paused atomic.Bool // the queue is paused: run nothing locally
	// pauseMu, pauseGen and pausing order this process's own pause
	// changes and the refreshes, so that a refresh read before a change
	// was stored in the queue cannot undo it.
	pauseMu  sync.Mutex
	pauseGen uint64
	pausing  int // changes being stored (SetPaused)
	ctx      context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup
	// warm runs the runs: on goroutines kept from earlier runs, whose
	// stacks have grown to what a run needs (a new one's copies itself
	// as it grows, on every run).
	warm *warm.Pool

	// The dispatcher (dispatch.go): wake has it look for queued
	// activations, quit stops it, dispatched is closed once it has.
	wake, quit, dispatched chan struct{}
	// backlog: the dispatcher last stopped for want of room, not of
	// work, so a run's end wakes it.
	backlog atomic.Bool
	// othersQuiet: until then the dispatcher does not look for the work
	// of users other than the crowded ones (dispatch.go); its own.
	othersQuiet time.Time
}

// warmRuns bounds the warm goroutines kept for the next runs: a run
// ending hands its goroutine to one starting, so a few hundred cover
// what steady load needs; after a burst of thousands, the rest end
// rather than hold the stacks their runs grew.
const warmRuns = 256

func (s *Service) startLocal() {
	ctx, cancel := context.WithCancel(context.Background())
	n := max(1, s.opts.Concurrency)
	l := &local{claims: make(chan struct{}, n), slots: fairshare.Shared(n), ctx: ctx, stop: cancel,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), dispatched: make(chan struct{}), warm: warm.New(10*time.Second, warmRuns)}
	s.local.Store(l)
	// A restarted worker takes what was queued meanwhile at once.
	l.poke()
	go s.dispatch(l)
}

// stopLocal lets local runs finish until ctx ends, then stops them (they
// hand their activations back to the queue).
func (s *Service) stopLocal(ctx context.Context) {
	l := s.local.Load()
	if l == nil {
		return
	}
	// Nothing more is claimed while the runs drain.
	close(l.quit)
	<-l.dispatched
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		l.stop()
		<-done
	}
	l.stop()
	l.warm.Close()
}

// takeClaim reserves room for one more claimed activation without waiting;
// nil means "leave it to River" (no local worker, the queue paused, or this
// process has claimed all it may).
func (s *Service) takeClaim() (release func()) {
	l := s.local.Load()
	if l == nil || l.paused.Load() || l.ctx.Err() != nil {
		return nil
	}
	select {
	case l.claims <- struct{}{}:
		// The runs this process holds are what its memory grows with.
		gcpace.Add(1)
		return sync.OnceFunc(func() { <-l.claims; gcpace.Add(-1) })
	default:
		return nil
	}
}

// waitSlot reserves an in-flight slot for a run of owner, waiting while
// AP_MAX_INFLIGHT activations are in flight (local and River runs
// together) or owner's take their share of them.
func (s *Service) waitSlot(ctx context.Context, owner string) (release func(), err error) {
	l := s.local.Load()
	if l == nil {
		return func() {}, nil
	}
	if err := l.slots.Acquire(ctx, owner); err != nil {
		return nil, err
	}
	return sync.OnceFunc(func() { l.slots.Release(owner) }), nil
}

// trackLocal tracks the local run of activation id (see track). The run
// outlives the request that created it (ctx), but continues its trace,
// when there is one.
func (s *Service) trackLocal(ctx context.Context, id string) *tracked {
	return s.track(telemetry.Continue(s.local.Load().ctx, ctx), id)
}

// runLocal runs an activation claimed for this process by the creating
// transaction or by the dispatcher, tracked as r; release frees its claim
// once it has executed.
func (s *Service) runLocal(r *tracked, a *store.Activation, agent *store.Agent, release func()) {
	l := s.local.Load()
	l.wg.Add(1)
	l.warm.Go(func() {
		slot := func(ctx context.Context) (func(), error) {
			free, err := s.waitSlot(ctx, a.UserID)
			if err != nil {
				return nil, err
			}
			return func() { free(); release() }, nil
		}
		end := s.runToEnd(l.ctx, r, a, agent, slot)
		// With more runs in flight than the pool keeps warm, the ends
		// queue for the writer (runToEnd), and this goroutine, its stack
		// grown, goes back to the pool or ends.
		end(len(l.claims) > warmRuns, func(err error) {
			defer l.wg.Done()
			release()
			if l.backlog.Load() {
				l.poke()
			}
			if err != nil && err != errShutdown {
				s.Log.Error("run activation", "activation_id", a.ID, "err", err)
			}
		})
	})
}

// refreshPaused follows the queue's pause state, which an admin may set on
// any node.
func (s *Service) refreshPaused(ctx context.Context) {
	l := s.local.Load()
	if l == nil {
		return
	}
	l.pauseMu.Lock()
	gen := l.pauseGen
	l.pauseMu.Unlock()
	q, err := s.Queue.Client().QueueGet(ctx, queue.Activations)
	if err != nil {
		return
	}
	l.pauseMu.Lock()
	defer l.pauseMu.Unlock()
	// A change made meanwhile, or still being stored, is newer than
	// what was read.
	if l.pauseGen == gen && l.pausing == 0 {
		l.paused.Store(q.PausedAt != nil)
	}
}
