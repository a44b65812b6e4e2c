package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func TestMCPServersStore(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "a@example.com", false)
		app := newApp(t, s, u.ID, "one")
		now := store.Now()
		mk := func(name string) *store.MCPServer {
			return &store.MCPServer{ID: uuid.Must(uuid.NewV7()).String(), AppID: app.ID, Name: name,
				URL: "https://mcp.example.com/" + name, CreatedAt: now, UpdatedAt: now}
		}
		a, b := mk("docs"), mk("crm")
		b.Authenticator = "crm-oauth"
		require.NoError(t, s.MCPServerCreate(ctx, a))
		require.NoError(t, s.MCPServerCreate(ctx, b))
		require.ErrorIs(t, s.MCPServerCreate(ctx, mk("docs")), store.ErrConflict, "a name is unique in the app")

		got, err := s.MCPServerGet(ctx, b.ID)
		require.NoError(t, err)
		require.Equal(t, u.ID, got.UserID, "the app's owner")
		require.Equal(t, "crm-oauth", got.Authenticator)
		require.Equal(t, b.URL, got.URL)
		got, err = s.MCPServerGetByName(ctx, app.ID, "docs")
		require.NoError(t, err)
		require.Equal(t, a.ID, got.ID)
		_, err = s.MCPServerGetByName(ctx, app.ID, "nope")
		require.ErrorIs(t, err, store.ErrNotFound)

		page, total, err := s.MCPServerPage(ctx, app.ID, 1, 1)
		require.NoError(t, err)
		require.Equal(t, 2, total)
		require.Len(t, page, 1)
		require.Equal(t, b.ID, page[0].ID, "creation order")

		b.Name, b.URL, b.Authenticator = "docs", "https://x.example.com/mcp", ""
		require.ErrorIs(t, s.MCPServerUpdate(ctx, b), store.ErrConflict)
		b.Name = "crm2"
		require.NoError(t, s.MCPServerUpdate(ctx, b))
		all, err := s.MCPServerListByApp(ctx, app.ID)
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.Equal(t, "crm2", all[1].Name)
		require.Equal(t, "", all[1].Authenticator)

		require.NoError(t, s.MCPServerDelete(ctx, a.ID))
		require.ErrorIs(t, s.MCPServerDelete(ctx, a.ID), store.ErrNotFound)
		require.NoError(t, s.AppDelete(ctx, app.ID))
		_, err = s.MCPServerGet(ctx, b.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "deleted with its app")
	})
}
