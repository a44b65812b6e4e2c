package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func newLLMProvider(userID, name string, at time.Time) *store.LLMProvider {
	return &store.LLMProvider{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, Name: name, ProviderType: "openai_compatible",
		BaseURL: "http://localhost:11434/v1", APIKeyEnc: "v1:abcd0123:sealed", Models: []string{"llama3", "qwen"},
		DefaultModel: "llama3", Prices: json.RawMessage(`{}`), CreatedAt: at, UpdatedAt: at}
}

func TestLLMProviders(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		alice, bob := newUser(t, s, "alice@x.io", false), newUser(t, s, "bob@x.io", false)
		now := store.Now()

		a := newLLMProvider(alice.ID, "ollama", now)
		require.NoError(t, s.LLMProviderCreate(ctx, a))
		got, err := s.LLMProviderGet(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, a, got, "every field reads back as written")
		require.ErrorIs(t, s.LLMProviderCreate(ctx, newLLMProvider(alice.ID, "ollama", now)), store.ErrConflict, "names are unique per user")
		require.NoError(t, s.LLMProviderCreate(ctx, newLLMProvider(bob.ID, "ollama", now)), "another user may reuse a name")

		// Pages, oldest first; a zero limit still counts.
		b := newLLMProvider(alice.ID, "vllm", now.Add(time.Second))
		b.Models = nil
		require.NoError(t, s.LLMProviderCreate(ctx, b))
		page, total, err := s.LLMProviderListByUser(ctx, alice.ID, 1, 1)
		require.NoError(t, err)
		require.Equal(t, 2, total)
		require.Len(t, page, 1)
		require.Equal(t, "vllm", page[0].Name)
		require.Equal(t, []string{}, page[0].Models)
		page, total, err = s.LLMProviderListByUser(ctx, alice.ID, 0, 0)
		require.NoError(t, err)
		require.Equal(t, 2, total)
		require.Empty(t, page)

		// One default per user: clearing keeps the one just marked.
		_, err = s.LLMProviderGetDefault(ctx, alice.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		a.IsDefault, b.IsDefault = true, true
		require.NoError(t, s.LLMProviderUpdate(ctx, a))
		require.NoError(t, s.InTx(ctx, func(tx *store.Store) error {
			if err := tx.LLMProviderClearDefault(ctx, alice.ID, b.ID, now); err != nil {
				return err
			}
			return tx.LLMProviderUpdate(ctx, b)
		}))
		def, err := s.LLMProviderGetDefault(ctx, alice.ID)
		require.NoError(t, err)
		require.Equal(t, b.ID, def.ID)
		got, err = s.LLMProviderGet(ctx, a.ID)
		require.NoError(t, err)
		require.False(t, got.IsDefault)

		// The database itself refuses a second default.
		a.IsDefault = true
		require.ErrorIs(t, s.LLMProviderUpdate(ctx, a), store.ErrConflict)
		a.IsDefault = false
		require.NoError(t, s.InTx(ctx, func(tx *store.Store) error { return tx.LLMProviderLockUser(ctx, alice.ID) }))

		b.Name = "ollama"
		require.ErrorIs(t, s.LLMProviderUpdate(ctx, b), store.ErrConflict)

		require.NoError(t, s.LLMProviderDelete(ctx, a.ID))
		require.ErrorIs(t, s.LLMProviderDelete(ctx, a.ID), store.ErrNotFound)
		_, err = s.LLMProviderGet(ctx, a.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		a.Name = "gone"
		require.ErrorIs(t, s.LLMProviderUpdate(ctx, a), store.ErrNotFound)
	})
}
