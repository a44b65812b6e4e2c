package mcpserver

import (
	"context"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
)

// callServer is the MCP server of a tools/call of the tool named name,
// and ctx carrying the call for the server's handler. A call needs its
// one tool, found by name among those caller reaches (none: a server
// without tools, which the SDK answers as an unknown tool). Servers are
// shared by every call of a name: building one and adding its tool cost
// more than the SDK's handling of the call, and the tool's schema and
// description are what tools/list says, not what a call reads.
func (s *Service) callServer(ctx context.Context, caller *auth.Caller, appID, name string) (*mcp.Server, context.Context, error) {
	if t, ok := s.agentTool(ctx, caller, appID, name); ok {
		return s.calls.of(name, s.handleCall), context.WithValue(ctx, callKey{}, call{caller, t}), nil
	}
	if names := namesOf(name, appID); len(names) > 0 {
		tools, err := s.tools(ctx, caller, appID, names...)
		if err != nil {
			return nil, ctx, err
		}
		for _, t := range tools {
			if t.name == name {
				return s.calls.of(name, s.handleCall), context.WithValue(ctx, callKey{}, call{caller, t}), nil
			}
		}
	}
	return s.calls.of("", nil), ctx, nil
}

// agentTool is the tool named name when it is an agent of one of the
// caller's own apps that may run, read as activating it needs it (one
// read, where the tools' list and then the activation read it twice);
// ok false for anything else (a function, a pipeline, a shared app, a
// disabled agent, no such tool), which the tools' list resolves.
func (s *Service) agentTool(ctx context.Context, caller *auth.Caller, appID, name string) (tool, bool) {
	slug, rest := "", name
	if appID == "" {
		var ok bool
		if slug, rest, ok = strings.Cut(name, "__"); !ok {
			return tool{}, false
		}
	}
	// Its own name, unless a function or pipeline shares it; its name
	// with _agent appended when one does.
	a, shared, err := s.Apps.VisibleAgentInApp(ctx, caller, appID, slug, rest)
	if err == nil && shared {
		err = apps.ErrAgentNotFound
	}
	if base, ok := strings.CutSuffix(rest, "_"+kindAgent); err != nil && ok && base != "" {
		a, shared, err = s.Apps.VisibleAgentInApp(ctx, caller, appID, slug, base)
		if err == nil && !shared {
			err = apps.ErrAgentNotFound
		}
	}
	if err != nil {
		return tool{}, false
	}
	return tool{app: a.AppID, kind: kindAgent, id: a.ID, name: name, llm: a.AgentTypeID == "llm", agent: a}, true
}

// call is what a tools/call runs: its tool, for its caller.
type call struct {
	caller *auth.Caller
	tool   tool
}

type callKey struct{}

// handleCall is the handler of the shared servers' tool: it runs the
// call its context carries.
func (s *Service) handleCall(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, ok := ctx.Value(callKey{}).(call)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "The call lost its tool"}
	}
	return s.handle(c.caller, c.tool)(ctx, req)
}

// callServers are the servers of tools/call by tool name, "" for the one
// without tools. The names are tools that exist, but many: past
// maxCallServers the servers are dropped and made anew as calls come.
type callServers struct {
	mu     sync.Mutex
	byName map[string]*mcp.Server
}

const maxCallServers = 1024

// anyObject is the schema of the shared servers' tool: the SDK wants one,
// and checks none of a call's arguments against it.
var anyObject = &jsonschema.Schema{Type: "object"}

func (c *callServers) of(name string, h mcp.ToolHandler) *mcp.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	if srv, ok := c.byName[name]; ok {
		return srv
	}
	if c.byName == nil || len(c.byName) >= maxCallServers {
		c.byName = map[string]*mcp.Server{}
	}
	srv := newServer()
	if name != "" {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: anyObject}, h)
	}
	c.byName[name] = srv
	return srv
}
