package tool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/inputschema"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/version"
)

// Bounds of MCP servers (DESIGN): connecting and listing the tools at a
// run's start, and each call, take at most MCPTimeout; each HTTP answer
// body is read up to MaxMCPBody (the egress client's MaxBody, set by the
// server) and a server offers at most MaxMCPTools tools.
const (
	MCPTimeout  = 10 * time.Second
	MaxMCPBody  = 1 << 20
	MaxMCPTools = 128
	// IdempotencyMetaKey carries a call's idempotency key
	// ({activation_id}:{tool_call_id}) in its _meta, for servers that
	// can do a call once.
	IdempotencyMetaKey = "agentplatform/idempotency_key"
)

// mcpConn is one run's session with one MCP server, opened and listed
// once at the run's start and closed at its end (Set.Close).
type mcpConn struct {
	server  *store.MCPServer
	session *mcp.ClientSession // nil when listing failed
	tools   []*mcp.Tool
	more    bool  // the server lists more than MaxMCPTools
	err     error // why listing failed
}

func (c *mcpConn) close() {
	if c.session != nil {
		_ = c.session.Close()
	}
}

// mcpServer resolves the MCP server named name in run's app.
func (k *Kit) mcpServer(ctx context.Context, run *executor.Run, name string) (*store.MCPServer, error) {
	ms, err := k.Store.MCPServerGetByName(ctx, run.AppID, name)
	if err == nil && ms.UserID != run.UserID {
		err = store.ErrNotFound
	}
	return ms, err
}

// connect opens a session with ms through the egress guard and lists its
// tools (every page, at most MaxMCPTools). A failure is kept in the conn:
// the run goes on without the server's tools.
func (k *Kit) connect(ctx context.Context, run *executor.Run, ms *store.MCPServer) *mcpConn {
	c := &mcpConn{server: ms}
	if k.MCPHTTP == nil {
		c.err = errors.New("MCP servers are not available here")
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, MCPTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "agentplatform", Version: version.Version}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   ms.URL,
		HTTPClient: k.mcpHTTPClient(run, ms),
		// Only answers to our own requests are wanted: no standing GET
		// stream (nor its goroutine) for the server's notifications, and
		// no reconnecting to a server that dropped a call.
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
		MaxEventSize:         MaxMCPBody,
	}
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		c.err = fmt.Errorf("connecting to %s failed: %s", egress.Redact(ms.URL), egress.Describe(err))
		return c
	}
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			_ = session.Close()
			c.tools, c.err = nil, fmt.Errorf("listing the tools of %s failed: %s", egress.Redact(ms.URL), egress.Describe(err))
			return c
		}
		if len(c.tools) == MaxMCPTools {
			c.more = true
			break
		}
		c.tools = append(c.tools, t)
	}
	c.session = session
	return c
}

// mcpHTTPClient is the egress-guarded client with the server's
// authenticator: the user's access token is asked for on every request,
// so a long run sends a fresh one (the credential service refreshes it
// before it expires), never the one the run started with.
func (k *Kit) mcpHTTPClient(run *executor.Run, ms *store.MCPServer) *http.Client {
	if ms.Authenticator == "" {
		return k.MCPHTTP
	}
	c := *k.MCPHTTP
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &bearer{base: base, token: func(ctx context.Context) (string, error) {
		if k.Credentials == nil {
			return "", errors.New("connections are not available here")
		}
		tok, err := k.Credentials.AccessToken(ctx, run.UserID, run.AppID, ms.Authenticator)
		if err != nil {
			return "", fmt.Errorf("authenticator %s: %w", ms.Authenticator, err)
		}
		return tok, nil
	}}
	return &c
}

// bearer sets each request's Authorization from token.
type bearer struct {
	base  http.RoundTripper
	token func(context.Context) (string, error)
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := b.token(req.Context())
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+tok)
	return b.base.RoundTrip(req)
}

// mcpTools are the tools spec s offers from conn: every listed tool, or
// those s.Tools names, each named <server>_<tool> (mcpToolName) with the
// remote description and inputSchema. taken are the names already used
// in the run. What the model cannot see goes to logs: a listing that
// failed without s.Tools (no tool offered), a named tool the server
// lacks, a schema refused.
func mcpTools(s *Spec, conn *mcpConn, taken map[string]bool, logs *[]executor.LogLine) []Tool {
	server := conn.server.Name
	note := func(format string, args ...any) {
		*logs = append(*logs, executor.LogLine{TS: time.Now().UTC(), Level: "warn", Message: fmt.Sprintf(format, args...)})
	}
	add := func(remote, description string, params json.RawMessage) Tool {
		spec := *s
		spec.Name, spec.Description, spec.Tools = mcpToolName(server, remote, taken), description, nil
		taken[spec.Name] = true
		return &mcpTool{base: base{&spec, params}, conn: conn, remote: remote}
	}
	var out []Tool
	if conn.err != nil {
		// The model still sees the tools the agent names, so that it can
		// say why they fail; a server offered whole has none to show.
		if len(s.Tools) == 0 {
			note("MCP server %s offers no tools to this run: %s", server, conn.err)
		}
		for _, name := range s.Tools {
			out = append(out, add(name, fmt.Sprintf("Tool %s of MCP server %s (its tools could not be listed)", name, server), objectSchema))
		}
		return out
	}
	if conn.more {
		note("MCP server %s lists more than %d tools: the rest are not offered", server, MaxMCPTools)
	}
	for _, t := range conn.tools {
		if len(s.Tools) > 0 && !slices.Contains(s.Tools, t.Name) {
			continue
		}
		out = append(out, add(t.Name, t.Description, mcpSchema(server, t, note)))
	}
	for _, name := range s.Tools {
		if !slices.ContainsFunc(conn.tools, func(t *mcp.Tool) bool { return t.Name == name }) {
			note("MCP server %s has no tool %s (of agent_config.tools' tools)", server, name)
		}
	}
	return out
}

// mcpSchema is t's inputSchema as the tool's parameters; one that is no
// object schema within inputschema's bounds (a server's mistake, or a
// bomb) would stop the run, so it is replaced by any object, noted.
func mcpSchema(server string, t *mcp.Tool, note func(string, ...any)) json.RawMessage {
	raw, err := json.Marshal(t.InputSchema)
	if err == nil {
		var m map[string]any
		if err = json.Unmarshal(raw, &m); err == nil && m["type"] != "object" {
			err = errors.New(`its type is not "object"`)
		}
	}
	if err == nil {
		err = inputschema.Check(raw)
	}
	if err != nil {
		note("MCP server %s: the inputSchema of tool %s is refused (%s); its arguments are any object", server, t.Name, err)
		return objectSchema
	}
	return schemaOr(raw)
}

// mcpToolName is the name of remote tool of server: <server>_<tool>, its
// characters outside [a-zA-Z0-9_-] replaced by "_". One too long (over
// 64) or already taken in the run (two remote names that differ only in
// replaced characters, or a name another tool has) is cut to 55
// characters and ends with "_" and 8 hex digits of a hash of the server
// and remote names: stable from run to run, distinct.
func mcpToolName(server, remote string, taken map[string]bool) string {
	name := strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, server+"_"+remote)
	if len(name) <= 64 && !taken[name] {
		return name
	}
	sum := sha256.Sum256([]byte(server + "\x00" + remote))
	return name[:min(len(name), 55)] + "_" + hex.EncodeToString(sum[:4])
}

// mcpTool is one tool of a remote MCP server.
type mcpTool struct {
	base
	conn   *mcpConn
	remote string // the tool's name at the server
}

func (t *mcpTool) Call(ctx context.Context, c Call) (json.RawMessage, error) {
	server := t.conn.server.Name
	if t.conn.err != nil {
		return nil, fmt.Errorf("MCP server %s could not list its tools at the run's start: %w", server, t.conn.err)
	}
	ctx, cancel := context.WithTimeout(ctx, MCPTimeout)
	defer cancel()
	params := &mcp.CallToolParams{Name: t.remote, Arguments: arguments(c)}
	if c.IdempotencyKey != "" {
		params.Meta = mcp.Meta{IdempotencyMetaKey: c.IdempotencyKey}
	}
	res, err := t.conn.session.CallTool(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: calling %s failed: %s", server, t.remote, egress.Describe(err))
	}
	if res.IsError {
		return nil, fmt.Errorf("MCP server %s: %s answered an error: %s", server, t.remote, mcpErrorText(res))
	}
	return mcpResult(res), nil
}

// mcpErrorText is the start of an error result's text, for the call's
// error.
func mcpErrorText(res *mcp.CallToolResult) string {
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	if len(texts) == 0 {
		return excerpt(mcpResult(res))
	}
	return excerpt([]byte(strings.Join(texts, "\n")))
}

// mcpResult is what the model gets of a call's result: its structured
// content when it has one, else its one text (as JSON when it is JSON,
// else a string), else its content list as the protocol writes it.
func mcpResult(res *mcp.CallToolResult) json.RawMessage {
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return b
		}
	}
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			return bodyJSON([]byte(tc.Text))
		}
	}
	b, err := json.Marshal(res.Content)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

// MCPListError is why a server's tools could not be listed: connecting,
// the server's answer or its authenticator's token. Its text names what
// failed (the URL's secrets redacted), for the app's owner to read; any
// other error of MCPServerTools is the platform's own.
type MCPListError struct {
	Server string
	Err    error
}

func (e *MCPListError) Error() string { return "MCP server " + e.Server + ": " + e.Err.Error() }
func (e *MCPListError) Unwrap() error { return e.Err }

// MCPServerTools lists the tools of the MCP server named server in app
// appID as userID's runs see them (the app page shows them): named
// <server>_<tool>, with their descriptions and parameters. It connects,
// lists and closes, through the egress guard with the server's
// authenticator; a server that cannot be listed is the error.
func (k *Kit) MCPServerTools(ctx context.Context, userID, appID, server string) ([]llm.Tool, error) {
	run := &executor.Run{UserID: userID, AppID: appID}
	ms, err := k.mcpServer(ctx, run, server)
	if err != nil {
		return nil, err
	}
	conn := k.connect(ctx, run, ms)
	defer conn.close()
	if conn.err != nil {
		return nil, &MCPListError{Server: server, Err: conn.err}
	}
	var logs []executor.LogLine
	tools := mcpTools(&Spec{Type: KindMCP, Server: server}, conn, map[string]bool{}, &logs)
	out := make([]llm.Tool, len(tools))
	for i, t := range tools {
		out[i] = t.Definition()
	}
	return out, nil
}
