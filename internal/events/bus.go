package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/store"
)

// Filter selects a subscriber's events; empty fields match everything.
type Filter struct {
	AppID        string `json:"app_id,omitempty"`
	ChatID       string `json:"chat_id,omitempty"`
	ActivationID string `json:"activation_id,omitempty"`
	// Deltas asks for token fragments too (type "token"); they carry no
	// context, so only an ActivationID filter selects among them.
	Deltas bool `json:"-"`
}

// Match reports whether ev passes f.
func (f Filter) Match(ev *Event) bool {
	if ev.Type == Token {
		return f.Deltas && (f.ActivationID == "" || f.ActivationID == ev.ActivationID)
	}
	return (f.ActivationID == "" || f.ActivationID == ev.ActivationID) &&
		(f.AppID == "" || f.AppID == ev.ContextString("app_id")) &&
		(f.ChatID == "" || f.ChatID == ev.ContextString("chat_id"))
}

// ContextString is a string value of the event's context ("" if absent).
func (ev *Event) ContextString(key string) string {
	s, _ := ev.Context[key].(string)
	return s
}

// Subscription receives one user's matching events on C until Close, a
// full buffer (Dropped) or the Bus stopping closes C.
type Subscription struct {
	C <-chan Event

	c       chan Event
	bus     *Bus
	userID  string
	filter  Filter
	mu      sync.Mutex
	closed  bool
	dropped bool

	// fresh: the subscriber does not replay (SubscribeNew); before holds
	// the seqs its stream held or read from the store when it joined,
	// committed before it subscribed, which it does not get. Both are
	// its stream's, under the stream's lock.
	fresh  bool
	before map[int64]struct{}
}

// Dropped reports whether C was closed because the subscriber fell behind:
// it missed events and should resume from its last seq.
func (s *Subscription) Dropped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Close ends the subscription; safe to call more than once.
func (s *Subscription) Close() {
	s.shut(false)
	s.bus.remove(s)
}

// offer hands ev over without waiting; a full buffer drops the subscriber
// rather than slowing the publisher (and every other subscriber) down.
func (s *Subscription) offer(ev Event) (kept bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	select {
	case s.c <- ev:
		return true
	default:
		s.dropped, s.closed = true, true
		close(s.c)
		return false
	}
}

func (s *Subscription) shut(dropped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed, s.dropped = true, dropped
		close(s.c)
	}
}

// Bus stores events with their per-user seq and fans them out to the
// subscribers of this process and, on PostgreSQL, of every other node
// (NOTIFY to publish, a LISTEN connection to receive).
type Bus struct {
	store *store.Store
	log   *slog.Logger
	// node tells this process's own notifications apart from other nodes'.
	node string
	now  func() time.Time

	mu      sync.RWMutex
	subs    map[string]*userStream // by user (order.go)
	stopped bool
	fills   sync.WaitGroup // gap fills and ticks under way (order.go)
	horizon horizonTicker  // sparse seqs' live delivery (horizon.go)

	chMu    sync.Mutex
	channel string // NOTIFY channel, resolved on first need

	runMu  sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}

	notes    *notifier // NOTIFY sender (notify.go)
	interest *interest // the other nodes' subscribers (interest.go)

	sigMu    sync.Mutex
	handlers map[string][]func(userID string) // by topic (signal.go)

	tokens tokenLogs // activations' answers as they stream (tokens.go)
}

// Retention is how long stored events stay available for replay.
const Retention = 24 * time.Hour

// New returns a bus over s. On PostgreSQL, Start begins receiving other
// nodes' events; publishing works without it.
func New(s *store.Store, log *slog.Logger) *Bus {
	b := &Bus{store: s, log: log, node: uuid.NewString(), now: store.Now,
		subs: map[string]*userStream{}, notes: newNotifier(), interest: &interest{}}
	b.handleInterest()
	return b
}

// Append assigns the events' Seq and stores them inside the caller's
// transaction (tx from store.InTx; nil runs its own), in one statement on
// PostgreSQL whoever's they are. Publish them after the commit. Seqs
// increase per user but have holes on PostgreSQL (store.EventAppend).
func (b *Bus) Append(ctx context.Context, tx *store.Store, evs ...*Event) error {
	if tx == nil {
		tx = b.store
	}
	return b.appendWith(evs, func(rows []*store.EventRow) error { return tx.EventAppend(ctx, rows...) })
}

// appendWith has write store evs' rows, and gives evs their seqs.
func (b *Bus) appendWith(evs []*Event, write func([]*store.EventRow) error) error {
	rows, err := b.rows(evs)
	if err != nil {
		return err
	}
	if err := write(rows); err != nil {
		return fmt.Errorf("events: append: %w", err)
	}
	numbered(evs, rows)
	return nil
}

// rows are evs as the store keeps them.
func (b *Bus) rows(evs []*Event) ([]*store.EventRow, error) {
	rows := make([]*store.EventRow, len(evs))
	for i, ev := range evs {
		if ev.UserID == "" {
			return nil, errors.New("events: append: event without a user")
		}
		if ev.Timestamp.IsZero() {
			ev.Timestamp = b.now()
		}
		payload, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("events: encode: %w", err)
		}
		rows[i] = &store.EventRow{UserID: ev.UserID, Type: ev.Type, ActivationID: ev.ActivationID,
			AppID: ev.ContextString("app_id"), ChatID: ev.ContextString("chat_id"), Payload: payload, CreatedAt: ev.Timestamp}
	}
	return rows, nil
}

// numbered gives evs the seqs their stored rows got.
func numbered(evs []*Event, rows []*store.EventRow) {
	for i, ev := range evs {
		ev.Seq = rows[i].Seq
	}
}

// Record appends the events in tx (Append) and publishes them once tx has
// committed; a rolled-back transaction publishes nothing. It is what domain
// code uses, so no call site can forget to publish or publish too early.
func (b *Bus) Record(ctx context.Context, tx *store.Store, evs ...*Event) error {
	if tx == nil {
		tx = b.store
	}
	return b.RecordWith(tx, func(rows []*store.EventRow) error { return tx.EventAppend(ctx, rows...) }, evs...)
}

// RecordWith is Record for events that write stores along with what they
// are about, in tx (or on their own: tx is the store outside a
// transaction), as store.ActivationCreateRecorded does: write gets their
// rows and stores them. They are published once that has committed.
func (b *Bus) RecordWith(tx *store.Store, write func([]*store.EventRow) error, evs ...*Event) error {
	if err := b.appendWith(evs, write); err != nil {
		return err
	}
	b.publishAfter(tx, evs)
	return nil
}

// RecordWithThen is RecordWith for a write that does not wait for its
// commit (store.InTxThen): write hands its outcome to done, and then gets
// RecordWith's once the events have their seqs and are published (tx is
// the store outside a transaction: they were committed).
func (b *Bus) RecordWithThen(tx *store.Store, write func(rows []*store.EventRow, done func(error)), then func(error), evs ...*Event) {
	rows, err := b.rows(evs)
	if err != nil {
		then(err)
		return
	}
	write(rows, func(err error) {
		if err != nil {
			then(fmt.Errorf("events: append: %w", err))
			return
		}
		numbered(evs, rows)
		b.publishAfter(tx, evs)
		then(nil)
	})
}

// publishAfter publishes copies of evs once tx has committed.
func (b *Bus) publishAfter(tx *store.Store, evs []*Event) {
	out := make([]Event, len(evs))
	for i, ev := range evs {
		out[i] = *ev
	}
	tx.AfterCommit(func() { b.Publish(context.Background(), out...) })
}

// Publish delivers committed events to every node's subscribers. It never
// waits for a subscriber, and a cancelled ctx does not stop it: the events
// happened.
func (b *Bus) Publish(ctx context.Context, evs ...Event) {
	for i := range evs {
		b.deliver(evs[i])
		b.notify(&evs[i])
	}
}

// PublishDelta announces a fragment of an activation's answer: it joins
// the activation's token log, which streams read (tokens.go), and goes to
// the local subscribers that asked for deltas. It is not stored.
func (b *Bus) PublishDelta(ctx context.Context, userID, activationID, text string) {
	b.appendToken(userID, activationID, text)
	b.deliver(Event{Type: Token, UserID: userID, ActivationID: activationID, Delta: text, Timestamp: b.now()})
}

// Subscribe starts receiving userID's events that match f, with room for
// buffer events not yet read. Events with a seq come in seq order, from the
// first the store's replay does not return yet (order.go; on PostgreSQL
// perhaps a few committed just before): a subscriber that then replays the
// store from its last seq misses nothing.
func (b *Bus) Subscribe(userID string, f Filter, buffer int) *Subscription {
	return b.subscribe(userID, f, buffer, false)
}

func (b *Bus) subscribe(userID string, f Filter, buffer int, fresh bool) *Subscription {
	c := make(chan Event, max(1, buffer))
	s := &Subscription{C: c, c: c, bus: b, userID: userID, filter: f, fresh: fresh}
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		s.closed = true
		close(c)
		return s
	}
	us := b.subs[userID]
	created := us == nil
	if created {
		us = newUserStream(b, userID)
		b.subs[userID] = us
	}
	us.mu.Lock()
	us.subs[s] = struct{}{}
	if us.based {
		s.skipHeld(us.held)
	} // else start sets it, with the tail it reads
	us.mu.Unlock()
	b.mu.Unlock()
	if created {
		b.Broadcast(interestTopic, userID)
		us.start()
	} else {
		<-us.ready
	}
	return s
}

// SubscribeNew is Subscribe for a subscriber that does not replay (a
// socket without since): it receives the events committed after it began,
// and not those committed before that its stream still holds for the
// subscribers who replay (on PostgreSQL, until the horizon passes them).
func (b *Bus) SubscribeNew(userID string, f Filter, buffer int) *Subscription {
	return b.subscribe(userID, f, buffer, true)
}

// skipHeld makes a fresh subscriber pass over the events held now: they
// committed before it joined.
func (s *Subscription) skipHeld(held map[int64]Event) {
	if !s.fresh || len(held) == 0 {
		return
	}
	s.before = make(map[int64]struct{}, len(held))
	for seq := range held {
		s.before[seq] = struct{}{}
	}
}

// skips reports whether the subscriber passes over ev (skipHeld).
func (s *Subscription) skips(ev *Event) bool {
	if s.before == nil {
		return false
	}
	_, ok := s.before[ev.Seq]
	if ok {
		delete(s.before, ev.Seq)
		if len(s.before) == 0 {
			s.before = nil
		}
	}
	return ok
}

func (b *Bus) remove(s *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	us := b.subs[s.userID]
	if us == nil {
		return
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	delete(us.subs, s)
	if len(us.subs) == 0 {
		delete(b.subs, s.userID)
		us.gone = true
		us.disarm()
	}
}

func (b *Bus) hasSubscribers(userID string) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.subs[userID] != nil
}

// deliver hands ev to this process's subscribers of its user, in order.
func (b *Bus) deliver(ev Event) {
	b.mu.RLock()
	us := b.subs[ev.UserID]
	b.mu.RUnlock()
	if us != nil && us.accept(ev) {
		b.prune(us)
	}
}

// closeAll ends every subscription; dropped tells subscribers they missed
// events (a lost listener connection) rather than that the bus stopped.
func (b *Bus) closeAll(dropped bool) {
	b.mu.Lock()
	all := b.subs
	b.subs = map[string]*userStream{}
	b.mu.Unlock()
	for _, us := range all {
		for _, s := range us.end() {
			s.shut(dropped)
		}
	}
}

// Replay calls fn with userID's stored events after seq since, in seq
// order, until fn returns false. It reads them in batches of at most 500
// events and the store's page budget in bytes, and hands a batch over
// before it reads the next: a client that does not read (fn blocks in its
// write) holds one batch, not the user's history.
func (b *Bus) Replay(ctx context.Context, userID string, since int64, fn func(Event) bool) error {
	const batch = 500
	for {
		rows, err := b.store.EventListAfter(ctx, userID, since, batch)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		for i := range rows {
			ev, err := fromRow(&rows[i])
			if err != nil {
				return err
			}
			if !fn(ev) {
				return nil
			}
			since = rows[i].Seq
			rows[i] = store.EventRow{} // sent: its payload may go
		}
	}
}

func fromRow(r *store.EventRow) (Event, error) {
	var ev Event
	if err := json.Unmarshal(r.Payload, &ev); err != nil {
		return ev, fmt.Errorf("events: decode stored event %s/%d: %w", r.UserID, r.Seq, err)
	}
	ev.UserID, ev.Seq = r.UserID, r.Seq
	return ev, nil
}

// Cleanup deletes events past the retention; a periodic job calls it.
func (b *Bus) Cleanup(ctx context.Context) (int64, error) {
	return b.store.EventDeleteBefore(ctx, b.now().Add(-Retention))
}
