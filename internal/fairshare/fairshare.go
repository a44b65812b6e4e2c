// Package fairshare shares a fixed number of slots (activation slots,
// JavaScript slots, pipeline and webhook workers) between owners (users)
// so that one owner cannot keep the others out.
//
// Two rules make it fair. A slot that frees goes to the waiting owner that
// holds the fewest slots (ties: the one waiting longest), not to whoever
// asked first; so an owner with a thousand runs queued and an owner with
// one take turns. And one owner holds at most perOwner slots, by default
// all but a quarter (at least one) of them: the rest is kept for the
// others. The second rule is what the first cannot do alone: the work in a
// slot cannot be paused (a QuickJS run cannot be suspended and resumed; an
// LLM call or a delivery in flight cannot be set aside), so an owner alone
// who filled every slot with runs that last an hour would keep a newcomer
// waiting an hour, however fair the next grant. With the reserve, the
// newcomer starts at once, and the owner alone still has three quarters
// of the slots, which for the JavaScript slots (2 × CPUs) is more than
// every core.
//
// An uncontended Acquire or Release takes a mutex and moves a counter: no
// allocation, no channel. Waiting allocates one waiter.
package fairshare

import (
	"context"
	"sync"
)

// Pool is a set of size slots shared between owners.
type Pool struct {
	size, perOwner int

	mu      sync.Mutex
	total   int
	held    map[string]int
	waiters []*waiter // in arrival order
}

type waiter struct {
	owner   string
	ready   chan struct{} // closed when granted
	granted bool
}

// DefaultPerOwner is the share one owner may hold of size slots: all of
// one or two slots' pools but one, else all but a quarter.
func DefaultPerOwner(size int) int {
	if size <= 1 {
		return size
	}
	return size - max(1, size/4)
}

// New returns a pool of size slots (at least 1) of which one owner holds
// at most perOwner; perOwner ≤ 0 means DefaultPerOwner(size).
func New(size, perOwner int) *Pool {
	size = max(1, size)
	if perOwner <= 0 {
		perOwner = DefaultPerOwner(size)
	}
	return &Pool{size: size, perOwner: min(perOwner, size), held: map[string]int{}}
}

// Size is the number of slots.
func (p *Pool) Size() int { return p.size }

// PerOwner is the most slots one owner holds at once.
func (p *Pool) PerOwner() int { return p.perOwner }

// Acquire takes a slot for owner, waiting while the pool is full or owner
// holds its share; ctx's end stops the wait (its error is returned, and
// no slot is held). Every successful Acquire needs one Release.
func (p *Pool) Acquire(ctx context.Context, owner string) error {
	p.mu.Lock()
	// Whenever a slot is free, no eligible owner is left waiting
	// (dispatch), so taking it jumps ahead of no one.
	if p.canTake(owner) {
		p.take(owner)
		p.mu.Unlock()
		return nil
	}
	if err := ctx.Err(); err != nil {
		p.mu.Unlock()
		return err
	}
	w := &waiter{owner: owner, ready: make(chan struct{})}
	p.waiters = append(p.waiters, w)
	p.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	if w.granted {
		// Granted as the wait ended: hand the slot on.
		p.mu.Unlock()
		p.Release(owner)
		return ctx.Err()
	}
	for i, o := range p.waiters {
		if o == w {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			break
		}
	}
	p.mu.Unlock()
	return ctx.Err()
}

// TryAcquire takes a slot for owner if one is free for it now, without
// waiting: for a River job, which snoozes instead of holding a worker
// while it waits.
func (p *Pool) TryAcquire(owner string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.canTake(owner) {
		return false
	}
	p.take(owner)
	return true
}

// Full reports whether owner holds its whole share, so that an Acquire
// would wait for one of its own slots: a River job then snoozes and
// leaves the worker that fetched it to the others.
func (p *Pool) Full(owner string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[owner] >= p.perOwner
}

// Release frees a slot of owner and grants it to the waiter it is due to.
func (p *Pool) Release(owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.held[owner]
	if n <= 0 {
		panic("fairshare: Release without Acquire")
	}
	if n == 1 {
		delete(p.held, owner)
	} else {
		p.held[owner] = n - 1
	}
	p.total--
	p.dispatch()
}

func (p *Pool) canTake(owner string) bool {
	return p.total < p.size && p.held[owner] < p.perOwner
}

func (p *Pool) take(owner string) {
	p.held[owner]++
	p.total++
}

// dispatch grants the free slots to the eligible waiters holding the
// fewest slots, the longest waiting first among equals.
func (p *Pool) dispatch() {
	for p.total < p.size {
		best := -1
		for i, w := range p.waiters {
			n := p.held[w.owner]
			if n < p.perOwner && (best < 0 || n < p.held[p.waiters[best].owner]) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		w := p.waiters[best]
		p.waiters = append(p.waiters[:best], p.waiters[best+1:]...)
		p.take(w.owner)
		w.granted = true
		close(w.ready)
	}
}
