package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// ActivationClaimMany claims, in one statement, the activations still
// queued and only those; the cache (SQLite) answers what it committed.
// AgentGetMany reads the agents that exist.
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

		agents, err := s.AgentGetMany(ctx, []string{agent.ID, uuid.NewString()})
		require.NoError(t, err)
		require.Len(t, agents, 1)
		require.Equal(t, "g", agents[agent.ID].Name)
	})
}
