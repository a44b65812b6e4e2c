package events

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Live delivery on PostgreSQL (order.go): the node's streams with held
// events are released once per tick, all of them by one statement
// (store.EventScan), so the cost is per tick, not per event or per user.

const (
	// tickEvery is the pause between two ticks while events are held: the
	// delay it adds to live delivery, and at most 1/tickEvery statements a
	// second for the node.
	tickEvery = 3 * time.Millisecond
	// stuckAfter is how long the horizon may stay put under held events
	// before the node says which transaction it waits for.
	stuckAfter = 10 * time.Second
)

// horizonTicker runs the ticks while a stream of the node holds events.
type horizonTicker struct {
	mu      sync.Mutex
	running bool
	kicked  bool // an event was held since the running tick began
	idle    bool // the next tick scans the streams that hold nothing too

	// The tick loop's own (one goroutine at a time).
	horizon int64
	since   time.Time // when horizon was first read at its value
	warned  bool
}

// kickIdle makes sure a tick comes soon that scans every stream, those
// that hold nothing too (interest.go).
func (h *horizonTicker) kickIdle(b *Bus) {
	h.mu.Lock()
	h.idle = true
	h.mu.Unlock()
	h.kick(b)
}

// kick makes sure a tick comes soon.
func (h *horizonTicker) kick(b *Bus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running {
		h.kicked = true
		return
	}
	if !b.fillStarts() {
		return
	}
	h.running = true
	go h.loop(b)
}

func (h *horizonTicker) loop(b *Bus) {
	defer b.fills.Done()
	for {
		h.mu.Lock()
		h.kicked = false
		idle := h.idle
		h.idle = false
		h.mu.Unlock()
		if !b.tick(idle) {
			h.mu.Lock()
			if !h.kicked {
				h.running = false
				h.mu.Unlock()
				return
			}
			h.mu.Unlock()
			continue
		}
		time.Sleep(tickEvery)
		b.mu.RLock()
		stopped := b.stopped
		b.mu.RUnlock()
		if stopped {
			h.mu.Lock()
			h.running = false
			h.mu.Unlock()
			return
		}
	}
}

// tick releases what the horizon has passed; it reports whether any stream
// held events or missed some. idle scans the streams that hold nothing too,
// for events in the store nobody published to them.
func (b *Bus) tick(idle bool) bool {
	b.mu.RLock()
	var streams []*userStream
	var users []string
	var afters []int64
	var over []*userStream
	for _, us := range b.subs {
		us.mu.Lock()
		switch {
		case !us.sparse || !us.based:
		case len(us.held) == 0 && (us.next == 0 || us.missing.IsZero() && !idle):
		case us.overflow:
			over = append(over, us)
		default:
			if us.next == 0 { // start failed: from the first held
				us.next = slices.Min(heldSeqs(us.held))
			}
			streams = append(streams, us)
			users = append(users, us.user)
			afters = append(afters, us.next-1)
		}
		us.mu.Unlock()
	}
	b.mu.RUnlock()
	for _, us := range over {
		// A transaction held the horizon back while the user's events
		// piled up: their clients resume from their last seq.
		b.log.Warn("events: too many events wait for the horizon; subscribers dropped", "user_id", us.user)
		b.dropStream(us)
	}
	if len(streams) == 0 {
		return len(over) > 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	horizon, seqs, err := b.store.EventScan(ctx, users, afters)
	if err != nil {
		b.log.Warn("events: read the horizon; retrying", "err", err)
		time.Sleep(gapWait)
		return true
	}
	b.watchHorizon(ctx, horizon)
	now := time.Now()
	for _, us := range streams {
		if upto, fill := us.release(horizon, seqs[us.user], now); fill {
			b.fillUpTo(us, upto)
		}
	}
	return true
}

// watchHorizon warns once when the horizon has not moved for stuckAfter
// while events waited for it: live delivery waits for the oldest open
// transaction of the whole PostgreSQL cluster.
func (b *Bus) watchHorizon(ctx context.Context, horizon int64) {
	h := &b.horizon
	if horizon != h.horizon {
		h.horizon, h.since, h.warned = horizon, time.Now(), false
		return
	}
	if !h.warned && time.Since(h.since) > stuckAfter {
		h.warned = true
		b.log.LogAttrs(ctx, slog.LevelWarn, "events: live events wait for a transaction open for long (the oldest open transaction of the PostgreSQL cluster)",
			slog.Duration("for", time.Since(h.since)))
	}
}

// release hands out the held events the horizon has passed, in order,
// along the seqs the store has below it (listed, ascending). It stops at a
// seq the store has but nobody published; once that has lasted gapWait,
// it reports that the events up to upto must be read from the store.
func (us *userStream) release(horizon int64, listed []int64, now time.Time) (upto int64, fill bool) {
	us.mu.Lock()
	if us.gone {
		us.mu.Unlock()
		return 0, false
	}
	stopped := false
	for _, seq := range listed {
		if seq < us.next {
			continue
		}
		ev, ok := us.held[seq]
		if !ok {
			if us.missing.IsZero() {
				us.missing = now
			}
			if now.Sub(us.missing) >= gapWait {
				upto, fill = listed[len(listed)-1], true
			}
			stopped = true
			break
		}
		delete(us.held, seq)
		us.fanout(ev)
		us.next = seq + 1
	}
	if !stopped {
		us.missing = time.Time{}
		// Held below the horizon yet not in the store: deleted by the
		// retention since. Out, in order.
		for _, seq := range heldSeqs(us.held) {
			if seq < horizon {
				us.fanout(us.held[seq])
				delete(us.held, seq)
				us.next = seq + 1
			}
		}
	}
	empty := len(us.subs) == 0
	us.mu.Unlock()
	if empty {
		us.bus.prune(us)
	}
	return upto, fill
}

// fillUpTo reads the user's events after next up to upto from the store
// (all final) and hands them out, with the held copies of those published.
func (b *Bus) fillUpTo(us *userStream, upto int64) {
	us.mu.Lock()
	from := us.next - 1
	us.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	var evs []Event
	err := b.Replay(ctx, us.user, from, func(ev Event) bool {
		if ev.Seq > upto {
			return false
		}
		evs = append(evs, ev)
		return ev.Seq < upto
	})
	cancel()
	if err != nil {
		b.log.Warn("events: read unpublished events", "user_id", us.user, "after", from, "err", err)
		b.dropStream(us)
		return
	}
	us.mu.Lock()
	if us.gone {
		us.mu.Unlock()
		return
	}
	b.log.Debug("events: unpublished events read from the store", "user_id", us.user, "after", from, "read", len(evs))
	for _, ev := range evs {
		if ev.Seq < us.next {
			continue
		}
		delete(us.held, ev.Seq)
		us.fanout(ev)
		us.next = ev.Seq + 1
	}
	us.missing = time.Time{}
	empty := len(us.subs) == 0
	us.mu.Unlock()
	if empty {
		b.prune(us)
	}
}

// heldSeqs returns the seqs of held, ascending.
func heldSeqs(held map[int64]Event) []int64 {
	seqs := make([]int64, 0, len(held))
	for seq := range held {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	return seqs
}
