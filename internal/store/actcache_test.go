package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// Once a change of an activation has committed, no read answers the state
// before it, even in the moment between the commit and the cache's update:
// a waiter that subscribes to events, learns from the store that the end
// event is already committed, then reads the activation, must see the end.
// It saw "running" from the cache, and waited for an event that had gone
// by (a lost wakeup: an MCP or OpenAI call hung until its timeout).
func TestActivationReadAfterCommitIsFresh(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		act := newRunningActivation(t, s, "w1")
		got, err := s.ActivationGet(ctx, act.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusRunning, got.Status)

		var seen *store.Activation
		var seenErr error
		require.NoError(t, s.InTx(ctx, func(tx *store.Store) error {
			// Registered first, so it runs right after the commit, before
			// the finish's own work after it.
			tx.OnCommit(func() { seen, seenErr = s.ActivationGet(ctx, act.ID) })
			_, ok, err := tx.ActivationFinish(ctx, act.ID, store.Outcome{Status: store.StatusCompleted, CompletedAt: store.Now()})
			require.True(t, ok)
			return err
		}))
		require.NoError(t, seenErr)
		require.Equal(t, store.StatusCompleted, seen.Status, "a committed end is what a read after the commit sees")
	})
}

// TestActivationCacheIgnoresUnorderedWrites: a write outside a transaction
// commits on its own, so its update of the cache is not ordered with the
// committer's and may come after a later transaction's. The cache keeps
// nothing from it: an API node created an activation so, two workers
// claimed and ended it, the creation's late update put "queued" back, and
// polls answered "queued" for good (TestDispatchersShareTheQueue, 3–6 runs
// in 40 under -race).
func TestActivationCacheIgnoresUnorderedWrites(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		act := newRunningActivation(t, s, "w1")
		queued := *act
		queued.Status = store.StatusQueued
		require.NoError(t, s.InTx(ctx, func(tx *store.Store) error {
			_, ok, err := tx.ActivationFinish(ctx, act.ID, store.Outcome{Status: store.StatusCompleted, CompletedAt: store.Now()})
			require.True(t, ok)
			return err
		}))
		s.CacheActivation(&queued) // the creation's update, late
		got, err := s.ActivationGet(ctx, act.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, got.Status)
	})
}
