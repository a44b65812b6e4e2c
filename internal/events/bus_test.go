package events_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func newUser(t *testing.T, s *store.Store) string {
	t.Helper()
	now := store.Now()
	u := &store.User{ID: uuid.NewString(), Email: uuid.NewString() + "@example.com", PasswordHash: "h", IsActive: true, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.UserCreate(context.Background(), u, false))
	return u.ID
}

func event(user, typ, app, chat string) events.Event {
	return events.Event{Type: typ, UserID: user, ActivationID: uuid.NewString(), AgentID: uuid.NewString(),
		Status: "completed", Context: map[string]any{"app_id": app, "chat_id": chat}}
}

// newBus is a bus over a fresh store of dialect d, stopped at the end.
func newBus(t *testing.T, d store.Dialect) (*store.Store, *events.Bus) {
	t.Helper()
	s := testdb.Open(t, d)
	b := events.New(s, testdb.Logger())
	t.Cleanup(b.Stop)
	return s, b
}

// appendCommit stores ev in its own transaction and publishes it after the
// commit, the way the activation core does.
func appendCommit(t *testing.T, b *events.Bus, s *store.Store, ev events.Event) events.Event {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.InTx(ctx, func(tx *store.Store) error { return b.Append(ctx, tx, &ev) }))
	b.Publish(ctx, ev)
	return ev
}

// replayAll returns the seqs of the user's events once a replay from 0
// holds n of them (replayFrom).
func replayAll(t *testing.T, b *events.Bus, user string, n int) []int64 {
	t.Helper()
	var seqs []int64
	for _, ev := range replayFrom(t, b, user, 0, n) {
		seqs = append(seqs, ev.Seq)
	}
	return seqs
}

// replayFrom returns the user's events after since once a replay holds n
// of them: a replay returns only final events, and on PostgreSQL an event
// is final once every transaction of the cluster older than its own has
// ended (another test's may still be open).
func replayFrom(t *testing.T, b *events.Bus, user string, since int64, n int) []events.Event {
	t.Helper()
	var got []events.Event
	require.Eventually(t, func() bool {
		got = nil
		require.NoError(t, b.Replay(context.Background(), user, since, func(ev events.Event) bool { got = append(got, ev); return true }))
		return len(got) >= n
	}, 10*time.Second, time.Millisecond)
	require.Len(t, got, n)
	return got
}

func receive(t *testing.T, sub *events.Subscription) events.Event {
	t.Helper()
	select {
	case ev, ok := <-sub.C:
		require.True(t, ok, "subscription closed")
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return events.Event{}
}

func requireNone(t *testing.T, sub *events.Subscription) {
	t.Helper()
	select {
	case ev := <-sub.C:
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
}

// TestAppendSeqAndReplay: seqs increase per user (dense on SQLite, from
// the transaction id on PostgreSQL: DESIGN promises increasing, not dense),
// one append's events take consecutive ones, and a replay returns them.
func TestAppendSeqAndReplay(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s, b := newBus(t, d)
		u1, u2 := newUser(t, s), newUser(t, s)
		app := uuid.NewString()
		// dense checks SQLite's exact numbers; both dialects increase.
		dense := func(want, got int64, msg string) {
			t.Helper()
			if d == store.SQLite {
				require.EqualValues(t, want, got, msg)
			}
		}

		var seqs []int64
		for i := 1; i <= 3; i++ {
			ev := appendCommit(t, b, s, event(u1, events.ActivationCompleted, app, "c1"))
			dense(int64(i), ev.Seq, "seq counts per user")
			seqs = append(seqs, ev.Seq)
		}
		require.IsIncreasing(t, seqs)
		ev := appendCommit(t, b, s, event(u2, events.ActivationFailed, "", ""))
		dense(1, ev.Seq, "another user has their own counter")
		require.Positive(t, ev.Seq)

		// A rolled-back transaction stores nothing (and on SQLite uses up
		// no number).
		boom := errors.New("boom")
		err := s.InTx(ctx, func(tx *store.Store) error {
			ev := event(u1, events.ActivationStarted, app, "")
			require.NoError(t, b.Append(ctx, tx, &ev))
			return boom
		})
		require.ErrorIs(t, err, boom)
		next := appendCommit(t, b, s, event(u1, events.ActivationCreated, app, ""))
		dense(4, next.Seq, "")
		require.Greater(t, next.Seq, seqs[2])

		got := replayFrom(t, b, u1, seqs[0], 3)
		require.Equal(t, []int64{seqs[1], seqs[2], next.Seq}, []int64{got[0].Seq, got[1].Seq, got[2].Seq})
		for _, ev := range got {
			require.Equal(t, u1, ev.UserID)
		}
		require.Equal(t, app, got[0].ContextString("app_id"))
		require.Equal(t, next.ActivationID, got[2].ActivationID)
		require.WithinDuration(t, next.Timestamp, got[2].Timestamp, time.Millisecond)

		// Several events in one append take consecutive numbers, in order,
		// and so does a second append in the same transaction.
		created, started := event(u1, events.ActivationCreated, app, ""), event(u1, events.ActivationStarted, app, "")
		completed := event(u1, events.ActivationCompleted, app, "")
		require.NoError(t, s.InTx(ctx, func(tx *store.Store) error {
			if err := b.Append(ctx, tx, &created, &started); err != nil {
				return err
			}
			return b.Append(ctx, tx, &completed)
		}))
		dense(5, created.Seq, "")
		require.Greater(t, created.Seq, next.Seq)
		require.Equal(t, created.Seq+1, started.Seq)
		require.Equal(t, created.Seq+2, completed.Seq)
		got = replayFrom(t, b, u1, next.Seq, 3)
		require.Equal(t, []string{events.ActivationCreated, events.ActivationStarted, events.ActivationCompleted}, []string{got[0].Type, got[1].Type, got[2].Type})
		require.Equal(t, created.ActivationID, got[0].ActivationID)
		require.Equal(t, app, got[1].ContextString("app_id"))
		// Several users' events in one append (a worker's claim): each
		// user's seqs go on increasing, each replay has its own.
		u3 := newUser(t, s)
		mine, theirs, mineToo := event(u1, events.ActivationStarted, "", ""), event(u3, events.ActivationStarted, "", ""), event(u1, events.ActivationCompleted, "", "")
		require.NoError(t, b.Append(ctx, nil, &mine, &theirs, &mineToo))
		require.Greater(t, mine.Seq, completed.Seq)
		require.Greater(t, mineToo.Seq, mine.Seq)
		require.Positive(t, theirs.Seq)
		got = replayFrom(t, b, u1, completed.Seq, 2)
		require.Equal(t, []int64{mine.Seq, mineToo.Seq}, []int64{got[0].Seq, got[1].Seq})
		got = replayFrom(t, b, u3, 0, 1)
		require.Equal(t, theirs.Seq, got[0].Seq)
		require.Equal(t, theirs.ActivationID, got[0].ActivationID)

		// Retention: an event older than a day goes, a recent one stays.
		old := event(u2, events.ActivationCompleted, "", "")
		old.Timestamp = store.Now().Add(-events.Retention - time.Minute)
		old = appendCommit(t, b, s, old)
		n, err := b.Cleanup(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		replayFrom(t, b, u2, 0, 1)
		after := appendCommit(t, b, s, event(u2, events.ActivationCompleted, "", "")).Seq
		dense(3, after, "seq keeps increasing after a cleanup")
		require.Greater(t, after, old.Seq, "seq keeps increasing after a cleanup")
	})
}

// TestSeqVisibleInCommitOrder appends from many transactions of one user at
// once while a reader polls: what the reader sees must always be a prefix
// of what it finally sees, i.e. no seq is ever added below one a reader
// has seen (on SQLite: 1..n with no hole).
func TestSeqVisibleInCommitOrder(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s, b := newBus(t, d)
		user := newUser(t, s)
		const writers, each = 8, 25

		done := make(chan struct{})
		var wg sync.WaitGroup
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					err := s.InTx(ctx, func(tx *store.Store) error {
						ev := event(user, events.ActivationCompleted, "", "")
						if err := b.Append(ctx, tx, &ev); err != nil {
							return err
						}
						// More work after the append keeps the transaction open.
						_, err := tx.EventListAfter(ctx, user, 0, 5)
						return err
					})
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		go func() { wg.Wait(); close(done) }()
		var snapshots [][]int64
		for finished := false; !finished; {
			select {
			case <-done:
				finished = true
			default:
			}
			var seqs []int64
			require.NoError(t, b.Replay(ctx, user, 0, func(ev events.Event) bool { seqs = append(seqs, ev.Seq); return true }))
			snapshots = append(snapshots, seqs)
		}
		all := replayAll(t, b, user, writers*each)
		require.IsIncreasing(t, all)
		if d == store.SQLite {
			require.EqualValues(t, writers*each, all[len(all)-1], "dense")
		}
		for _, seqs := range snapshots {
			if len(seqs) > 0 {
				require.Equal(t, all[:len(seqs)], seqs, "a seq was added below one already read")
			}
		}
		t.Logf("%d consistent snapshots", len(snapshots))
	})
}

func TestFanOut(t *testing.T) {
	t.Parallel()
	s, b := newBus(t, store.SQLite)
	u1, u2 := newUser(t, s), newUser(t, s)

	all := b.Subscribe(u1, events.Filter{}, 16)
	byApp := b.Subscribe(u1, events.Filter{AppID: "a1"}, 16)
	byChat := b.Subscribe(u1, events.Filter{ChatID: "c2"}, 16)
	other := b.Subscribe(u2, events.Filter{}, 16)

	e1 := appendCommit(t, b, s, event(u1, events.ActivationCompleted, "a1", "c1"))
	e2 := appendCommit(t, b, s, event(u1, events.ActivationFailed, "a2", "c2"))
	require.Equal(t, e1.Seq, receive(t, all).Seq)
	require.Equal(t, e2.Seq, receive(t, all).Seq)
	require.Equal(t, e1.ActivationID, receive(t, byApp).ActivationID)
	require.Equal(t, e2.ActivationID, receive(t, byChat).ActivationID)
	requireNone(t, byApp)
	requireNone(t, byChat)
	requireNone(t, other)

	// Deltas go only to those who ask for them, of their activation.
	deltas := b.Subscribe(u1, events.Filter{ActivationID: e1.ActivationID, Deltas: true}, 16)
	b.PublishDelta(context.Background(), u1, e1.ActivationID, "Hel")
	b.PublishDelta(context.Background(), u1, e2.ActivationID, "nope")
	d := receive(t, deltas)
	require.Equal(t, events.Token, d.Type)
	require.Equal(t, "Hel", d.Delta)
	require.Zero(t, d.Seq)
	requireNone(t, deltas)
	requireNone(t, all)

	all.Close()
	all.Close()
	_, ok := <-all.C
	require.False(t, ok)
	require.False(t, all.Dropped())
}

// TestSubscribeNewStartsNow: a subscriber that does not replay (a socket
// without since) gets the events committed after it subscribed, not those
// committed before that still wait for the store's horizon (PostgreSQL:
// an open transaction anywhere in the cluster holds it back), whether it
// joins a stream that holds them or starts one that reads them from the
// store. A subscriber that replays gets them live: its replay stops at the
// horizon.
func TestSubscribeNewStartsNow(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s, b := newBus(t, d)
		u := newUser(t, s)
		// hold keeps the horizon below the events to come until release.
		hold := func() (release func()) {
			if d != store.Postgres {
				return func() {}
			}
			tx, err := s.DB().BeginTx(ctx, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = tx.Rollback() })
			_, err = tx.ExecContext(ctx, "SELECT txid_current()")
			require.NoError(t, err)
			return func() { require.NoError(t, tx.Rollback()) }
		}
		for _, joins := range []bool{true, false} {
			release := hold()
			var replays *events.Subscription
			if joins {
				replays = b.Subscribe(u, events.Filter{}, 16)
			}
			e1 := appendCommit(t, b, s, event(u, events.ActivationCompleted, "", ""))
			fresh := b.SubscribeNew(u, events.Filter{}, 16)
			if !joins { // its stream read e1 from the store
				replays = b.Subscribe(u, events.Filter{}, 16)
			}
			release()
			e2 := appendCommit(t, b, s, event(u, events.ActivationCompleted, "", ""))
			require.Equal(t, e2.Seq, receive(t, fresh).Seq, "joins %v: e1 (%d), committed before it subscribed, came first", joins, e1.Seq)
			if joins || d == store.Postgres {
				require.Equal(t, e1.Seq, receive(t, replays).Seq)
			}
			require.Equal(t, e2.Seq, receive(t, replays).Seq)
			fresh.Close()
			replays.Close()
		}
	})
}

// TestSlowSubscriberIsDropped: a subscriber that does not read loses its
// subscription; the publisher and the others go on.
func TestSlowSubscriberIsDropped(t *testing.T) {
	t.Parallel()
	s, b := newBus(t, store.SQLite)
	user := newUser(t, s)
	slow := b.Subscribe(user, events.Filter{}, 4)
	fast := b.Subscribe(user, events.Filter{}, 4)

	start := time.Now()
	for i := range 1000 {
		ev := event(user, events.ActivationCompleted, "", "")
		ev.Seq = int64(i + 1)
		b.Publish(context.Background(), ev)
		require.EqualValues(t, i+1, receive(t, fast).Seq)
	}
	require.Less(t, time.Since(start), 10*time.Second)
	n := 0
	for range slow.C {
		n++
	}
	require.Equal(t, 4, n, "the buffer's worth, then closed")
	require.True(t, slow.Dropped())
	require.False(t, fast.Dropped())
}

func TestStopClosesSubscriptions(t *testing.T) {
	t.Parallel()
	_, b := newBus(t, store.SQLite)
	sub := b.Subscribe("u", events.Filter{}, 1)
	b.Stop()
	b.Stop()
	_, ok := <-sub.C
	require.False(t, ok)
	require.False(t, sub.Dropped())
	late := b.Subscribe("u", events.Filter{}, 1)
	_, ok = <-late.C
	require.False(t, ok, "a stopped bus hands out closed subscriptions")
}

// twoNodes returns two started buses on separate pools of one PostgreSQL
// schema, as two processes would have, and that schema's URL.
func twoNodes(t *testing.T) (string, *store.Store, *store.Store, *events.Bus, *events.Bus) {
	t.Helper()
	ctx := context.Background()
	url := testdb.URL(t, store.Postgres)
	open := func() (*store.Store, *events.Bus) {
		s, err := store.Open(ctx, url)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		require.NoError(t, s.Migrate(ctx, testdb.Logger()))
		b := events.New(s, testdb.Logger())
		require.NoError(t, b.Start(ctx))
		t.Cleanup(b.Stop)
		return s, b
	}
	s1, b1 := open()
	s2, b2 := open()
	return url, s1, s2, b1, b2
}

// TestListenerReconnects kills the LISTEN connection: the subscribers of
// that node are closed as dropped (they may have missed events), and the
// node listens again by itself.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, s1, s2, b1, b2 := twoNodes(t)
	user := newUser(t, s1)
	sub := b1.Subscribe(user, events.Filter{}, 16)

	channel, err := s1.EventChannel(ctx)
	require.NoError(t, err)
	admin, err := sql.Open("pgx", url)
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close() })
	var killed int
	require.NoError(t, admin.QueryRowContext(ctx, `SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query = 'LISTEN "' || $1 || '"' AND pid <> pg_backend_pid()`, channel).Scan(&killed))
	require.Equal(t, 2, killed, "both nodes' listeners")

	select {
	case _, ok := <-sub.C:
		require.False(t, ok)
	case <-time.After(10 * time.Second):
		t.Fatal("the subscriber was not told about the gap")
	}
	require.True(t, sub.Dropped())

	// Once listening again, node 1 hears node 2. Until then a publish may
	// be lost, so publish until one arrives.
	deadline := time.Now().Add(30 * time.Second)
	for {
		again := b1.Subscribe(user, events.Filter{}, 16)
		ev := appendCommit(t, b2, s2, event(user, events.ActivationCompleted, "", ""))
		// An earlier round's event, lost to node 1 then but not final yet
		// when again began, may come first (from the store).
		timeout := time.After(200 * time.Millisecond)
	read:
		for {
			select {
			case got, ok := <-again.C:
				if !ok {
					break read
				}
				if got.Seq < ev.Seq {
					continue
				}
				require.Equal(t, ev.Seq, got.Seq)
				again.Close()
				return
			case <-timeout:
				break read
			}
		}
		again.Close()
		require.True(t, time.Now().Before(deadline), "node 1 never listened again")
	}
}

// TestCrossNode runs two buses on separate connection pools of one
// PostgreSQL schema, as two nodes would: what one publishes, the other's
// subscribers get, once; large events travel by reference. (Token
// fragments cross only to a node that reads them: tokens_test.go.)
func TestCrossNode(t *testing.T) {
	t.Parallel()
	_, s1, s2, b1, b2 := twoNodes(t)
	user := newUser(t, s1)

	on1 := b1.Subscribe(user, events.Filter{}, 16)
	on2 := b2.Subscribe(user, events.Filter{}, 16)

	small := appendCommit(t, b2, s2, event(user, events.ActivationCompleted, "a", "c"))
	big := event(user, events.ActivationCompleted, "a", "c")
	big.OutputData = json.RawMessage(`{"response":"` + strings.Repeat("x", 20000) + `"}`)
	big = appendCommit(t, b2, s2, big)

	for _, sub := range []*events.Subscription{on1, on2} {
		got := receive(t, sub)
		require.Equal(t, small.Seq, got.Seq)
		require.Equal(t, small.ActivationID, got.ActivationID)
		require.Equal(t, "a", got.ContextString("app_id"))
		got = receive(t, sub)
		require.Equal(t, big.Seq, got.Seq)
		require.JSONEq(t, string(big.OutputData), string(got.OutputData))
	}
	// Node 2 delivered its own events locally and skipped its own
	// notifications: nothing twice.
	requireNone(t, on2)
	requireNone(t, on1)
}

// TestCleanupJob runs the retention job on the real queue.
func TestCleanupJob(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s, b := newBus(t, d)
		user := newUser(t, s)
		old := event(user, events.ActivationCompleted, "", "")
		old.Timestamp = store.Now().Add(-events.Retention - time.Hour)
		appendCommit(t, b, s, old)

		q := queue.New(s, testdb.Logger(), queue.Options{RunWorkers: true, Workers: 1, FetchPollInterval: 100 * time.Millisecond})
		b.AddJobs(q)
		require.NoError(t, q.Start(ctx))
		t.Cleanup(func() { require.NoError(t, q.Stop(context.Background())) })
		// The periodic schedule's first run is an hour away: insert one now.
		_, err := q.Client().Insert(ctx, events.CleanupArgs{}, nil)
		require.NoError(t, err)
		deadline := time.Now().Add(30 * time.Second)
		for {
			rows, err := s.EventListAfter(ctx, user, 0, 10)
			require.NoError(t, err)
			if len(rows) == 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "the cleanup job never ran")
			time.Sleep(20 * time.Millisecond) //nolint:forbidigo // polling the database with a deadline
		}
	})
}
