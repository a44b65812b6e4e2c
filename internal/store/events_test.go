package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func eventRow(user string) *store.EventRow {
	return &store.EventRow{UserID: user, Type: "activation_completed", ActivationID: uuid.NewString(),
		Payload: []byte(`{"type":"activation_completed"}`), CreatedAt: store.Now()}
}

// waitFinal waits until every event of user up to seq is final (the
// horizon passed it): another test's transaction may hold it back a while.
func waitFinal(t *testing.T, s *store.Store, user string, seq int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		last, err := s.EventLastSeq(context.Background(), user)
		require.NoError(t, err)
		return last >= seq
	}, 10*time.Second, time.Millisecond)
}

// TestEventAppendsDoNotWait: on PostgreSQL two transactions of one user
// append events at once without waiting for each other (the per-user
// counter row, locked until commit, made the second wait for the first),
// and no reader gets past a seq that a transaction still open could fill
// below: the second transaction's event, committed first but numbered
// after the open one's, is neither replayed nor counted final until the
// first has ended; then both come, in order. (SQLite runs one write
// transaction at a time: nothing to wait for there.)
func TestEventAppendsDoNotWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testdb.Open(t, store.Postgres)
	u := newUser(t, s, "hot@example.com", false)
	e0 := eventRow(u.ID)
	require.NoError(t, s.EventAppend(ctx, e0))
	waitFinal(t, s, u.ID, e0.Seq)

	e1, e2 := eventRow(u.ID), eventRow(u.ID)
	appended, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.InTx(ctx, func(tx *store.Store) error {
			if err := tx.EventAppend(ctx, e1); err != nil {
				close(appended)
				return err
			}
			close(appended)
			<-release
			return nil
		})
	}()
	<-appended
	opened := true
	defer func() {
		if opened {
			close(release)
			<-done
		}
	}()

	tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, s.InTx(tctx, func(tx *store.Store) error { return tx.EventAppend(tctx, e2) }),
		"the second transaction waited for the first")
	require.Less(t, time.Since(start), time.Second)
	require.Greater(t, e2.Seq, e1.Seq, "numbered after the open transaction, which began appending first")
	require.Greater(t, e1.Seq, e0.Seq)

	// While the first is open, its seq could still appear: nothing from it
	// on is final, though e2 has committed.
	rows, err := s.EventListAfter(ctx, u.ID, e0.Seq, 10)
	require.NoError(t, err)
	require.Empty(t, rows, "a replay went past a seq an open transaction holds")
	last, err := s.EventLastSeq(ctx, u.ID)
	require.NoError(t, err)
	require.GreaterOrEqual(t, last, e0.Seq)
	require.Less(t, last, e1.Seq)
	next, tail, err := s.EventTail(ctx, u.ID)
	require.NoError(t, err)
	require.LessOrEqual(t, next, e1.Seq)
	require.Len(t, tail, 1, "a live stream starting now gets e2 from the store, e1 once published")
	require.Equal(t, e2.Seq, tail[0].Seq)
	horizon, seqs, err := s.EventScan(ctx, []string{u.ID}, []int64{0})
	require.NoError(t, err)
	require.LessOrEqual(t, horizon, e1.Seq)
	require.Equal(t, []int64{e0.Seq}, seqs[u.ID])

	sctx, scancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer scancel()
	require.ErrorIs(t, s.EventSettle(sctx), context.DeadlineExceeded, "settled while a transaction of before is open")

	opened = false
	close(release)
	require.NoError(t, <-done)
	require.NoError(t, s.EventSettle(ctx))
	rows, err = s.EventListAfter(ctx, u.ID, e0.Seq, 10)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, []int64{e1.Seq, e2.Seq}, []int64{rows[0].Seq, rows[1].Seq})
	_, seqs, err = s.EventScan(ctx, []string{u.ID}, []int64{e0.Seq})
	require.NoError(t, err)
	require.Equal(t, []int64{e1.Seq, e2.Seq}, seqs[u.ID])
}

// TestEventSeqRebase: after a dump is restored into a cluster whose
// transaction ids are lower than the stored events' (simulated by lowering
// the base), Migrate raises the base, so that new seqs are again above
// every stored one.
func TestEventSeqRebase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testdb.Open(t, store.Postgres)
	u := newUser(t, s, "restored@example.com", false)
	e := eventRow(u.ID)
	require.NoError(t, s.EventAppend(ctx, e))
	_, err := s.DB().ExecContext(ctx, `UPDATE event_seq_base SET base = base - $1`, e.Seq>>store.SeqBits)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx, testdb.Logger()))
	later := eventRow(u.ID)
	require.NoError(t, s.EventAppend(ctx, later))
	require.Greater(t, later.Seq, e.Seq)
	// And in the usual case Migrate leaves the base alone.
	var base, again int64
	require.NoError(t, s.DB().QueryRowContext(ctx, `SELECT base FROM event_seq_base`).Scan(&base))
	require.NoError(t, s.Migrate(ctx, testdb.Logger()))
	require.NoError(t, s.DB().QueryRowContext(ctx, `SELECT base FROM event_seq_base`).Scan(&again))
	require.Equal(t, base, again)
}
