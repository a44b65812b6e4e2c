package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// ActivationClaimMany claims, in one statement, the activations still
// queued and only those; the cache (SQLite) answers what it committed.
func TestActivationClaimMany(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "a@x.io", false)
		agent := newAgent(t, s, newApp(t, s, u.ID, "a"), "g", "")
		ids := make([]string, 4)
		for i := range ids {
			a := &store.Activation{ID: uuid.NewString(), UserID: u.ID, AppID: agent.AppID, AgentID: agent.ID, Status: store.StatusQueued,
				Priority: 2, CreatedAt: store.Now()}
			require.NoError(t, s.ActivationCreate(ctx, a))
			ids[i] = a.ID
		}
		// One already claimed, one cancelled: neither is claimed again.
		_, ok, err := s.ActivationClaim(ctx, ids[0], "w0", store.Now())
		require.NoError(t, err)
		require.True(t, ok)
		_, ok, err = s.ActivationCancel(ctx, ids[1], "Activation cancelled", store.Now())
		require.NoError(t, err)
		require.True(t, ok)

		claimed, err := s.ActivationClaimMany(ctx, append(ids, uuid.NewString()), "w1", store.Now())
		require.NoError(t, err)
		got := map[string]*store.Activation{}
		for _, a := range claimed {
			got[a.ID] = a
		}
		require.Len(t, got, 2)
		for _, id := range ids[2:] {
			require.Contains(t, got, id)
			require.Equal(t, store.StatusRunning, got[id].Status)
			require.Equal(t, "w1", got[id].WorkerID)
			require.Equal(t, 1, got[id].Attempt)
			require.NotNil(t, got[id].StartedAt)
			read, err := s.ActivationGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, store.StatusRunning, read.Status)
			require.Equal(t, "w1", read.WorkerID)
		}
		first, err := s.ActivationGet(ctx, ids[0])
		require.NoError(t, err)
		require.Equal(t, "w0", first.WorkerID)
		none, err := s.ActivationClaimMany(ctx, ids, "w2", store.Now())
		require.NoError(t, err)
		require.Empty(t, none)
	})
}

// ActivationClaimNext claims the queued activations in turns: each
// user's most urgent first, then everyone's second, and so on; it passes
// over the users it is told to skip, and, on PostgreSQL, the rows another
// transaction is claiming.
func TestActivationClaimNext(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		heavy, light := newUser(t, s, "heavy@x.io", false), newUser(t, s, "light@x.io", false)
		queue := func(u *store.User, priority int) string {
			agent := newAgent(t, s, newApp(t, s, u.ID, uuid.NewString()[:8]), "g", "")
			a := &store.Activation{ID: uuid.Must(uuid.NewV7()).String(), UserID: u.ID, AppID: agent.AppID, AgentID: agent.ID,
				Status: store.StatusQueued, Priority: priority, CreatedAt: store.Now()}
			require.NoError(t, s.ActivationCreate(ctx, a))
			return a.ID
		}
		var h []string
		for range 5 {
			h = append(h, queue(heavy, 2))
		}
		urgent := queue(heavy, 1)
		l := queue(light, 3)
		running := queue(light, 1)
		_, ok, err := s.ActivationClaim(ctx, running, "w", store.Now())
		require.NoError(t, err)
		require.True(t, ok)
		ids := func(as []*store.Activation) []string {
			out := make([]string, len(as))
			for i, a := range as {
				require.Equal(t, store.StatusRunning, a.Status)
				require.Equal(t, "w1", a.WorkerID)
				require.Equal(t, 1, a.Attempt)
				require.NotNil(t, a.StartedAt)
				out[i] = a.ID
			}
			return out
		}
		// Each look in a transaction rolled back, to look again at the
		// same queue.
		undone := errors.New("undone")
		claimNext := func(s *store.Store, n int, skip []string) []string {
			var got []string
			require.ErrorIs(t, s.InTx(ctx, func(tx *store.Store) error {
				claimed, err := tx.ActivationClaimNext(ctx, n, skip, "w1", store.Now())
				require.NoError(t, err)
				got = ids(claimed)
				return undone
			}), undone)
			return got
		}
		require.ElementsMatch(t, []string{urgent, l, h[0]}, claimNext(s, 3, nil), "each user's first, by priority, before anyone's second")
		require.ElementsMatch(t, []string{l}, claimNext(s, 10, []string{heavy.ID}), "the skipped user's wait")

		claimed, err := s.ActivationClaimNext(ctx, 2, nil, "w1", store.Now())
		require.NoError(t, err)
		require.ElementsMatch(t, []string{urgent, l}, ids(claimed))
		for _, id := range []string{urgent, l} {
			read, err := s.ActivationGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, store.StatusRunning, read.Status, "the claim as committed")
			require.Equal(t, "w1", read.WorkerID)
		}
		require.Empty(t, claimNext(s, 5, []string{heavy.ID}), "nothing queued but the skipped user's")

		if d != store.Postgres {
			return
		}
		// A claim in progress elsewhere holds its rows: another passes
		// over them rather than waiting.
		require.NoError(t, s.InTx(ctx, func(tx *store.Store) error {
			held, err := tx.ActivationClaimNext(ctx, 2, nil, "w1", store.Now())
			require.NoError(t, err)
			require.ElementsMatch(t, []string{h[0], h[1]}, ids(held))
			return s.InTx(context.WithoutCancel(ctx), func(other *store.Store) error {
				next, err := other.ActivationClaimNext(ctx, 2, nil, "w1", store.Now())
				require.NoError(t, err)
				require.ElementsMatch(t, []string{h[2], h[3]}, ids(next))
				return nil
			})
		}))
	})
}
