package events

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"
)

const (
	// maxInline is the largest event JSON sent inside a notification
	// (PostgreSQL's payload limit is 8000 bytes); a larger stored event is
	// sent as a reference the listeners read back.
	maxInline = 7000
	// maxInlineDelta keeps a token fragment inline even if JSON escaping
	// inflates every byte six times.
	maxInlineDelta = 1000
	notifyTimeout  = 5 * time.Second
)

// wire is a notification: an event inline, or a reference (user, seq) to
// a stored one. Node lets the sender skip what it already delivered.
type wire struct {
	// Node and User come first, then what marks a notification that is
	// no event (Topic, Tok): a listener reads that far (peek) and skips
	// an event for a user nobody here subscribes to unparsed.
	Node string `json:"n"`
	User string `json:"u"`
	// Topic marks a signal (signal.go) rather than an event.
	Topic string `json:"g,omitempty"`
	// Tok is a note about a token log (tokens.go) instead of an event.
	Tok   *tokenNote      `json:"t,omitempty"`
	Seq   int64           `json:"s,omitempty"`
	Event json.RawMessage `json:"e,omitempty"`
	// Num numbers a node's notifications: PostgreSQL delivers identical
	// payloads sent in one transaction once, and the pieces of a long
	// token fragment can be identical.
	Num uint64 `json:"k"`
}

// peek reads a notification's node and user, and whether it is an event,
// as notify writes them, without parsing the rest; ok is false for
// anything else (another version's layout), which is then parsed whole.
func peek(payload string) (node, user string, event, ok bool) {
	rest, found := strings.CutPrefix(payload, `{"n":"`)
	if !found {
		return "", "", false, false
	}
	node, rest, found = strings.Cut(rest, `"`)
	if !found || strings.Contains(node, `\`) {
		return "", "", false, false
	}
	rest, found = strings.CutPrefix(rest, `,"u":"`)
	if !found {
		return "", "", false, false
	}
	user, rest, found = strings.Cut(rest, `"`)
	if !found || strings.Contains(user, `\`) {
		return "", "", false, false
	}
	event = !strings.HasPrefix(rest, `,"g":`) && !strings.HasPrefix(rest, `,"t":`)
	return node, user, event, true
}

// notify tells the other nodes about ev (PostgreSQL only), soon: the
// notification is queued for the notifier (below), so the caller does not
// wait for the database.
func (b *Bus) notify(ev *Event) {
	if !b.store.MultiNode() || !b.interest.wanted(ev.UserID) {
		return
	}
	body, err := json.Marshal(ev)
	if err != nil {
		b.log.Error("events: encode", "err", err)
		return
	}
	w := wire{Node: b.node, User: ev.UserID}
	switch {
	case len(body) <= maxInline:
		w.Event = body
	case ev.Seq > 0:
		w.Seq = ev.Seq
	default:
		b.log.Warn("events: unstored event too large for other nodes", "type", ev.Type, "bytes", len(body))
		return
	}
	b.notes.add(b, w)
}

// notifier sends the queued notifications. Each NOTIFY is a commit that
// takes a lock every notifying commit of the database shares, and an
// activation publishes several events and, streaming, many token deltas:
// sent one by one they queued for that lock. One goroutine, alive while
// there is something to send and notifierLinger after, sends everything
// queued meanwhile in one statement, in order. It lingers because a new
// goroutine grows its stack down to the database driver again: under load
// it copied its stack for nearly every batch.
type notifier struct {
	mu       sync.Mutex
	pending  []string
	running  bool
	dropped  int           // since the last warning
	num      uint64        // the last wire.Num
	wake     chan struct{} // tells a lingering run there is more
	quit     chan struct{} // closed by stop: a run does not linger
	stopOnce sync.Once
	// lingerFor is notifierLinger, or a test's.
	lingerFor time.Duration
}

func newNotifier() *notifier {
	return &notifier{wake: make(chan struct{}, 1), quit: make(chan struct{}), lingerFor: notifierLinger}
}

// notifierLinger is how long the notifier waits for more once it has sent
// everything.
const notifierLinger = time.Second

const (
	// maxPendingNotes bounds the queue while the database does not answer;
	// beyond it notifications are dropped (stored events stay replayable).
	maxPendingNotes = 10_000
	// maxNotesPerStatement keeps one statement's parameters reasonable.
	maxNotesPerStatement = 500
)

func (n *notifier) add(b *Bus, w wire) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.pending) >= maxPendingNotes {
		n.dropped++
		return
	}
	n.num++
	w.Num = n.num
	payload, _ := json.Marshal(w)
	n.pending = append(n.pending, string(payload))
	if !n.running {
		n.running = true
		go n.run(b)
		return
	}
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// stop ends a lingering run, and has later ones end once they have sent
// what they were given.
func (n *notifier) stop() {
	n.stopOnce.Do(func() { close(n.quit) })
}

// linger waits for more to send, up to lingerFor; false when there
// is none (the run is over) or the bus stops.
func (n *notifier) linger(idle *time.Timer) bool {
	idle.Reset(n.lingerFor)
	select {
	case <-n.wake:
		return true
	case <-n.quit:
	case <-idle.C:
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.pending) > 0 {
		return true
	}
	n.running = false
	return false
}

func (n *notifier) run(b *Bus) {
	idle := time.NewTimer(n.lingerFor)
	defer idle.Stop()
	for {
		n.mu.Lock()
		batch, dropped := n.pending, n.dropped
		if len(batch) > maxNotesPerStatement {
			batch = batch[:maxNotesPerStatement:maxNotesPerStatement]
		}
		n.pending, n.dropped = n.pending[len(batch):], 0
		if len(batch) == 0 {
			n.pending = nil
			n.mu.Unlock()
			if !n.linger(idle) {
				return
			}
			continue
		}
		n.mu.Unlock()
		if dropped > 0 {
			b.log.Warn("events: notifications dropped: the database did not keep up", "dropped", dropped)
		}
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		ch, err := b.channelName(ctx)
		if err == nil {
			err = b.store.EventNotify(ctx, ch, batch)
		}
		cancel()
		if err != nil {
			b.log.Warn("events: notify", "notifications", len(batch), "err", err)
		}
	}
}

func (b *Bus) channelName(ctx context.Context) (string, error) {
	b.chMu.Lock()
	defer b.chMu.Unlock()
	if b.channel == "" {
		ch, err := b.store.EventChannel(ctx)
		if err != nil {
			return "", err
		}
		b.channel = ch
	}
	return b.channel, nil
}

// onNotify delivers another node's event to this node's subscribers.
func (b *Bus) onNotify(ctx context.Context, payload string) {
	if node, user, event, ok := peek(payload); ok && (node == b.node || event && !b.hasSubscribers(user)) {
		return // this node's own, or an event nobody here waits for
	}
	var w wire
	if err := json.Unmarshal([]byte(payload), &w); err != nil {
		b.log.WarnContext(ctx, "events: bad notification", "err", err)
		return
	}
	if w.Node == b.node {
		return
	}
	if w.Topic != "" {
		b.signal(w.Topic, w.User)
		return
	}
	if w.Tok != nil {
		b.onTokenNote(w.User, w.Tok)
		return
	}
	if !b.hasSubscribers(w.User) {
		return
	}
	var ev Event
	if len(w.Event) > 0 {
		if err := json.Unmarshal(w.Event, &ev); err != nil {
			b.log.WarnContext(ctx, "events: bad notified event", "err", err)
			return
		}
	} else {
		row, err := b.store.EventGet(ctx, w.User, w.Seq)
		if err == nil {
			ev, err = fromRow(row)
		}
		if err != nil {
			b.log.WarnContext(ctx, "events: read notified event", "user_id", w.User, "seq", w.Seq, "err", err)
			return
		}
	}
	ev.UserID = w.User
	b.deliver(ev)
}

// Start begins receiving other nodes' events (PostgreSQL; nothing to do on
// SQLite). It returns once the LISTEN is in effect, so that every event
// published afterwards on any node reaches this one.
func (b *Bus) Start(ctx context.Context) error {
	if !b.store.MultiNode() {
		return nil
	}
	b.runMu.Lock()
	defer b.runMu.Unlock()
	if b.cancel != nil {
		return nil
	}
	ch, err := b.channelName(ctx)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ready, failed, done := make(chan struct{}), make(chan error, 1), make(chan struct{})
	go b.listen(runCtx, ch, ready, failed, done)
	select {
	case <-ready:
		b.cancel, b.done = cancel, done
		// Whom the other nodes subscribe to was said before this listened.
		b.Broadcast(interestAskTopic, "")
		b.fills.Add(1)
		go func() {
			defer b.fills.Done()
			b.watch(runCtx)
		}()
		return nil
	case err = <-failed:
	case <-ctx.Done():
		err = ctx.Err()
	}
	cancel()
	<-done
	return err
}

// listen keeps a LISTEN connection up, reconnecting with backoff. Events
// that arrive while it is down are lost to this node's subscribers, so they
// are closed as dropped: their clients resume from their last seq.
func (b *Bus) listen(ctx context.Context, ch string, ready chan<- struct{}, failed chan<- error, done chan<- struct{}) {
	defer close(done)
	const maxBackoff = 10 * time.Second
	backoff, started := 100*time.Millisecond, false
	for {
		err := b.store.EventListen(ctx, ch, func() {
			if !started {
				started = true
				close(ready)
			} else {
				b.closeAll(true)
				b.signal("", "") // broadcasts may have been missed meanwhile
				b.log.Info("events: listening again")
			}
			backoff = 100 * time.Millisecond
		}, func(p string) { b.onNotify(ctx, p) })
		if ctx.Err() != nil {
			return
		}
		if !started {
			failed <- err
			return
		}
		if err == nil {
			err = errors.New("listen ended")
		}
		b.log.Warn("events: listener connection lost; reconnecting", "err", err, "backoff", backoff)
		b.closeAll(true)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// Stop ends the listener and closes every subscription (not as dropped:
// the process is going away). Safe to call more than once.
func (b *Bus) Stop() {
	b.runMu.Lock()
	cancel, done := b.cancel, b.done
	b.cancel, b.done = nil, nil
	b.runMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.notes.stop()
	b.closeAll(false)
	b.fills.Wait()
}
