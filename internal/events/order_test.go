package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// commitAll stores evs, each in its own transaction, without publishing.
func commitAll(t *testing.T, b *events.Bus, s *store.Store, evs ...events.Event) []events.Event {
	t.Helper()
	ctx := context.Background()
	for i := range evs {
		require.NoError(t, s.InTx(ctx, func(tx *store.Store) error { return b.Append(ctx, tx, &evs[i]) }))
	}
	return evs
}

// TestDeliveryInSeqOrder: events published in any order reach subscribers
// in seq order; a gap whose events are never published is filled from the
// store; events committed before Subscribe are left to the replay (on
// PostgreSQL, unless another transaction still open made them not final
// yet: then they come live too, and a client drops them by seq).
func TestDeliveryInSeqOrder(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s, b := newBus(t, d)
		user := newUser(t, s)

		early := commitAll(t, b, s, event(user, events.ActivationCreated, "a", ""))
		sub := b.Subscribe(user, events.Filter{}, 64)
		byApp := b.Subscribe(user, events.Filter{AppID: "b"}, 64)
		b.Publish(ctx, early...) // committed before: the replay's, not the live stream's

		evs := commitAll(t, b, s,
			event(user, events.ActivationCreated, "a", ""), event(user, events.ActivationStarted, "b", ""),
			event(user, events.ActivationCompleted, "a", ""), event(user, events.ActivationCompleted, "b", ""))
		b.Publish(ctx, evs[2], evs[3], evs[1], evs[0])
		b.PublishDelta(ctx, user, evs[0].ActivationID, "tok") // no seq: not held back
		for i, want := range evs {
			got := receive(t, sub)
			if i == 0 && got.Seq == early[0].Seq && d == store.Postgres {
				got = receive(t, sub)
			}
			require.Equal(t, want.Seq, got.Seq)
		}
		require.Equal(t, evs[1].Seq, receive(t, byApp).Seq, "filters apply after ordering")
		require.Equal(t, evs[3].Seq, receive(t, byApp).Seq)
		requireNone(t, sub)

		// Never published (a node died between commit and publish, a
		// notification dropped): read from the store once the gap lasts.
		lost := commitAll(t, b, s, event(user, events.ActivationCreated, "a", ""), event(user, events.ActivationStarted, "a", ""))
		last := commitAll(t, b, s, event(user, events.ActivationCompleted, "a", ""))[0]
		start := time.Now()
		b.Publish(ctx, last)
		for _, want := range append(lost, last) {
			got := receive(t, sub)
			require.Equal(t, want.Seq, got.Seq)
			require.Equal(t, want.ActivationID, got.ActivationID)
		}
		require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "the gap was given time to close")
		b.Publish(ctx, lost...) // late: already out
		requireNone(t, sub)

		// A subscriber joining a stream gets the same order from then on.
		late := b.Subscribe(user, events.Filter{}, 64)
		more := commitAll(t, b, s, event(user, events.ActivationCreated, "a", ""), event(user, events.ActivationStarted, "a", ""))
		b.Publish(ctx, more[1], more[0])
		for _, c := range []*events.Subscription{sub, late} {
			require.Equal(t, more[0].Seq, receive(t, c).Seq)
			require.Equal(t, more[1].Seq, receive(t, c).Seq)
		}
	})
}

// TestBroadcastAcrossNodes: a signal broadcast on one node reaches the
// other nodes' handlers of its topic, not its own.
func TestBroadcastAcrossNodes(t *testing.T) {
	t.Parallel()
	_, _, _, b1, b2 := twoNodes(t)
	got1, got2 := make(chan string, 4), make(chan string, 4)
	b1.Handle("auth", func(u string) { got1 <- u })
	b2.Handle("auth", func(u string) { got2 <- u })
	b2.Handle("other", func(u string) { got2 <- "other:" + u })

	b2.Broadcast("auth", "u1")
	select {
	case u := <-got1:
		require.Equal(t, "u1", u)
	case <-time.After(10 * time.Second):
		t.Fatal("node 1 never heard the broadcast")
	}
	// Node 2's own broadcast came back to it too, and was skipped: a
	// broadcast from node 1 after it is the first thing node 2 hears.
	b1.Broadcast("auth", "u2")
	select {
	case u := <-got2:
		require.Equal(t, "u2", u)
	case <-time.After(10 * time.Second):
		t.Fatal("node 2 never heard the broadcast")
	}
}

// TestLiveWaitsForOpenTransaction: on PostgreSQL a transaction that began
// appending first has the lower seq even if it commits last; the event of
// one that committed meanwhile is held until the first has ended, and then
// both go out in seq order. (SQLite runs one write transaction at a time.)
func TestLiveWaitsForOpenTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, b := newBus(t, store.Postgres)
	user := newUser(t, s)
	sub := b.Subscribe(user, events.Filter{}, 16)

	first, second := event(user, events.ActivationCreated, "a", ""), event(user, events.ActivationCreated, "a", "")
	appended, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.InTx(ctx, func(tx *store.Store) error {
			err := b.Record(ctx, tx, &first)
			close(appended)
			<-release
			return err
		})
	}()
	<-appended
	second = appendCommit(t, b, s, second)
	require.Greater(t, second.Seq, first.Seq)
	select {
	case ev := <-sub.C:
		t.Fatalf("seq %d delivered while a lower one could still commit", ev.Seq)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-done)
	require.Equal(t, first.Seq, receive(t, sub).Seq)
	require.Equal(t, second.Seq, receive(t, sub).Seq)
	requireNone(t, sub)
}
