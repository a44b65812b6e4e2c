// Package warm runs functions on goroutines that outlive them, so that the
// stack a deep call grows is grown once, not on every call.
//
// A new goroutine starts with a small stack and copies it each time it
// doubles; code that goes deep (a database driver under our services
// under an SDK's handler) paid that on every call when each call had a
// goroutine of its own: an MCP tools/call on PostgreSQL spent ~50 µs of
// its ~1.3 ms copying stacks, where a route served on net/http's
// connection goroutine (long-lived, its stack already grown) paid
// nothing. A Pool keeps the goroutines that ran a function for a while,
// waiting for the next one.
package warm

import (
	"slices"
	"sync"
	"time"
)

// Pool runs functions on warm goroutines: as many as run at once, each
// kept idleFor after its last function, at most maxIdle of them.
type Pool struct {
	idleFor time.Duration
	// maxIdle bounds the goroutines kept: after a burst of thousands of
	// runs at once, as many idle goroutines would each hold the stack its
	// run grew, where the next runs, come one by one, need a few.
	maxIdle int
	mu      sync.Mutex
	// idle are the goroutines waiting for a function, the last to have
	// run one last: it is taken first, and those that wait longest end.
	idle   []*worker
	closed bool
}

// A worker is a warm goroutine; who takes it from idle sends it one
// function (Close closes the channel instead).
type worker struct {
	work chan func()
}

// New returns a pool that keeps at most maxIdle idle goroutines, each
// for idleFor.
func New(idleFor time.Duration, maxIdle int) *Pool {
	return &Pool{idleFor: idleFor, maxIdle: maxIdle}
}

// Go runs f on a warm goroutine, or a new one when none is idle (or the
// pool is closed), as a go statement does: a panic of f ends the process.
func (p *Pool) Go(f func()) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		go f()
		return
	}
	var w *worker
	if n := len(p.idle); n > 0 {
		w, p.idle = p.idle[n-1], p.idle[:n-1]
	}
	p.mu.Unlock()
	if w == nil {
		w = &worker{work: make(chan func(), 1)}
		go p.serve(w)
	}
	w.work <- f
}

func (p *Pool) serve(w *worker) {
	idle := time.NewTimer(p.idleFor)
	defer idle.Stop()
	for {
		select {
		case f, ok := <-w.work:
			if !ok || !p.run(w, f) {
				return
			}
			idle.Reset(p.idleFor)
		case <-idle.C:
			p.mu.Lock()
			i := slices.Index(p.idle, w)
			if i >= 0 {
				p.idle = slices.Delete(p.idle, i, i+1)
			}
			p.mu.Unlock()
			if i >= 0 {
				return
			}
			// Taken meanwhile: its task is on the way.
			idle.Reset(p.idleFor)
		}
	}
}

// run runs f, then puts w back among the idle; it reports whether w
// waits for more (not once the pool is closed, nor when maxIdle wait
// already). A panic of f is not recovered: it ends the process with the
// stack where it began.
func (p *Pool) run(w *worker, f func()) bool {
	f()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) >= p.maxIdle {
		return false
	}
	p.idle = append(p.idle, w)
	return true
}

// Close ends the idle goroutines, and the others once their function has
// returned; functions started after it run on goroutines of their own.
func (p *Pool) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, w := range idle {
		close(w.work)
	}
}
