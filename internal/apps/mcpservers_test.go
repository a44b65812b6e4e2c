package apps_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestMCPServers: an app's MCP servers come from its manifest (a literal
// private URL refused at import, naming mcp_servers[i].url) and over the
// API; bad bodies are 400s naming the field, a name taken is 409, another
// user's server is 404, and a server an agent's tools name cannot be
// deleted or renamed (409 naming the agent).
func TestMCPServers(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		svc, _, c := service(t, d)
		ctx := context.Background()

		m := base()
		m["slug"] = "private-mcp"
		at(m, "mcp_servers", 0).(map[string]any)["url"] = "http://10.0.0.7/mcp"
		_, err := importJSON(t, svc, c, m)
		requireField(t, err, "mcp_servers[0].url", "private")

		imp, err := importJSON(t, svc, c, withTools())
		require.NoError(t, err)
		appID := imp.App.ID
		list, total, err := svc.MCPServers(ctx, c, appID, 10, 0)
		require.NoError(t, err)
		require.Equal(t, 1, total)
		docs := list[0]
		require.Equal(t, "docs", docs.Name)
		require.Equal(t, "crm", docs.Authenticator)

		wiki, err := svc.CreateMCPServer(ctx, c, appID, map[string]any{"name": "wiki", "url": "https://wiki.example.com/mcp"})
		require.NoError(t, err)
		require.Empty(t, wiki.Authenticator)
		for _, tc := range []struct {
			name   string
			body   map[string]any
			field  string
			detail string
		}{
			{"private url", map[string]any{"name": "x", "url": "http://127.0.0.1:8080/mcp"}, "url", "private"},
			{"no url", map[string]any{"name": "x"}, "url", "Missing required field"},
			{"bad name", map[string]any{"name": "x.y", "url": "https://x.example"}, "name", "must match"},
			{"unknown authenticator", map[string]any{"name": "x", "url": "https://x.example", "authenticator": "mail"}, "authenticator", "not an authenticator"},
		} {
			_, err := svc.CreateMCPServer(ctx, c, appID, tc.body)
			requireField(t, err, tc.field, tc.detail)
		}
		_, err = svc.CreateMCPServer(ctx, c, appID, map[string]any{"name": "wiki", "url": "https://x.example"})
		ae, ok := apperr.As(err)
		require.True(t, ok)
		require.Equal(t, apperr.Conflict, ae.Kind)
		require.Equal(t, `The app already has an MCP server named "wiki"`, ae.Detail)

		got, err := svc.UpdateMCPServer(ctx, c, appID, wiki.ID, map[string]any{"url": "https://wiki2.example.com/mcp", "authenticator": "crm"})
		require.NoError(t, err)
		require.Equal(t, "wiki", got.Name)
		require.Equal(t, "crm", got.Authenticator)
		_, err = svc.UpdateMCPServer(ctx, c, appID, wiki.ID, map[string]any{"url": "http://192.168.0.1/"})
		requireField(t, err, "url", "private")

		// Another user's server, and one asked for under another app, are absent.
		_, _, other := service(t, d)
		_, err = svc.MCPServer(ctx, other, appID, wiki.ID)
		require.ErrorIs(t, err, apps.ErrMCPServerNotFound)
		require.ErrorIs(t, svc.DeleteMCPServer(ctx, other, appID, wiki.ID), apps.ErrMCPServerNotFound)
		mine2, err := importJSON(t, svc, c, map[string]any{"name": "Two", "slug": "two", "version": "1.0.0"})
		require.NoError(t, err)
		_, err = svc.MCPServer(ctx, c, mine2.App.ID, wiki.ID)
		require.ErrorIs(t, err, apps.ErrMCPServerNotFound)

		// docs is named by agent a's tools.
		for _, err := range []error{svc.DeleteMCPServer(ctx, c, appID, docs.ID),
			func() error {
				_, err := svc.UpdateMCPServer(ctx, c, appID, docs.ID, map[string]any{"name": "docs2"})
				return err
			}()} {
			ae, ok := apperr.As(err)
			require.True(t, ok, "%v", err)
			require.Equal(t, apperr.Conflict, ae.Kind)
			require.Contains(t, ae.Detail, `"docs"`)
			require.Contains(t, ae.Detail, "a")
		}
		// An agent's tool naming a server the app lacks is refused.
		_, _, err = svc.CreateAgent(ctx, c, appID, map[string]any{"name": "m", "agent_type_id": "llm",
			"agent_config": map[string]any{"model": "echo", "tools": []any{map[string]any{"type": "mcp", "server": "nope"}}}})
		requireField(t, err, "agent_config.tools[0].server", "Unknown MCP server")
		require.NoError(t, svc.DeleteMCPServer(ctx, c, appID, wiki.ID))
		_, total, err = svc.MCPServers(ctx, c, appID, 10, 0)
		require.NoError(t, err)
		require.Equal(t, 1, total)
	})
}
