package events_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// heard is what a plain LISTEN on the nodes' channel receives.
type heard struct {
	mu       sync.Mutex
	payloads []string
}

func (h *heard) with(user string) (n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.payloads {
		if strings.Contains(p, `"u":"`+user+`"`) && !strings.Contains(p, `"g":`) {
			n++
		}
	}
	return n
}

// listenTo records every notification of s's channel until the test ends.
func listenTo(t *testing.T, s *store.Store) *heard {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := s.EventChannel(ctx)
	require.NoError(t, err)
	h := &heard{}
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_ = s.EventListen(ctx, ch, func() { close(ready) }, func(p string) {
			h.mu.Lock()
			h.payloads = append(h.payloads, p)
			h.mu.Unlock()
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-done:
		t.Fatal("LISTEN failed")
	}
	return h
}

// TestEventsGoOnlyWhereSubscribed: a node sends another node a user's
// events only once a node has said it subscribes to that user; a user
// nobody subscribes to costs the database no notification.
func TestEventsGoOnlyWhereSubscribed(t *testing.T) {
	t.Parallel()
	_, s1, s2, b1, b2 := twoNodes(t)
	watched, unwatched := newUser(t, s1), newUser(t, s1)
	h := listenTo(t, s1)

	sub := b1.Subscribe(watched, events.Filter{}, 64)
	defer sub.Close()
	// Node 2 hears node 1's interest soon: from then on the watched
	// user's events are notified.
	require.Eventually(t, func() bool {
		appendCommit(t, b2, s2, event(watched, events.ActivationCompleted, "a", "c"))
		return h.with(watched) > 0
	}, 10*time.Second, 20*time.Millisecond)

	appendCommit(t, b2, s2, event(unwatched, events.ActivationCompleted, "a", "c"))
	before := h.with(watched)
	last := appendCommit(t, b2, s2, event(watched, events.ActivationCompleted, "a", "c"))
	// One sender's notifications arrive in the order it sent them.
	require.Eventually(t, func() bool { return h.with(watched) > before }, 10*time.Second, time.Millisecond)
	require.Zero(t, h.with(unwatched), "an event nobody subscribes to was notified")

	// Every event reached the subscriber, once, in order, the last one too.
	var seq int64
	for {
		ev := receive(t, sub)
		require.Greater(t, ev.Seq, seq)
		seq = ev.Seq
		if ev.Seq == last.Seq {
			break
		}
	}
}

// TestAnEventNotNotifiedStillArrives: a node that has not heard of a
// subscriber elsewhere (here: it never listens) does not notify its
// events; the subscriber's node finds them in the store and hands them
// out, in order, within about a second (the test allows 15: an event goes
// out once the cluster's older transactions have ended, other tests'
// included).
func TestAnEventNotNotifiedStillArrives(t *testing.T) {
	t.Parallel()
	_, s1, _, b1, _ := twoNodes(t)
	deaf := events.New(s1, testdb.Logger()) // publishes, never listens
	t.Cleanup(deaf.Stop)
	user := newUser(t, s1)

	sub := b1.Subscribe(user, events.Filter{}, 16)
	defer sub.Close()
	var sent []events.Event
	for range 3 {
		sent = append(sent, appendCommit(t, deaf, s1, event(user, events.ActivationCompleted, "a", "c")))
	}
	for _, want := range sent {
		select {
		case got, ok := <-sub.C:
			require.True(t, ok)
			require.Equal(t, want.Seq, got.Seq)
			require.Equal(t, want.ActivationID, got.ActivationID)
		case <-time.After(15 * time.Second):
			t.Fatal("an event no node notified never reached the subscriber")
		}
	}
	requireNone(t, sub)
}
