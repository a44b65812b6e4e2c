package events

import (
	"sync"
	"time"
	"unicode/utf8"
)

// Token logs. An activation's answer streams as fragments (PublishDelta);
// a client may open its stream late, or reconnect, and must still get every
// fragment from the first (or from where it left off). So the node that
// runs an activation keeps its fragments in a log, numbered from 1, from the
// first until TokenRetention after the run ends. Streams read logs, never a
// channel that could drop.
//
// Across nodes (PostgreSQL) a stream may be served by a node other than the
// one running the activation. Its node keeps a copy of the log, fed over
// NOTIFY: it asks for the activation (a watch), the runner answers with the
// fragments so far and then sends each new one, and a done marker with the
// count when the run ends. Nobody streaming costs no notification at all.
// A watch may arrive before the run starts (the activation still queued):
// every node remembers it for watchTTL, and readers watch again when the
// activation starts.

// TokenRetention is how long an activation's tokens stay after its run
// ends, for streams that open or reconnect late.
const TokenRetention = 30 * time.Second

const (
	// maxLogBytes bounds one activation's log; LLM answers are capped at
	// 4 MiB, retries of a stream that broke off can add a little.
	maxLogBytes = 5 << 20
	// maxRetainedBytes bounds the logs of ended runs a node keeps for
	// TokenRetention; beyond it the oldest go first.
	maxRetainedBytes = 64 << 20
	// watchTTL is how long a node remembers another node's watch of an
	// activation it may run later.
	watchTTL = 10 * time.Minute
	// maxWatches bounds those remembered watches.
	maxWatches = 10_000
	// rewatchEvery limits how often a copy asks again after a gap.
	rewatchEvery = 500 * time.Millisecond
)

// tokenLog is one activation's fragments on this node: the runner's log
// (writer) or a copy that a reader here waits on.
type tokenLog struct {
	user   string
	writer bool  // this node runs (or ran) the activation
	run    int64 // when the writer's run started (UnixNano): a newer run replaces an older one
	frags  []string
	size   int
	done   bool // the run ended and every fragment is here
	// watched (writer): a stream on another node reads it, so fragments
	// go out as notifications.
	watched bool
	readers int
	gen     uint64 // changes when the log is reset or retained, for the retention queue
	endedAt time.Time
	// changed is closed (and forgotten) on every change; made on demand, so
	// a log nobody reads costs no channel.
	changed     chan struct{}
	lastRewatch time.Time
}

func (l *tokenLog) wake() {
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// tokenNote is a notification about a token log; wire.Tok carries it.
type tokenNote struct {
	Activation string `json:"a"`
	// Watch: a stream on the sender waits for this activation's tokens.
	Watch bool     `json:"w,omitempty"`
	Run   int64    `json:"r,omitempty"`
	From  int      `json:"i,omitempty"` // the number of Frags[0]
	Frags []string `json:"f,omitempty"`
	// Done: the run ended with Total fragments.
	Done  bool `json:"d,omitempty"`
	Total int  `json:"n,omitempty"`
}

// tokenLogs are a node's logs.
type tokenLogs struct {
	mu      sync.Mutex
	logs    map[string]*tokenLog
	watches map[string]time.Time // activation → until when another node waits for it
	// retained are the ended writer logs, oldest first, and their bytes.
	retained      []retainedLog
	retainedBytes int
	// budget overrides maxRetainedBytes (tests).
	budget  int
	gen     uint64
	lastRun int64
}

type retainedLog struct {
	id   string
	log  *tokenLog
	gen  uint64
	size int
}

func (t *tokenLogs) init() {
	if t.logs == nil {
		t.logs = map[string]*tokenLog{}
		t.watches = map[string]time.Time{}
	}
}

// multiNode reports whether other nodes may run activations (PostgreSQL).
func (b *Bus) multiNode() bool { return b.store.MultiNode() }

// sendTokens queues a token note for the other nodes. Called with
// b.tokens.mu held, so that notes about one log leave in order.
func (b *Bus) sendTokens(userID string, n tokenNote) {
	if b.multiNode() {
		b.notes.add(b, wire{Node: b.node, User: userID, Tok: &n})
	}
}

// firstPiece is the head of text that fits one notification, cut at a
// rune boundary.
func firstPiece(text string) string {
	if len(text) <= maxInlineDelta {
		return text
	}
	cut := maxInlineDelta
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	if cut == 0 {
		cut = maxInlineDelta
	}
	return text[:cut]
}

// appendToken is the writer's side of PublishDelta.
func (b *Bus) appendToken(userID, activationID, text string) {
	t := &b.tokens
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	l := t.logs[activationID]
	if l == nil || !l.writer || l.done {
		l = t.startRun(b, userID, activationID, l)
	}
	from := len(l.frags) + 1
	for len(text) > 0 {
		piece := firstPiece(text)
		if l.size+len(piece) > maxLogBytes {
			break // the answer is over the cap and fails; the record says so
		}
		l.frags = append(l.frags, piece)
		l.size += len(piece)
		text = text[len(piece):]
	}
	if len(l.frags) < from {
		return
	}
	l.wake()
	if l.watched {
		added := l.frags[from-1:]
		b.sendTokens(userID, tokenNote{Activation: activationID, Run: l.run, From: from, Frags: added[:len(added):len(added)]})
	}
}

// startRun makes (or resets) the writer's log of a run starting here; a
// stream of this node already waiting on a copy keeps reading the same log.
func (t *tokenLogs) startRun(b *Bus, userID, activationID string, l *tokenLog) *tokenLog {
	if l == nil {
		l = &tokenLog{}
		t.logs[activationID] = l
	}
	t.gen++
	// Streams elsewhere that read the last run here read this one too.
	watched := l.writer && l.watched
	// Runs are ordered by their start; within a node strictly.
	t.lastRun = max(b.now().UnixNano(), t.lastRun+1)
	l.user, l.writer, l.run, l.gen = userID, true, t.lastRun, t.gen
	l.frags, l.size, l.done, l.watched = nil, 0, false, watched
	if until, ok := t.watches[activationID]; ok {
		delete(t.watches, activationID)
		l.watched = l.watched || b.now().Before(until)
	}
	l.wake()
	return l
}

// EndTokens marks the end of the run of activationID on this node: its log
// is complete, kept TokenRetention for late streams, and readers on other
// nodes learn the count. The runner calls it once the agent has run,
// before it records the end, whether or not anything streamed.
func (b *Bus) EndTokens(userID, activationID string) {
	t := &b.tokens
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	l := t.logs[activationID]
	if l == nil || !l.writer || l.done {
		// Nothing streamed: an empty log answers a watch that comes later.
		l = t.startRun(b, userID, activationID, l)
	}
	l.done, l.endedAt = true, b.now()
	l.wake()
	if l.watched {
		b.sendTokens(userID, tokenNote{Activation: activationID, Run: l.run, Done: true, Total: len(l.frags)})
	}
	t.retain(activationID, l)
	t.sweep(b.now())
}

// retain queues an ended writer log for removal after TokenRetention.
func (t *tokenLogs) retain(id string, l *tokenLog) {
	t.retained = append(t.retained, retainedLog{id: id, log: l, gen: l.gen, size: l.size})
	t.retainedBytes += l.size
}

// sweep drops the retained logs that are past TokenRetention or over
// maxRetainedBytes, oldest first. A log still read stays until its last
// reader leaves (Close retains it again).
func (t *tokenLogs) sweep(now time.Time) {
	budget := t.budget
	if budget == 0 {
		budget = maxRetainedBytes
	}
	n := 0
	for _, r := range t.retained {
		if now.Sub(r.log.endedAt) < TokenRetention && t.retainedBytes <= budget {
			break
		}
		n++
		t.retainedBytes -= r.size
		if t.logs[r.id] == r.log && r.log.gen == r.gen && r.log.readers == 0 {
			delete(t.logs, r.id)
		}
	}
	if n > 0 {
		clear(t.retained[:n])
		t.retained = t.retained[n:]
	}
	if len(t.watches) >= maxWatches {
		for id, until := range t.watches {
			if now.After(until) {
				delete(t.watches, id)
			}
		}
	}
}

// onTokenNote applies another node's note.
func (b *Bus) onTokenNote(userID string, n *tokenNote) {
	t := &b.tokens
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	l := t.logs[n.Activation]
	if n.Watch {
		switch {
		case l != nil && l.writer:
			if l.user != userID {
				return
			}
			l.watched = true
			b.sendBacklog(n.Activation, l)
		case l == nil || !l.writer:
			// It may run here later (a stream here may be waiting too).
			if len(t.watches) >= maxWatches {
				t.sweep(b.now())
			}
			if len(t.watches) < maxWatches {
				t.watches[n.Activation] = b.now().Add(watchTTL)
			}
		}
		return
	}
	if l == nil || l.writer || l.user != userID || n.Run < l.run {
		return // nobody reads it here, we run it, or an older run
	}
	if n.Run > l.run {
		// A newer run (the activation started again): follow it.
		l.run, l.frags, l.size, l.done = n.Run, nil, 0, false
		l.wake()
	}
	gap := false
	for i, f := range n.Frags {
		switch idx := n.From + i; {
		case idx == len(l.frags)+1 && l.size+len(f) <= maxLogBytes:
			l.frags = append(l.frags, f)
			l.size += len(f)
			l.wake()
		case idx > len(l.frags)+1:
			gap = true
		}
	}
	if n.Done {
		if n.Total <= len(l.frags) {
			l.done = true
			l.wake()
		} else {
			gap = true
		}
	}
	if gap {
		// A notification was lost: ask for the whole log again.
		b.rewatch(n.Activation, l)
	}
}

// sendBacklog sends a writer's log so far in notes of at most
// maxInlineDelta bytes of text, then the done marker if it ended.
func (b *Bus) sendBacklog(id string, l *tokenLog) {
	for from := 0; from < len(l.frags); {
		to, size := from, 0
		for to < len(l.frags) && (to == from || size+len(l.frags[to]) <= maxInlineDelta) {
			size += len(l.frags[to])
			to++
		}
		b.sendTokens(l.user, tokenNote{Activation: id, Run: l.run, From: from + 1, Frags: l.frags[from:to:to]})
		from = to
	}
	if l.done {
		b.sendTokens(l.user, tokenNote{Activation: id, Run: l.run, Done: true, Total: len(l.frags)})
	}
}

// rewatch asks the other nodes for a copy's activation, at most every
// rewatchEvery. Called with b.tokens.mu held.
func (b *Bus) rewatch(id string, l *tokenLog) {
	if l.writer || !b.multiNode() {
		return
	}
	now := b.now()
	if now.Sub(l.lastRewatch) < rewatchEvery {
		return
	}
	l.lastRewatch = now
	b.sendTokens(l.user, tokenNote{Activation: id, Watch: true})
}

// TokenReader reads an activation's token log on this node, watching the
// runner's on another node when it runs elsewhere.
type TokenReader struct {
	b      *Bus
	id     string
	closed bool
}

// ReadTokens starts reading activationID's tokens (userID owns it). Close
// the reader when done.
func (b *Bus) ReadTokens(userID, activationID string) *TokenReader {
	t := &b.tokens
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	l := t.logs[activationID]
	if l == nil {
		l = &tokenLog{user: userID}
		t.logs[activationID] = l
	}
	l.readers++
	if !l.writer && !l.done {
		l.lastRewatch = time.Time{}
		b.rewatch(activationID, l)
	}
	return &TokenReader{b: b, id: activationID}
}

// Tokens are what a reader sees of a log.
type Tokens struct {
	// Frags are the fragments after the one asked for, in order.
	Frags []string
	// Done: no more fragments will come for the current run: it ended
	// with all of them here, or (on a single node) nobody runs it here.
	// Meaningful once the activation has ended.
	Done bool
	// Changed is closed when the log changes.
	Changed <-chan struct{}
}

// After returns the fragments numbered after n (0: all of them).
func (r *TokenReader) After(n int) Tokens {
	t := &r.b.tokens
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.logs[r.id]
	if l == nil || r.closed {
		return Tokens{Done: true, Changed: closedChan}
	}
	var out Tokens
	if n < len(l.frags) {
		out.Frags = append([]string(nil), l.frags[max(n, 0):]...)
	}
	out.Done = l.done || (!l.writer && !r.b.multiNode())
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	out.Changed = l.changed
	return out
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Rewatch asks again for the activation's tokens from whichever node runs
// it: when it starts (it may have been queued when the reader began), or
// when it ended without all of its tokens here.
func (r *TokenReader) Rewatch() {
	t := &r.b.tokens
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.logs[r.id]; l != nil && !r.closed {
		r.b.rewatch(r.id, l)
	}
}

// Close ends the reader. A copy goes with its last reader; an ended
// writer's log stays for what is left of its retention.
func (r *TokenReader) Close() {
	t := &r.b.tokens
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	l := t.logs[r.id]
	if l == nil {
		return
	}
	l.readers--
	if l.readers > 0 {
		return
	}
	switch {
	case !l.writer, l.done && r.b.now().Sub(l.endedAt) >= TokenRetention:
		delete(t.logs, r.id)
	case l.done:
		// The retention queue may have passed it over while it was read.
		t.gen++
		l.gen = t.gen
		t.retain(r.id, l)
		t.sweep(r.b.now())
	}
}
