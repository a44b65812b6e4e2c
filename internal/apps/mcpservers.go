package apps

import (
	"context"
	"errors"
	"strings"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/tool"
)

// The remote MCP servers of an app (DESIGN §4 "Agents that act: tools"):
// declared in the manifest (mcp_servers) or over
// /api/v1/apps/{app_id}/mcp-servers, named by the app's mcp tools. Calling
// them is package tool's.

// ErrMCPServerNotFound is another user's MCP server, one of another app,
// or none.
var ErrMCPServerNotFound = apperr.NotFoundf("MCP server not found")

// decodeMCPServer validates an MCP server's fields: a manifest's or an
// mcp-servers API body's. Whether its authenticator exists is the
// caller's to check (checkMCPAuthenticator), and whether its URL is a
// private address the egress guard's, at save.
func decodeMCPServer(d *decoder, o *object) MCPServerSpec {
	ms := MCPServerSpec{Name: o.str("name", true)}
	if ms.Name != "" && !tool.NamePattern.MatchString(ms.Name) {
		d.invalid(o.at("name"), "must match %s", tool.NamePattern)
	}
	ms.URL = o.httpURL("url", true)
	ms.Authenticator = o.str("authenticator", false)
	return ms
}

// checkMCPAuthenticator refuses an authenticator that the app (whose
// authenticators' names are auths) does not have.
func checkMCPAuthenticator(d *decoder, field, name string, auths map[string]bool) {
	if name != "" && !auths[name] {
		d.invalid(field, "Unknown authenticator: %s is not an authenticator of the app", name)
	}
}

// SetOn writes s's fields onto row r; r's id, app and times are the
// caller's.
func (s *MCPServerSpec) SetOn(r *store.MCPServer) {
	r.Name, r.URL, r.Authenticator = s.Name, s.URL, s.Authenticator
}

// MCPServerSpecOf is row r as a manifest writes it.
func MCPServerSpecOf(r *store.MCPServer) MCPServerSpec {
	return MCPServerSpec{Name: r.Name, URL: r.URL, Authenticator: r.Authenticator}
}

// MCPServers returns a page of the MCP servers of the caller's app appID
// (what the app page lists, too).
func (s *Service) MCPServers(ctx context.Context, c *auth.Caller, appID string, limit, offset int) ([]store.MCPServer, int, error) {
	app, err := s.OwnedApp(ctx, c, appID)
	if err != nil {
		return nil, 0, err
	}
	return s.store.MCPServerPage(ctx, app.ID, limit, offset)
}

// MCPServer returns the caller's MCP server id of app appID.
func (s *Service) MCPServer(ctx context.Context, c *auth.Caller, appID, id string) (*store.MCPServer, error) {
	ms, err := auth.Find(ctx, s.auth, c, id, s.store.MCPServerGet, func(m *store.MCPServer) auth.Resource {
		return auth.Resource{Type: "mcp_server", ID: m.ID, OwnerID: m.UserID, AppID: m.AppID}
	}, "mcp_server.read", ErrMCPServerNotFound)
	if err == nil && ms.AppID != appID {
		err = ErrMCPServerNotFound
	}
	return ms, err
}

// CreateMCPServer adds an MCP server to the caller's app appID; body has
// the manifest's fields.
func (s *Service) CreateMCPServer(ctx context.Context, c *auth.Caller, appID string, body map[string]any) (*store.MCPServer, error) {
	var ms *store.MCPServer
	err := CreatePart(ctx, s, c, appID, "MCP server", func(app *store.App) (string, error) {
		spec, err := s.decodeMCPServer(ctx, app.ID, body)
		if err != nil {
			return "", err
		}
		now := s.now()
		ms = &store.MCPServer{ID: newID(), AppID: app.ID, UserID: app.UserID, CreatedAt: now, UpdatedAt: now}
		spec.SetOn(ms)
		return ms.Name, mcpNameTaken(s.store.MCPServerCreate(ctx, ms), ms.Name)
	})
	if err != nil {
		return nil, err
	}
	return ms, nil
}

// UpdateMCPServer changes any of an MCP server's fields, validated whole
// as a create is. A rename while agents' tools name the server is
// refused (409), as its deletion is: they would stop running.
func (s *Service) UpdateMCPServer(ctx context.Context, c *auth.Caller, appID, id string, patch map[string]any) (*store.MCPServer, error) {
	ms, err := s.MCPServer(ctx, c, appID, id)
	if err != nil {
		return nil, err
	}
	cur := MCPServerSpecOf(ms)
	fields := map[string]any{"name": cur.Name, "url": cur.URL, "authenticator": cur.Authenticator}
	err = UpdatePart(ctx, s, c, ms.AppID, "MCP server", fields, patch, func(merged map[string]any) (string, error) {
		spec, err := s.decodeMCPServer(ctx, ms.AppID, merged)
		if err != nil {
			return "", err
		}
		if spec.Name != ms.Name {
			if err := s.mcpServerUnused(ctx, ms, "rename"); err != nil {
				return "", err
			}
		}
		spec.SetOn(ms)
		ms.UpdatedAt = s.now()
		return ms.Name, mcpNameTaken(s.store.MCPServerUpdate(ctx, ms), ms.Name)
	})
	if err != nil {
		return nil, err
	}
	return ms, nil
}

// DeleteMCPServer deletes an MCP server no agent's tools name; one they
// name is a 409 naming them.
func (s *Service) DeleteMCPServer(ctx context.Context, c *auth.Caller, appID, id string) error {
	ms, err := s.MCPServer(ctx, c, appID, id)
	if err != nil {
		return err
	}
	return DeletePart(ctx, s, c, ms.AppID, func() error {
		if err := s.mcpServerUnused(ctx, ms, "delete"); err != nil {
			return err
		}
		return s.store.MCPServerDelete(ctx, ms.ID)
	})
}

// decodeMCPServer validates an MCP server body for app appID: the
// manifest's rules, its authenticator among the app's, and its URL past
// the egress guard's save-time check.
func (s *Service) decodeMCPServer(ctx context.Context, appID string, body map[string]any) (*MCPServerSpec, error) {
	spec, err := decodePart(body, "MCP server", decodeMCPServer)
	if err != nil {
		return nil, err
	}
	if spec.Authenticator != "" {
		auths, err := s.store.AuthenticatorListByApp(ctx, appID)
		if err != nil {
			return nil, err
		}
		names := map[string]bool{}
		for _, a := range auths {
			names[a.Name] = true
		}
		d := &decoder{}
		checkMCPAuthenticator(d, "authenticator", spec.Authenticator, names)
		if d.err != nil {
			return nil, d.err
		}
	}
	if err := s.egress.CheckURL("url", spec.URL); err != nil {
		return nil, err
	}
	return spec, nil
}

// mcpNameTaken is NameTaken's 409 with the article "an" (NameTaken
// would say "a MCP server").
func mcpNameTaken(err error, name string) error {
	if errors.Is(err, store.ErrConflict) {
		return apperr.Newf(apperr.Conflict, "The app already has an MCP server named %q", name)
	}
	return err
}

// mcpServerUnused is a conflict naming the agents whose tools name ms,
// nil when none do.
func (s *Service) mcpServerUnused(ctx context.Context, ms *store.MCPServer, action string) error {
	agents, err := s.store.AgentListByApp(ctx, ms.AppID)
	if err != nil {
		return err
	}
	var users []string
	for i := range agents {
		for _, t := range agentSpec(&agents[i]).AgentConfig.Tools {
			if t.Type == tool.KindMCP && t.Server == ms.Name {
				users = append(users, agents[i].Name)
				break
			}
		}
	}
	if len(users) == 0 {
		return nil
	}
	return apperr.Newf(apperr.Conflict, "Cannot %s MCP server %q: the tools of agent(s) %s use it; remove it from their tools first",
		action, ms.Name, strings.Join(users, ", "))
}
