package events

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// A client that resumes from the last seq it received must have received
// every seq before it, and its replay (Bus.Replay) must meet its live
// stream without a gap. Events are published after their commits by as
// many goroutines as run activations, and other nodes' arrive through
// batched notifications: this node hears them in any order. So each user
// with subscribers on this node has a userStream that hands the events out
// in seq order. Token fragments have no seq and pass straight through.
//
// On SQLite seqs are dense and commit in order (the user's counter, one
// writer): an event ahead of a gap waits for the ones in between, and a gap
// that lasts gapWait (a publisher descheduled) is filled from the store.
//
// On PostgreSQL a seq comes from its transaction's id (store.EventAppend):
// seqs have holes, and a transaction with a lower one may commit after one
// with a higher. An event is final once the store's horizon (the oldest
// transaction still open) has passed it: nothing will ever be stored below
// it. So the stream holds published events until then (horizon.go): once
// per tick, one statement reads the node's horizon and, for the users with
// held events, which seqs the store has below it; the held ones go out in
// order, and one the store has but nobody published (a node died between
// commit and publish, a notification dropped or late) is read from the
// store once it has been missing for gapWait.

const (
	// gapWait is how long an event waits for its predecessors to be
	// published before they are read from the store.
	gapWait = 100 * time.Millisecond
	// maxHeld bounds the events waiting for a gap; beyond it the gap is
	// filled at once.
	maxHeld = 4096
)

// userStream is one user's subscribers on this node and their order.
type userStream struct {
	bus  *Bus
	user string
	// ready is closed once next is known; a subscriber that joins returns
	// only then, so that its replay from the store meets the live events.
	ready chan struct{}

	mu    sync.Mutex
	subs  map[*Subscription]struct{}
	based bool            // next is set
	next  int64           // the seq to hand out next; 0: the first one to come
	held  map[int64]Event // arrived ahead of next
	// timer fills the gap at next once it has lasted gapWait (dense).
	timer   *time.Timer
	armed   bool
	filling bool
	gone    bool // removed from the bus

	// sparse: seqs have holes and become final at the horizon (PostgreSQL,
	// horizon.go). missing is when the first seq the store has below the
	// horizon but nobody published was noticed; overflow, that more than
	// maxHeld events waited.
	sparse   bool
	missing  time.Time
	overflow bool
}

func newUserStream(b *Bus, user string) *userStream {
	return &userStream{bus: b, user: user, ready: make(chan struct{}),
		subs: map[*Subscription]struct{}{}, held: map[int64]Event{}, sparse: b.store.MultiNode()}
}

// start sets where the stream begins: next, below which every event is
// final and in the store, for the subscribers' replay; every event from next
// on is either in the tail read with it (sparse: committed already, perhaps
// published before the stream existed) or published after this, and goes
// out live, in order.
func (us *userStream) start() {
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	next, tail, err := us.bus.store.EventTail(ctx, us.user)
	cancel()
	us.mu.Lock()
	us.based = true
	if err != nil {
		// Best effort: in order from the first event that comes.
		us.bus.log.Warn("events: read where the stream starts; live events start from the next to come", "user_id", us.user, "err", err)
		for seq := range us.held {
			if us.next == 0 || seq < us.next {
				us.next = seq
			}
		}
	} else {
		us.next = next
		for seq := range us.held {
			if seq < us.next {
				delete(us.held, seq)
			}
		}
		for i := range tail {
			if _, ok := us.held[tail[i].Seq]; ok {
				continue
			}
			ev, err := fromRow(&tail[i])
			if err != nil {
				us.bus.log.Warn("events: decode a stored event", "err", err)
				continue
			}
			us.held[ev.Seq] = ev
		}
	}
	for s := range us.subs {
		s.skipHeld(us.held)
	}
	kick := us.sparse && len(us.held) > 0
	if !us.sparse {
		us.drain()
	}
	empty := len(us.subs) == 0
	us.mu.Unlock()
	close(us.ready)
	if kick {
		us.bus.horizon.kick(us.bus)
	}
	if empty {
		us.bus.prune(us)
	}
}

// accept takes a published event; it reports whether the stream may have
// lost its last subscriber.
func (us *userStream) accept(ev Event) (empty bool) {
	kick := false
	defer func() {
		if kick { // after the unlock: kick takes the bus's lock
			us.bus.horizon.kick(us.bus)
		}
	}()
	us.mu.Lock()
	defer us.mu.Unlock()
	if us.gone {
		return false
	}
	if ev.Seq == 0 {
		us.fanout(ev)
		return len(us.subs) == 0
	}
	if us.sparse {
		if us.based && ev.Seq < us.next {
			return false // out already, or in the replay
		}
		us.held[ev.Seq] = ev
		us.overflow = us.overflow || len(us.held) > maxHeld
		kick = true
		return false
	}
	if us.based && us.next == 0 {
		us.next = ev.Seq
	}
	switch {
	case us.based && ev.Seq < us.next:
		return false // out already, or filled from the store
	case !us.based || ev.Seq > us.next:
		us.held[ev.Seq] = ev
		if us.based {
			if len(us.held) > maxHeld {
				us.arm(0)
			} else if !us.armed {
				us.arm(gapWait)
			}
		}
		return false
	}
	us.fanout(ev)
	us.next++
	us.drain()
	return len(us.subs) == 0
}

// drain hands out the held events that follow next without a gap, then
// waits afresh for the gap at the new next, if any.
func (us *userStream) drain() {
	moved := false
	for {
		ev, ok := us.held[us.next]
		if !ok {
			break
		}
		delete(us.held, us.next)
		us.fanout(ev)
		us.next++
		moved = true
	}
	switch {
	case len(us.held) == 0:
		us.disarm()
	case moved || !us.armed:
		us.arm(gapWait)
	}
}

// fanout offers ev to the matching subscribers; one that is too slow is
// dropped from the stream.
func (us *userStream) fanout(ev Event) {
	for s := range us.subs {
		if s.filter.Match(&ev) && !s.skips(&ev) && !s.offer(ev) {
			delete(us.subs, s)
		}
	}
}

func (us *userStream) arm(d time.Duration) {
	us.armed = true
	if us.timer == nil {
		us.timer = time.AfterFunc(d, us.fill)
	} else {
		us.timer.Reset(d)
	}
}

func (us *userStream) disarm() {
	if us.armed {
		us.timer.Stop()
		us.armed = false
	}
}

// fill reads the events of the gap at next from the store and hands them
// out, with the held ones they unblock.
func (us *userStream) fill() {
	b := us.bus
	if !b.fillStarts() {
		return
	}
	defer b.fills.Done()
	us.mu.Lock()
	us.armed = false
	if us.gone || us.filling || len(us.held) == 0 {
		us.mu.Unlock()
		return
	}
	us.filling = true
	from, upto := us.next-1, us.next
	for seq := range us.held {
		upto = max(upto, seq)
	}
	us.mu.Unlock()

	// Every seq below a held one has committed: the store has them all.
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	var evs []Event
	err := b.Replay(ctx, us.user, from, func(ev Event) bool {
		evs = append(evs, ev)
		return ev.Seq < upto
	})
	cancel()

	us.mu.Lock()
	us.filling = false
	if us.gone {
		us.mu.Unlock()
		return
	}
	if err != nil {
		// The subscribers cannot be given the gap: drop them, and their
		// clients resume from their last seq.
		us.mu.Unlock()
		b.log.Warn("events: read the events of a gap", "user_id", us.user, "after", from, "err", err)
		b.dropStream(us)
		return
	}
	b.log.Debug("events: gap filled from the store", "user_id", us.user, "after", from, "read", len(evs))
	for _, ev := range evs {
		if ev.Seq < us.next {
			continue
		}
		if ev.Seq > us.next {
			break
		}
		delete(us.held, ev.Seq)
		us.fanout(ev)
		us.next++
	}
	if len(us.held) > 0 && us.next < upto {
		if _, ok := us.held[us.next]; !ok {
			// Not in the store although a later seq was published: deleted
			// by the retention, or never stored. Do not wait for it forever.
			first := upto
			for seq := range us.held {
				first = min(first, seq)
			}
			b.log.LogAttrs(ctx, slog.LevelWarn, "events: seqs missing from the store; skipped",
				slog.String("user_id", us.user), slog.Int64("from", us.next), slog.Int64("to", first-1))
			us.next = first
		}
	}
	us.armed = false
	us.drain()
	empty := len(us.subs) == 0
	us.mu.Unlock()
	if empty {
		b.prune(us)
	}
}

// fillStarts counts a fill in unless the bus has stopped (Stop waits for
// the fills that started).
func (b *Bus) fillStarts() bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.stopped {
		return false
	}
	b.fills.Add(1)
	return true
}

// prune removes us from the bus if it has no subscriber left.
func (b *Bus) prune(us *userStream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	us.mu.Lock()
	defer us.mu.Unlock()
	if len(us.subs) == 0 && b.subs[us.user] == us {
		delete(b.subs, us.user)
		us.gone = true
		us.disarm()
	}
}

// dropStream closes us's subscribers as dropped and removes it.
func (b *Bus) dropStream(us *userStream) {
	b.mu.Lock()
	if b.subs[us.user] == us {
		delete(b.subs, us.user)
	}
	b.mu.Unlock()
	for _, s := range us.end() {
		s.shut(true)
	}
}

// end marks us gone and returns its subscribers.
func (us *userStream) end() []*Subscription {
	us.mu.Lock()
	defer us.mu.Unlock()
	us.gone = true
	us.disarm()
	subs := make([]*Subscription, 0, len(us.subs))
	for s := range us.subs {
		subs = append(subs, s)
	}
	us.subs = map[*Subscription]struct{}{}
	return subs
}
