package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// ActivationsCancelled finds the cancelled among a worker's running
// activations in one read, past one statement's batch of ids too.
func TestActivationsCancelled(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		first := newRunningActivation(t, s, "w1")
		agent, err := s.AgentGet(ctx, first.AgentID)
		require.NoError(t, err)
		second := newActivationOf(t, s, agent, "w1")
		third := newActivationOf(t, s, agent, "w1")
		for _, a := range []*store.Activation{first, third} {
			_, ok, err := s.ActivationCancel(ctx, a.ID, "Activation cancelled", store.Now())
			require.NoError(t, err)
			require.True(t, ok)
		}
		ids := []string{first.ID, second.ID}
		for range 1500 { // ids of no activation, in between
			ids = append(ids, uuid.NewString())
		}
		ids = append(ids, third.ID)
		got, err := s.ActivationsCancelled(ctx, ids)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{first.ID, third.ID}, got)
		got, err = s.ActivationsCancelled(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, got)
	})
}
