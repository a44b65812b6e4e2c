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

// ActivationCreateRecorded stores an activation and its events together
// (on PostgreSQL in one statement), their seqs in order; a second
// activation with the same idempotency key is a conflict that stores
// neither it nor its events; in a transaction, both go with it.
func TestActivationCreateRecorded(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "a@x.io", false)
		agent := newAgent(t, s, newApp(t, s, u.ID, "a"), "g", "")
		activation := func() *store.Activation {
			return &store.Activation{ID: uuid.NewString(), UserID: u.ID, AppID: agent.AppID, AgentID: agent.ID, Status: store.StatusQueued,
				Priority: 2, CreatedAt: store.Now(), IdempotencyKey: "k", RequestHash: "h"}
		}
		events := func(a *store.Activation, types ...string) []*store.EventRow {
			var rows []*store.EventRow
			for _, typ := range types {
				rows = append(rows, &store.EventRow{UserID: u.ID, Type: typ, ActivationID: a.ID, AppID: a.AppID, Payload: []byte(`{}`), CreatedAt: store.Now()})
			}
			return rows
		}
		a := activation()
		rows := events(a, "activation.created", "activation.started")
		require.NoError(t, s.ActivationCreateRecorded(ctx, a, rows...))
		require.Less(t, rows[0].Seq, rows[1].Seq)
		got, err := s.ActivationGet(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusQueued, got.Status)

		dup := activation()
		err = s.ActivationCreateRecorded(ctx, dup, events(dup, "activation.created")...)
		require.ErrorIs(t, err, store.ErrConflict)
		_, err = s.ActivationGet(ctx, dup.ID)
		require.ErrorIs(t, err, store.ErrNotFound)

		rolled := activation()
		rolled.IdempotencyKey = "other"
		require.Error(t, s.InTx(ctx, func(tx *store.Store) error {
			require.NoError(t, tx.ActivationCreateRecorded(ctx, rolled, events(rolled, "activation.created")...))
			return store.ErrNotFound // rolls back
		}))
		_, err = s.ActivationGet(ctx, rolled.ID)
		require.ErrorIs(t, err, store.ErrNotFound)

		// Read once final: on PostgreSQL, another test's transaction still
		// open holds the horizon back a moment.
		var seqs []int64
		require.Eventually(t, func() bool {
			stored, err := s.EventListAfter(ctx, u.ID, 0, 10)
			require.NoError(t, err)
			seqs = seqs[:0]
			for _, e := range stored {
				require.Equal(t, a.ID, e.ActivationID, "only the stored activation's events")
				seqs = append(seqs, e.Seq)
			}
			return len(seqs) == 2
		}, 10*time.Second, 5*time.Millisecond)
		require.Equal(t, []int64{rows[0].Seq, rows[1].Seq}, seqs)
	})
}
