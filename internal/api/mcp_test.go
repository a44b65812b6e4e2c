package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// bearerTransport sends every request with a Bearer token, as an MCP
// client configured with an API key does.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the go-sdk's client (with opts, if any) to an MCP
// endpoint of the server with token.
func (e *env) mcpSession(ctx context.Context, path, token string, opts ...*mcp.ClientOptions) (*mcp.ClientSession, error) {
	var o *mcp.ClientOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1.0.0"}, o)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url + path,
		HTTPClient: &http.Client{Transport: bearerTransport{token}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
}

func toolText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.NotEmpty(t, res.Content)
	text, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "%T", res.Content[0])
	return text.Text
}

// TestMCPServer: an app is an MCP server for the go-sdk's client over
// stateless Streamable HTTP: its agents, functions and pipelines are
// tools with their schemas, a call runs them as the API does (in history,
// context.source "mcp"), and access is the API's.
func TestMCPServer(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		session := e.signup("ada@example.com")
		key := e.keyWith(session, "read:all", "write:all")
		appID := e.importManifest(key, exampleManifest(t)).expect(t, 201).str("app_id")
		path := "/api/v1/apps/" + appID + "/mcp"

		var mu sync.Mutex
		var progress []string
		cs, err := e.mcpSession(ctx, path, key, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, fmt.Sprintf("%v %g/%g %s", r.Params.ProgressToken, r.Params.Progress, r.Params.Total, strings.Fields(r.Params.Message)[0]))
		}})
		require.NoError(t, err)
		defer cs.Close()
		tools, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, "private", tools.CacheScope, "a tool list is its caller's: no shared cache")
		byName := map[string]*mcp.Tool{}
		for _, tl := range tools.Tools {
			byName[tl.Name] = tl
		}
		for _, name := range []string{"triage", "escalation-router", "front-desk", "normalize-ticket", "customer-tickets", "record-ticket", "intake"} {
			require.Contains(t, byName, name)
		}
		require.Len(t, byName, 7)
		schema := func(name string) map[string]any {
			b, err := json.Marshal(byName[name].InputSchema)
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, json.Unmarshal(b, &m))
			return m
		}
		require.Equal(t, []any{"prompt"}, schema("triage")["required"])
		require.Contains(t, schema("triage")["properties"], "chat_id")
		require.Equal(t, []any{"subject", "body", "customer_email"}, schema("normalize-ticket")["required"])
		require.Contains(t, schema("intake")["properties"], "input")
		require.True(t, strings.HasPrefix(byName["triage"].Description, "Reads a ticket"), byName["triage"].Description)

		// The echo LLM agent answers; the activation is in history.
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "triage", Arguments: map[string]any{"prompt": "My invoice is wrong"}})
		require.NoError(t, err)
		require.False(t, res.IsError, toolText(t, res))
		require.True(t, strings.HasPrefix(toolText(t, res), "echo: "), toolText(t, res))
		require.Contains(t, toolText(t, res), "My invoice is wrong")
		acts := list(e.do("GET", "/api/v1/apps/"+appID+"/activations", nil, bearer(key)).expect(t, 200), "activations")
		require.Len(t, acts, 1)
		require.Equal(t, "completed", acts[0]["status"])
		require.Equal(t, "mcp", acts[0]["context"].(map[string]any)["source"])

		// The function: its output, structured and as text.
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "normalize-ticket", Arguments: map[string]any{
			"subject": " Refund ", "body": "Twice. ", "customer_email": "Grace@Example.com"}})
		require.NoError(t, err)
		require.False(t, res.IsError, toolText(t, res))
		want := map[string]any{"subject": "Refund", "body": "Twice.", "customer_email": "grace@example.com", "priority": "normal"}
		require.Equal(t, want, res.StructuredContent)
		var fromText map[string]any
		require.NoError(t, json.Unmarshal([]byte(toolText(t, res)), &fromText))
		require.Equal(t, want, fromText)

		// Bad input is the call's error, naming the field.
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "normalize-ticket", Arguments: map[string]any{"subject": "x"}})
		require.NoError(t, err)
		require.True(t, res.IsError)
		require.Contains(t, toolText(t, res), "body")
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "triage", Arguments: map[string]any{}})
		require.NoError(t, err)
		require.True(t, res.IsError)
		require.Contains(t, toolText(t, res), "prompt")

		// The pipeline: its run's output, and its steps' progress for a
		// client that asks for it.
		params := &mcp.CallToolParams{Name: "intake", Arguments: map[string]any{"input": map[string]any{
			"subject": "Refund for a double charge", "body": "I was charged twice.", "customer_email": "grace@example.com", "priority": "high"}}}
		params.SetProgressToken("p1")
		res, err = cs.CallTool(ctx, params)
		require.NoError(t, err)
		require.False(t, res.IsError, toolText(t, res))
		require.Equal(t, "billing", res.StructuredContent.(map[string]any)["team"], toolText(t, res))
		require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(progress) == 3 }, 5*time.Second, 10*time.Millisecond)
		require.Equal(t, []string{"p1 0/2 Pipeline", "p1 1/2 Step", "p1 2/2 Step"}, progress)

		// Every app's endpoint: the same tools, prefixed with the slug.
		all, err := e.mcpSession(ctx, "/api/v1/mcp", key)
		require.NoError(t, err)
		defer all.Close()
		tools, err = all.ListTools(ctx, nil)
		require.NoError(t, err)
		require.Len(t, tools.Tools, 7)
		res, err = all.CallTool(ctx, &mcp.CallToolParams{Name: "support-desk__triage", Arguments: map[string]any{"prompt": "hi"}})
		require.NoError(t, err)
		require.Equal(t, "echo: hi", toolText(t, res))

		// A second app: /api/v1/mcp has both; a key bound to one sees that
		// one only, and the other's endpoint is absent for it. A function
		// named like an agent makes both names say their kind.
		second := exampleManifest(t)
		second["slug"] = "desk-two"
		secondID := e.importManifest(key, second).expect(t, 201).str("app_id")
		e.do("POST", "/api/v1/functions", map[string]any{"app_id": secondID, "name": "triage", "description": "Same name",
			"code": "async function run(input) { return {n: 1}; }"}, bearer(key)).expect(t, 201)
		tools, err = all.ListTools(ctx, nil)
		require.NoError(t, err)
		require.Len(t, tools.Tools, 15)
		names := map[string]bool{}
		for _, tl := range tools.Tools {
			names[tl.Name] = true
		}
		require.True(t, names["desk-two__triage_agent"] && names["desk-two__triage_function"] && names["support-desk__triage"], "%v", names)
		res, err = all.CallTool(ctx, &mcp.CallToolParams{Name: "desk-two__triage_function", Arguments: map[string]any{}})
		require.NoError(t, err)
		require.Equal(t, map[string]any{"n": 1.0}, res.StructuredContent, toolText(t, res))
		res, err = all.CallTool(ctx, &mcp.CallToolParams{Name: "desk-two__triage_agent", Arguments: map[string]any{"prompt": "kind"}})
		require.NoError(t, err)
		require.Equal(t, "echo: kind", toolText(t, res))
		_, err = all.CallTool(ctx, &mcp.CallToolParams{Name: "desk-two__triage", Arguments: map[string]any{"prompt": "kind"}})
		require.ErrorContains(t, err, "unknown tool", "a name two kinds share is no tool")
		// A disabled agent is still a tool; calling it says why it cannot run.
		twoTriage := e.agentNamed(key, secondID, "triage")
		e.do("PATCH", "/api/v1/apps/"+secondID+"/agents/"+twoTriage, map[string]any{"status": "disabled"}, bearer(key)).expect(t, 200)
		res, err = all.CallTool(ctx, &mcp.CallToolParams{Name: "desk-two__triage_agent", Arguments: map[string]any{"prompt": "off"}})
		require.NoError(t, err)
		require.True(t, res.IsError)
		require.Contains(t, toolText(t, res), "disabled")
		e.do("PATCH", "/api/v1/apps/"+secondID+"/agents/"+twoTriage, map[string]any{"status": "active"}, bearer(key)).expect(t, 200)
		boundKey, _ := e.key(session, map[string]any{"name": "bound", "scopes": []string{"app:access"}, "app_id": appID})
		bound, err := e.mcpSession(ctx, "/api/v1/mcp", boundKey)
		require.NoError(t, err)
		defer bound.Close()
		tools, err = bound.ListTools(ctx, nil)
		require.NoError(t, err)
		require.Len(t, tools.Tools, 7)
		for _, tl := range tools.Tools {
			require.True(t, strings.HasPrefix(tl.Name, "support-desk__"), tl.Name)
		}
		res, err = bound.CallTool(ctx, &mcp.CallToolParams{Name: "support-desk__triage", Arguments: map[string]any{"prompt": "bound"}})
		require.NoError(t, err)
		require.Equal(t, "echo: bound", toolText(t, res), "app:access calls")
		_, err = bound.CallTool(ctx, &mcp.CallToolParams{Name: "desk-two__triage_agent", Arguments: map[string]any{"prompt": "bound"}})
		require.ErrorContains(t, err, "unknown tool", "another app's agent is no tool of a bound key")
		_, err = e.mcpSession(ctx, "/api/v1/apps/"+secondID+"/mcp", boundKey)
		require.Error(t, err)

		// A read-only key lists but cannot call (403).
		readOnly := e.keyWith(session, "read:all")
		ro, err := e.mcpSession(ctx, path, readOnly)
		require.NoError(t, err)
		defer ro.Close()
		tools, err = ro.ListTools(ctx, nil)
		require.NoError(t, err)
		require.Len(t, tools.Tools, 7)
		_, err = ro.CallTool(ctx, &mcp.CallToolParams{Name: "triage", Arguments: map[string]any{"prompt": "hi"}})
		require.Error(t, err)
		require.Contains(t, err.Error(), "Forbidden")
		raw := e.do("POST", path, map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
			"params": map[string]any{"name": "triage", "arguments": map[string]any{"prompt": "hi"}}},
			bearer(readOnly), header("Accept", "application/json, text/event-stream")).expectError(t, http.StatusForbidden, "PermissionError", "")
		// It is a JSON-RPC answer too, which MCP clients read as the call's error.
		require.Equal(t, 7.0, raw.JSON["id"])
		require.Equal(t, "2.0", raw.JSON["jsonrpc"])
		require.Equal(t, raw.str("detail"), raw.JSON["error"].(map[string]any)["message"])

		// The document says what each method needs.
		var doc struct {
			Paths map[string]map[string]struct {
				Description string `json:"description"`
			} `json:"paths"`
		}
		require.NoError(t, json.Unmarshal(e.do("GET", "/api/v1/openapi.json", nil).expect(t, 200).Body, &doc))
		for _, p := range []string{"/api/v1/apps/{app_id}/mcp", "/api/v1/mcp"} {
			desc := doc.Paths[p]["post"].Description
			require.Contains(t, desc, "`read:all`, `write:all`, `admin`, `app:access`", p)
			require.Contains(t, desc, "`tools/call` runs things", p)
		}

		// Another user's app is not found; without a key, 401 with a challenge.
		other := e.signup("grace@example.com")
		_, err = e.mcpSession(ctx, path, e.keyWith(other, "read:all", "write:all"))
		require.Error(t, err)
		e.do("POST", path, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, bearer(e.keyWith(other, "read:all")),
			header("Accept", "application/json, text/event-stream")).expect(t, http.StatusNotFound)
		for _, p := range []string{path, "/api/v1/mcp"} {
			r := e.do("POST", p, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
				header("Accept", "application/json, text/event-stream")).expect(t, http.StatusUnauthorized)
			require.Equal(t, "Bearer", r.Header.Get("WWW-Authenticate"))
		}
	})
}

// TestMCPCancelledCallCancelsTheRun: a tools/call whose client goes away
// cancels its activation: nobody reads the answer.
func TestMCPCancelledCallCancelsTheRun(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		arrived := make(chan struct{}, 1)
		outside := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			arrived <- struct{}{}
			<-r.Context().Done()
		}))
		tok := e.signup("ada@example.com")
		slow := e.jsAgent(tok, fmt.Sprintf(`async function run(input, ctx) { await ctx.http.fetch(%q); return "late"; }`, outside.URL+"/hang"), 60)
		cs, err := e.mcpSession(context.Background(), "/api/v1/apps/"+slow.appID+"/mcp", tok)
		require.NoError(t, err)
		defer cs.Close()
		ctx, cancel := context.WithCancel(context.Background())
		called := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "script", Arguments: map[string]any{}})
			called <- err
		}()
		select {
		case <-arrived:
		case <-time.After(20 * time.Second):
			t.Fatal("the run did not start")
		}
		cancel()
		require.Error(t, <-called)
		acts := list(e.do("GET", "/api/v1/apps/"+slow.appID+"/activations", nil, bearer(tok)).expect(t, 200), "activations")
		require.Len(t, acts, 1)
		done := e.await(tok, acts[0]["activation_id"].(string))
		require.Equal(t, "failed", done.str("status"))
		require.Equal(t, "Activation cancelled", done.str("error"))
		require.Equal(t, "mcp", done.JSON["context"].(map[string]any)["source"])
	})
}

// TestMCPProgressComesAtOnce: a call's progress notifications reach the
// client while the run goes on, not with its answer (the event stream is
// flushed through the router's writer).
func TestMCPProgressComesAtOnce(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		release := make(chan struct{})
		outside := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		tok := e.signup("ada@example.com")
		slow := e.jsAgent(tok, fmt.Sprintf(`async function run(input, ctx) { await ctx.http.fetch(%q); return "done"; }`, outside.URL+"/wait"), 60)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		progressed := make(chan string, 4)
		cs, err := e.mcpSession(ctx, "/api/v1/apps/"+slow.appID+"/mcp", tok, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progressed <- r.Params.Message }})
		require.NoError(t, err)
		defer cs.Close()
		called := make(chan error, 1)
		go func() {
			params := &mcp.CallToolParams{Name: "script", Arguments: map[string]any{}}
			params.SetProgressToken("p")
			_, err := cs.CallTool(ctx, params)
			called <- err
		}()
		select {
		case msg := <-progressed:
			require.Contains(t, msg, "Activation ")
		case err := <-called:
			t.Fatalf("the call ended (%v) before any progress came", err)
		case <-time.After(15 * time.Second):
			t.Fatal("no progress while the run goes on")
		}
		close(release)
		require.NoError(t, <-called)
	})
}
