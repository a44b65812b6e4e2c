package api

import (
	"context"
	"time"

	"github.com/agentplatform/agentplatform/internal/store"
)

// MCPServer is a remote MCP server of an app, whose tools the app's LLM
// agents call (tools of type mcp).
type MCPServer struct {
	ID            string    `json:"id" format:"uuid"`
	AppID         string    `json:"app_id" format:"uuid"`
	Name          string    `json:"name" doc:"Unique in the app: what mcp tools name as their server, and the prefix of its tools' names (<server>_<tool>)"`
	URL           string    `json:"url" doc:"The server's Streamable HTTP endpoint, called through the egress guard"`
	Authenticator string    `json:"authenticator" doc:"An authenticator of the app whose connected account's access token is sent as Bearer; empty for none"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

func mcpServerOut(m *store.MCPServer) MCPServer {
	return MCPServer{ID: m.ID, AppID: m.AppID, Name: m.Name, URL: m.URL, Authenticator: m.Authenticator,
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}

// MCPServerPatch documents a PATCH: any subset of the fields.
type MCPServerPatch struct {
	Name          *string `json:"name,omitempty" doc:"Refused (409) while agents' tools name the server"`
	URL           *string `json:"url,omitempty"`
	Authenticator *string `json:"authenticator,omitempty" doc:"Empty: send no token"`
}

type mcpServerOutput struct {
	Body MCPServer
}

type listMCPServersOutput struct {
	Body struct {
		MCPServers []MCPServer `json:"mcp_servers"`
		Page
	}
}

type appMCPServersInput struct {
	AppID string `path:"app_id"`
	PageParams
}

func (a *API) listMCPServers(ctx context.Context, in *appMCPServersInput) (*listMCPServersOutput, error) {
	items, total, err := a.Apps.MCPServers(ctx, mustCaller(ctx), in.AppID, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	out := &listMCPServersOutput{}
	out.Body.MCPServers = mapAll(items, mcpServerOut)
	out.Body.Page = in.page(total)
	return out, nil
}

// The bodies are decoded by the apps domain, which names the exact field
// at fault; the document shows apps.MCPServerSpec and MCPServerPatch.
type createMCPServerInput struct {
	AppID   string `path:"app_id"`
	RawBody []byte `contentType:"application/json"`
}

func (a *API) createMCPServer(ctx context.Context, in *createMCPServerInput) (*mcpServerOutput, error) {
	body, err := rawJSONObject(in.RawBody)
	if err != nil {
		return nil, err
	}
	ms, err := a.Apps.CreateMCPServer(ctx, mustCaller(ctx), in.AppID, body)
	if err != nil {
		return nil, err
	}
	return &mcpServerOutput{mcpServerOut(ms)}, nil
}

type mcpServerIDInput struct {
	AppID    string `path:"app_id"`
	ServerID string `path:"server_id"`
}

func (a *API) getMCPServer(ctx context.Context, in *mcpServerIDInput) (*mcpServerOutput, error) {
	ms, err := a.Apps.MCPServer(ctx, mustCaller(ctx), in.AppID, in.ServerID)
	if err != nil {
		return nil, err
	}
	return &mcpServerOutput{mcpServerOut(ms)}, nil
}

type updateMCPServerInput struct {
	AppID    string `path:"app_id"`
	ServerID string `path:"server_id"`
	RawBody  []byte `contentType:"application/json"`
}

func (a *API) updateMCPServer(ctx context.Context, in *updateMCPServerInput) (*mcpServerOutput, error) {
	body, err := rawJSONObject(in.RawBody)
	if err != nil {
		return nil, err
	}
	ms, err := a.Apps.UpdateMCPServer(ctx, mustCaller(ctx), in.AppID, in.ServerID, body)
	if err != nil {
		return nil, err
	}
	return &mcpServerOutput{mcpServerOut(ms)}, nil
}

func (a *API) deleteMCPServer(ctx context.Context, in *mcpServerIDInput) (*struct{}, error) {
	return nil, a.Apps.DeleteMCPServer(ctx, mustCaller(ctx), in.AppID, in.ServerID)
}
