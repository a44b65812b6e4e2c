package store_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// holdCommitter runs a transaction that waits until the returned release is
// called, so that the transactions submitted meanwhile share the next commit
// on SQLite (commit.go). wait blocks until n of them queue.
func holdCommitter(t *testing.T, s *store.Store) (wait func(n int), release func()) {
	t.Helper()
	held, gate, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.InTx(context.Background(), func(*store.Store) error {
			close(held)
			<-gate
			return nil
		})
	}()
	<-held
	wait = func(n int) {
		if s.Dialect() != store.SQLite {
			return // one transaction each: nothing queues
		}
		require.Eventually(t, func() bool { return s.QueuedTxs() >= n }, 10*time.Second, time.Millisecond)
	}
	release = sync.OnceFunc(func() {
		close(gate)
		require.NoError(t, <-done)
	})
	t.Cleanup(release)
	return wait, release
}

// userAt is an active user with email, not yet stored.
func userAt(email string) *store.User {
	now := store.Now()
	return &store.User{ID: uuid.Must(uuid.NewV7()).String(), Email: email, PasswordHash: "h", IsActive: true, CreatedAt: now, UpdatedAt: now}
}

// Transactions that share a commit keep their own outcome: one that fails
// or panics rolls back alone, the others commit.
func TestSharedCommitKeepsEachOutcome(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		wait, release := holdCommitter(t, s)

		const n = 30
		boom := errors.New("boom")
		errs := make([]error, n)
		panics := make([]any, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { panics[i] = recover() }()
				errs[i] = s.InTx(ctx, func(tx *store.Store) error {
					if err := tx.UserCreate(ctx, userAt(fmt.Sprintf("u%d@x.io", i)), false); err != nil {
						return err
					}
					switch i % 3 {
					case 1:
						return boom
					case 2:
						panic(fmt.Sprintf("panic %d", i))
					}
					return nil
				})
			}()
		}
		wait(n)
		release()
		wg.Wait()

		for i := range n {
			_, err := s.UserGetByEmail(ctx, fmt.Sprintf("u%d@x.io", i))
			switch i % 3 {
			case 0:
				require.NoError(t, errs[i], "tx %d", i)
				require.Nil(t, panics[i])
				require.NoError(t, err, "tx %d committed", i)
			case 1:
				require.ErrorIs(t, errs[i], boom)
				require.ErrorIs(t, err, store.ErrNotFound, "tx %d rolled back", i)
			case 2:
				require.Equal(t, fmt.Sprintf("panic %d", i), panics[i], "the panic reaches its caller")
				require.ErrorIs(t, err, store.ErrNotFound, "tx %d rolled back", i)
			}
		}
	})
}

// Transactions whose callers do not wait (InTxThen) queue without
// blocking them, hundreds past what a batch holds, beside those of callers
// who wait, and each caller hears its own outcome: then runs after the
// commit and its AfterCommit functions, and a failed one's AfterCommit
// never runs.
func TestCommitsNobodyWaitsFor(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		wait, release := holdCommitter(t, s)

		const async, waiting = 600, 30
		boom := errors.New("boom")
		outcomes := make(chan string, async+waiting)
		for i := range async {
			var committed bool
			// Called here, one after another, while the committer is
			// held: on SQLite none may wait for it.
			s.InTxThen(ctx, func(tx *store.Store) error {
				if err := tx.UserCreate(ctx, userAt(fmt.Sprintf("a%d@x.io", i)), false); err != nil {
					return err
				}
				tx.AfterCommit(func() { committed = true })
				if i%4 == 1 {
					return boom
				}
				return nil
			}, func(err error) {
				_, found := s.UserGetByEmail(context.Background(), fmt.Sprintf("a%d@x.io", i))
				switch {
				case i%4 == 1 && errors.Is(err, boom) && !committed && errors.Is(found, store.ErrNotFound):
				case i%4 != 1 && err == nil && committed && found == nil:
				default:
					outcomes <- fmt.Sprintf("a%d: err %v, AfterCommit run %v, read %v", i, err, committed, found)
					return
				}
				outcomes <- ""
			})
		}
		var wg sync.WaitGroup
		for i := range waiting {
			wg.Go(func() {
				err := s.InTx(ctx, func(tx *store.Store) error {
					return tx.UserCreate(ctx, userAt(fmt.Sprintf("s%d@x.io", i)), false)
				})
				if err != nil {
					outcomes <- fmt.Sprintf("s%d: %v", i, err)
					return
				}
				outcomes <- ""
			})
		}
		wait(async + waiting)
		release()
		wg.Wait()
		for _, o := range receiveAll(t, outcomes, async+waiting, "a transaction's caller never heard of it") {
			require.Empty(t, o)
		}
	})
}

// receiveAll receives n values from c, failing the test with missing if
// one has not come within 20 s.
func receiveAll[T any](t *testing.T, c <-chan T, n int, missing string) []T {
	t.Helper()
	out := make([]T, 0, n)
	for range n {
		select {
		case v := <-c:
			out = append(out, v)
		case <-time.After(20 * time.Second):
			t.Fatal(missing)
		}
	}
	return out
}

// Closing the store with transactions queued that nobody waits for
// commits them first, and every caller hears its outcome; one queued after
// the close hears that the store is closed.
func TestCloseCommitsWhatNobodyWaitsFor(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		wait, release := holdCommitter(t, s)
		const n = 300
		outcomes := make(chan error, n)
		for i := range n {
			s.InTxThen(ctx, func(tx *store.Store) error {
				return tx.UserCreate(ctx, userAt(fmt.Sprintf("c%d@x.io", i)), false)
			}, func(err error) { outcomes <- err })
		}
		wait(n)
		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		release()
		require.NoError(t, <-closed)
		for _, err := range receiveAll(t, outcomes, n, "a transaction queued before the close was never heard of") {
			require.NoError(t, err)
		}
		var after error
		s.InTxThen(ctx, func(*store.Store) error { return nil }, func(err error) { after = err })
		require.Error(t, after, "the store is closed")
	})
}

// A caller that gives up while its transaction waits gets its context's
// error and writes nothing; one that cancels while its transaction runs
// does not interrupt the others sharing the commit.
func TestSharedCommitAndCancellation(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		wait, release := holdCommitter(t, s)

		var wg sync.WaitGroup
		errs := make([]error, 3)
		tx := func(i int, ctx context.Context, before func()) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.InTx(ctx, func(tx *store.Store) error {
					before()
					return tx.UserCreate(ctx, userAt(fmt.Sprintf("c%d@x.io", i)), false)
				})
			}()
		}
		tx(0, ctx, func() {})
		gaveUp, giveUp := context.WithCancel(ctx)
		tx(1, gaveUp, func() {})
		running, cancelRunning := context.WithCancel(ctx)
		tx(2, running, cancelRunning)
		wait(3)
		if d == store.SQLite {
			giveUp() // queued, not yet run
		}
		release()
		wg.Wait()
		giveUp()

		_, err := s.UserGetByEmail(ctx, "c0@x.io")
		require.NoError(t, err)
		if d == store.SQLite {
			require.ErrorIs(t, errs[1], context.Canceled)
			_, err = s.UserGetByEmail(ctx, "c1@x.io")
			require.ErrorIs(t, err, store.ErrNotFound)
		}
		require.NoError(t, errs[0])
	})
}

// What the activation cache answers (SQLite) follows commits only.
func TestActivationReadsFollowCommits(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "a@x.io", false)
		now := store.Now()
		app := &store.App{ID: uuid.NewString(), UserID: u.ID, Name: "A", Slug: "a", CreatedAt: now, UpdatedAt: now}
		require.NoError(t, s.AppCreate(ctx, app))
		agent := &store.Agent{ID: uuid.NewString(), AppID: app.ID, UserID: u.ID, Name: "g", AgentTypeID: "llm", Version: "1", Status: "active", TimeoutSeconds: 30, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, s.AgentCreate(ctx, agent))
		newActivation := func(key string) *store.Activation {
			return &store.Activation{ID: uuid.NewString(), UserID: u.ID, AppID: app.ID, AgentID: agent.ID, Status: store.StatusQueued,
				Priority: 2, CreatedAt: store.Now(), IdempotencyKey: key}
		}
		status := func(id string) string {
			a, err := s.ActivationGet(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				return "missing"
			}
			require.NoError(t, err)
			return a.Status
		}

		// A rolled-back insert is not there.
		a := newActivation("k")
		boom := errors.New("boom")
		require.ErrorIs(t, s.InTx(ctx, func(tx *store.Store) error {
			require.NoError(t, tx.ActivationCreate(ctx, a))
			return boom
		}), boom)
		require.Equal(t, "missing", status(a.ID))

		require.NoError(t, s.InTx(ctx, func(tx *store.Store) error { return tx.ActivationCreate(ctx, a) }))
		require.Equal(t, store.StatusQueued, status(a.ID))

		// A claim rolled back leaves it queued; a committed one shows.
		require.ErrorIs(t, s.InTx(ctx, func(tx *store.Store) error {
			_, ok, err := tx.ActivationClaim(ctx, a.ID, "w1", store.Now())
			require.NoError(t, err)
			require.True(t, ok)
			return boom
		}), boom)
		require.Equal(t, store.StatusQueued, status(a.ID))
		_, ok, err := s.ActivationClaim(ctx, a.ID, "w1", store.Now())
		require.NoError(t, err)
		require.True(t, ok)
		got, err := s.ActivationGet(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusRunning, got.Status)
		require.Equal(t, "w1", got.WorkerID)
		require.Equal(t, 1, got.Attempt)

		ok, err = s.ActivationRequeue(ctx, a.ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, store.StatusQueued, status(a.ID))
		_, _, err = s.ActivationClaim(ctx, a.ID, "w2", store.Now())
		require.NoError(t, err)
		_, ok, err = s.ActivationFinish(ctx, a.ID, store.Outcome{Status: store.StatusCompleted, OutputData: []byte(`{"response":"hi"}`), CompletedAt: store.Now()})
		require.NoError(t, err)
		require.True(t, ok)
		got, err = s.ActivationGet(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, got.Status)
		require.JSONEq(t, `{"response":"hi"}`, string(got.OutputData))
		got.Status = "scribbled" // a caller's copy, not the cache's entry
		require.Equal(t, store.StatusCompleted, status(a.ID))

		require.NoError(t, s.ActivationReleaseIdempotencyKey(ctx, u.ID, "k", store.Now().Add(time.Second)))
		got, err = s.ActivationGet(ctx, a.ID)
		require.NoError(t, err)
		require.Empty(t, got.IdempotencyKey)

		b := newActivation("")
		require.NoError(t, s.ActivationCreate(ctx, b))
		_, ok, err = s.ActivationCancel(ctx, b.ID, "Cancelled by user", store.Now())
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, store.StatusFailed, status(b.ID))

		// Deleting the app takes its activations along.
		require.NoError(t, s.AppDelete(ctx, app.ID))
		require.Equal(t, "missing", status(a.ID))
		require.Equal(t, "missing", status(b.ID))
	})
}

// One process serves a SQLite database; PostgreSQL has no such lock.
func TestExclusive(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		url := testdb.URL(t, d)
		first, err := store.Open(ctx, url)
		require.NoError(t, err)
		defer first.Close()
		second, err := store.Open(ctx, url)
		require.NoError(t, err)
		defer second.Close()

		require.NoError(t, first.Exclusive())
		err = second.Exclusive()
		if d == store.Postgres {
			require.NoError(t, err)
			return
		}
		require.ErrorContains(t, err, "in use by another agentplatform process")
		require.NoError(t, first.Close())
		require.NoError(t, second.Exclusive(), "free once the first closes")
	})
}

// A registration whose caller cancels while its INSERT runs must not
// interrupt the transaction it shares: on SQLite an interrupted INSERT
// rolls back the whole transaction, everyone's work in the batch with it.
// The INSERT is made long by a TEMP trigger on the committer's connection,
// and the caller cancels once the goroutine dump shows the statement
// stepping. Not parallel: it reads every goroutine's stack.
func TestSharedCommitSurvivesCancelledRegistration(t *testing.T) {
	ctx := context.Background()
	s := testdb.Open(t, store.SQLite)
	require.NoError(t, s.ExecOnWriter(ctx, fmt.Sprintf(`CREATE TEMP TABLE filler AS
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) SELECT i FROM n`, slowVictimRows)))
	require.NoError(t, s.ExecOnWriter(ctx, `CREATE TEMP TRIGGER slow_victim AFTER INSERT ON main.users
		WHEN NEW.email = 'victim@x.io' BEGIN SELECT count(*) FROM temp.filler a, temp.filler b; END`))
	wait, release := holdCommitter(t, s)

	const others = 5
	var wg sync.WaitGroup
	errs := make([]error, others)
	for i := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.InTx(ctx, func(tx *store.Store) error { return tx.UserCreate(ctx, userAt(fmt.Sprintf("o%d@x.io", i)), false) })
		}()
		wait(i + 1) // in this order: all of them before the victim in the batch
	}
	victim, cancel := context.WithCancel(ctx)
	defer cancel()
	sawInsert := make(chan bool, 1)
	var victimErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		victimErr = s.InTx(victim, func(tx *store.Store) error {
			stop := make(chan struct{})
			defer close(stop)
			go func() { sawInsert <- cancelWhenStepping(stop, cancel) }()
			return tx.UserCreate(victim, userAt("victim@x.io"), true)
		})
	}()
	wait(others + 1)
	release()
	wg.Wait()
	require.True(t, <-sawInsert, "the registration's INSERT was seen running and cancelled")

	for i := range others {
		require.NoError(t, errs[i], "writer %d shares the commit with the cancelled registration", i)
		_, err := s.UserGetByEmail(ctx, fmt.Sprintf("o%d@x.io", i))
		require.NoError(t, err, "writer %d committed", i)
	}
	_, err := s.UserGetByEmail(ctx, "victim@x.io")
	if victimErr == nil {
		require.NoError(t, err, "a registration that succeeded is stored")
	} else {
		require.ErrorIs(t, err, store.ErrNotFound, "a registration that failed is not")
	}
}

// cancelWhenStepping calls cancel once a goroutine runs UserCreate's
// INSERT inside SQLite (past the driver's check of the context, so that
// the cancel lands mid-statement); false if stop comes first.
func cancelWhenStepping(stop <-chan struct{}, cancel func()) bool {
	buf := make([]byte, 1<<20)
	for {
		select {
		case <-stop:
			return false
		case <-time.After(time.Millisecond):
		}
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "store.(*Store).UserCreate") && strings.Contains(g, "modernc.org/sqlite.(*stmt).exec") &&
				strings.Contains(g, "Xsqlite3_step") {
				cancel()
				return true
			}
		}
	}
}
