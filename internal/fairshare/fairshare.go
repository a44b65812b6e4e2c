// Package fairshare shares a fixed number of slots (activation slots,
// JavaScript slots, pipeline and webhook workers) between owners (users)
// so that one owner cannot keep the others out.
//
// A slot that frees goes to the waiting owner that holds the fewest slots
// (ties: the one waiting longest), not to whoever asked first; so an owner
// with a thousand runs queued and an owner with one take turns.
//
// That rule alone cannot help a newcomer when one owner, alone until then,
// fills every slot with runs that last an hour: nothing frees. The work in
// a slot cannot be paused (a QuickJS run cannot be suspended and resumed;
// an LLM call or a delivery in flight cannot be set aside). So a Shared
// pool lends: an owner alone may take every slot, and while it holds more
// than its share (size divided by the owners holding or waiting), an owner
// below its share may go past size by up to Overdraft(size) slots. The
// newcomer starts at once, the owner over its share waits until it is back
// under it, and the pool never holds more than size + Overdraft(size): a
// bound the memory of what runs in the slots can be sized by.
//
// A pool made with New instead holds each owner to a fixed number of
// slots and never lends (webhook deliveries: per user, per destination).
//
// An uncontended Acquire or Release takes a mutex and moves a counter: no
// allocation, no channel. Waiting allocates one waiter.
package fairshare

import (
	"context"
	"slices"
	"sync"
)

// Pool is a set of size slots shared between owners.
type Pool struct {
	size, perOwner, overdraft int

	mu      sync.Mutex
	total   int
	held    map[string]int
	waiting map[string]int // waiters per owner
	waiters []*waiter      // in arrival order
}

type waiter struct {
	owner   string
	ready   chan struct{} // closed when granted
	granted bool
}

// Overdraft is how many slots a Shared pool of size lends past size to
// owners below their share: a quarter, at least one.
func Overdraft(size int) int { return max(1, size/4) }

// New returns a pool of size slots (at least 1) of which one owner holds
// at most perOwner (≤ 0: all of them), and that never lends.
func New(size, perOwner int) *Pool {
	size = max(1, size)
	if perOwner <= 0 {
		perOwner = size
	}
	return &Pool{size: size, perOwner: min(perOwner, size), held: map[string]int{}, waiting: map[string]int{}}
}

// Shared returns a pool of size slots that an owner alone may fill, and
// that lends up to Overdraft(size) more to owners below their share while
// another holds more than its own.
func Shared(size int) *Pool {
	p := New(size, 0)
	p.overdraft = Overdraft(p.size)
	return p
}

// Size is the number of slots.
func (p *Pool) Size() int { return p.size }

// Capacity is the most slots the pool ever holds at once: its size and
// what it lends.
func (p *Pool) Capacity() int { return p.size + p.overdraft }

// Held is the number of slots held now, lent ones included.
func (p *Pool) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total
}

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
	p.waiting[owner]++
	// One more owner waiting lowers the others' shares, which may let
	// this one borrow at once.
	p.dispatch()
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
	p.unwait(owner)
	p.dispatch() // one owner fewer: the others' shares grow
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

// Full reports whether owner can take no slot now and holds its share
// already, so that an Acquire would wait for one of its own slots: a
// River job then snoozes and leaves the worker that fetched it to the
// others.
func (p *Pool) Full(owner string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.held[owner]
	return h >= p.perOwner || (!p.canTake(owner) && h >= p.share(owner))
}

// Room tells a claimer of queued work what the pool can start now: free,
// the slots nobody holds or waits for; lend, what it would lend past its
// size to a newcomer (an owner holding and waiting for none); and crowded,
// the owners holding at least a newcomer's share (at most limit of them,
// the heaviest), whose queued work should wait while others' is queued.
func (p *Pool) Room(limit int) (free, lend int, crowded []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	busy := p.total + len(p.waiters)
	free = max(0, p.size-busy)
	share := p.share("")
	for o, n := range p.held {
		if n >= share {
			crowded = append(crowded, o)
		}
		if n > share && busy >= p.size {
			lend = max(0, p.size+p.overdraft-busy)
		}
	}
	if len(crowded) > limit {
		slices.SortFunc(crowded, func(a, b string) int { return p.held[b] - p.held[a] })
		crowded = crowded[:limit]
	}
	return free, lend, crowded
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

// canTake: a free slot, or one lent to an owner below its share while
// another holds more than its own.
func (p *Pool) canTake(owner string) bool {
	h := p.held[owner]
	switch {
	case h >= p.perOwner:
		return false
	case p.total < p.size:
		return true
	case p.total >= p.size+p.overdraft:
		return false
	}
	share := p.share(owner)
	if h >= share {
		return false
	}
	for _, n := range p.held {
		if n > share {
			return true
		}
	}
	return false
}

// share is owner's fair part of the slots: the size divided by the owners
// holding or waiting for slots, owner counted, rounded up.
func (p *Pool) share(owner string) int {
	active := len(p.held)
	for o := range p.waiting {
		if _, holds := p.held[o]; !holds {
			active++
		}
	}
	if _, holds := p.held[owner]; !holds && p.waiting[owner] == 0 {
		active++
	}
	return (p.size + active - 1) / active
}

func (p *Pool) take(owner string) {
	p.held[owner]++
	p.total++
}

func (p *Pool) unwait(owner string) {
	if p.waiting[owner]--; p.waiting[owner] <= 0 {
		delete(p.waiting, owner)
	}
}

// dispatch grants what can be granted to the eligible waiters holding the
// fewest slots, the longest waiting first among equals.
func (p *Pool) dispatch() {
	for len(p.waiters) > 0 {
		best := -1
		for i, w := range p.waiters {
			if (best < 0 || p.held[w.owner] < p.held[p.waiters[best].owner]) && p.canTake(w.owner) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		w := p.waiters[best]
		p.waiters = append(p.waiters[:best], p.waiters[best+1:]...)
		p.unwait(w.owner)
		p.take(w.owner)
		w.granted = true
		close(w.ready)
	}
}
