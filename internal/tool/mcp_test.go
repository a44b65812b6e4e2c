package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/tool"
	"github.com/agentplatform/agentplatform/internal/tool/mcptest"
)

// mcpKit is a kit whose MCP servers are reached through the egress guard
// (127.0.0.2 allowed), bodies capped as the server caps them.
func mcpKit(t *testing.T, w *world, tokens tool.TokenSource) *tool.Kit {
	c := egress.New(egresstest.AllowPrefixes()).Client(egress.Options{Field: "url", MaxBody: tool.MaxMCPBody})
	t.Cleanup(c.CloseIdleConnections)
	return &tool.Kit{Store: w.st, MCPHTTP: c, Credentials: tokens}
}

func (w *world) mcpServer(t *testing.T, name, url, authenticator string) {
	t.Helper()
	now := store.Now()
	require.NoError(t, w.st.MCPServerCreate(context.Background(), &store.MCPServer{ID: uuid.NewString(), AppID: w.app.ID,
		Name: name, URL: url, Authenticator: authenticator, CreatedAt: now, UpdatedAt: now}))
}

// buildSet builds tools (a JSON array) for a run of w; the set is closed
// when the test ends.
func buildSet(t *testing.T, k *tool.Kit, run *executor.Run, tools string) *tool.Set {
	t.Helper()
	cfg, err := tool.ParseConfig(json.RawMessage(`{"tools":` + tools + `}`))
	require.NoError(t, err)
	set, err := k.Build(context.Background(), run, cfg)
	require.NoError(t, err)
	t.Cleanup(set.Close)
	return set
}

func byName(set *tool.Set) map[string]tool.Tool {
	m := map[string]tool.Tool{}
	for _, tl := range set.Tools {
		m[tl.Definition().Name] = tl
	}
	return m
}

func callTool(t *testing.T, tl tool.Tool, run *executor.Run, id, args string) (json.RawMessage, error) {
	t.Helper()
	return tl.Call(context.Background(), tool.Call{ID: id, Arguments: json.RawMessage(args), IdempotencyKey: run.ID + ":" + id, Run: run})
}

// TestMCPTool: an mcp tool brings the server's tools, listed once per run,
// named <server>_<tool> (a dotted name made valid), with their
// descriptions and input schemas, filtered by tools; a call answers the
// remote result and carries its idempotency key in _meta; isError, a
// garbage answer and a server gone are that call's error; Build's other
// tools keep their places and names.
func TestMCPTool(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		w := newWorld(t, d)
		srv := mcptest.New(t, mcptest.Options{})
		w.mcpServer(t, "docs", srv.URL, "")
		k := mcpKit(t, w, nil)
		run := w.run(uuid.NewString())

		set := buildSet(t, k, run, `[{"type":"client","name":"pick"},{"type":"mcp","server":"docs"}]`)
		require.EqualValues(t, 1, srv.Lists())
		var names []string
		for _, tl := range set.Tools {
			names = append(names, tl.Definition().Name)
		}
		require.Equal(t, []string{"pick", "docs_echo", "docs_fail", "docs_look_up", "docs_slow"}, names, "in the order the server lists them")
		tools := byName(set)
		def := tools["docs_echo"].Definition()
		require.Equal(t, "Echoes its arguments", def.Description)
		require.JSONEq(t, `{"type":"object","properties":{"text":{"type":"string"}}}`, string(def.Parameters))
		require.Equal(t, "mcp", tools["docs_echo"].Spec().Type)

		out, err := callTool(t, tools["docs_echo"], run, "c1", `{"text":"hi"}`)
		require.NoError(t, err)
		require.JSONEq(t, `{"echo":{"text":"hi"}}`, string(out))
		out, err = callTool(t, tools["docs_look_up"], run, "c2", `{}`)
		require.NoError(t, err)
		require.JSONEq(t, `"found"`, string(out))
		_, err = callTool(t, tools["docs_fail"], run, "c3", `{}`)
		require.ErrorContains(t, err, mcptest.FailText)
		require.Equal(t, []string{run.ID + ":c1", run.ID + ":c2", run.ID + ":c3"}, srv.Keys(), "each call's key in its _meta")
		require.EqualValues(t, 1, srv.Lists(), "listed once, not per call")

		srv.SetGarbage(true)
		_, err = callTool(t, tools["docs_echo"], run, "c4", `{"text":"x"}`)
		require.ErrorContains(t, err, "MCP server docs: calling echo failed")
		srv.SetGarbage(false)
		srv.SetDown(true)
		_, err = callTool(t, tools["docs_echo"], run, "c5", `{"text":"x"}`)
		require.ErrorContains(t, err, "MCP server docs: calling echo failed")
		srv.SetDown(false)
		set.Close()

		// Filtered; two tools of one server share its listing.
		set = buildSet(t, k, run, `[{"type":"mcp","server":"docs","tools":["echo"]},{"type":"mcp","server":"docs","tools":["fail","nope"],"approval":"always"}]`)
		require.EqualValues(t, 2, srv.Lists())
		require.Len(t, set.Tools, 2)
		require.Equal(t, "docs_echo", set.Tools[0].Definition().Name)
		require.Equal(t, "docs_fail", set.Tools[1].Definition().Name)
		require.True(t, set.Tools[1].Waits(), "approval applies to the server's tools")
		require.Len(t, set.Logs, 1)
		require.Contains(t, set.Logs[0].Message, "MCP server docs has no tool nope")

		// Listed outside a run (the app page): the names and schemas a run sees.
		listed, err := k.MCPServerTools(context.Background(), w.user.ID, w.app.ID, "docs")
		require.NoError(t, err)
		require.Len(t, listed, 4)
		require.Equal(t, "docs_echo", listed[0].Name)
		require.Equal(t, "Echoes its arguments", listed[0].Description)
		require.EqualValues(t, 3, srv.Lists())
		_, err = k.MCPServerTools(context.Background(), uuid.NewString(), w.app.ID, "docs")
		require.ErrorIs(t, err, store.ErrNotFound, "another user's app has none")

		// An unknown server is the run's validation error.
		cfg, err := tool.ParseConfig(json.RawMessage(`{"tools":[{"type":"mcp","server":"wiki"}]}`))
		require.NoError(t, err)
		_, err = k.Build(context.Background(), run, cfg)
		requireInvalid(t, err, "agent_config.tools[0].server", "Unknown MCP server: wiki")
	})
}

// TestMCPToolListingFails: a server that cannot be listed at the run's
// start (down, or a name that resolves to a private address) leaves the
// run going: the tools named in tools are offered with any object as
// arguments and each call answers why; without tools none are offered
// and the run's log says why.
func TestMCPToolListingFails(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		w := newWorld(t, d)
		ln := egresstest.Listen(t)
		gone := "http://" + ln.Addr().String() + "/mcp"
		require.NoError(t, ln.Close())
		inside := mcptest.New(t, mcptest.Options{}) // on 127.0.0.2, reached as localhost: 127.0.0.1, refused
		_, port, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimSuffix(inside.URL, "/mcp"), "http://"))
		require.NoError(t, err)
		w.mcpServer(t, "gone", gone, "")
		w.mcpServer(t, "local", "http://localhost:"+port+"/mcp", "")
		k := mcpKit(t, w, nil)
		run := w.run(uuid.NewString())

		set := buildSet(t, k, run, `[{"type":"mcp","server":"gone","tools":["echo"]},{"type":"mcp","server":"local"}]`)
		require.Len(t, set.Tools, 1)
		def := set.Tools[0].Definition()
		require.Equal(t, "gone_echo", def.Name)
		require.JSONEq(t, `{"type":"object"}`, string(def.Parameters))
		_, err = callTool(t, set.Tools[0], run, "c1", `{"text":"x"}`)
		require.ErrorContains(t, err, "MCP server gone could not list its tools at the run's start")
		require.Len(t, set.Logs, 1)
		require.Contains(t, set.Logs[0].Message, "MCP server local offers no tools to this run")
		require.Contains(t, set.Logs[0].Message, "127.0.0.1", "the guard refused the address the name resolved to")
		require.Zero(t, inside.Lists())

		// Outside a run (the app page), the failure is the owner's to read.
		_, err = k.MCPServerTools(context.Background(), w.user.ID, w.app.ID, "gone")
		var le *tool.MCPListError
		require.ErrorAs(t, err, &le)
		require.Equal(t, "gone", le.Server)
		require.ErrorContains(t, err, "MCP server gone: connecting to "+gone+" failed")
	})
}

// rotating is a TokenSource that hands out a new token on every ask, and
// remembers them.
type rotating struct {
	mu     sync.Mutex
	issued []string
}

func (r *rotating) AccessToken(_ context.Context, _, _, authenticator string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tok := fmt.Sprintf("%s-%d", authenticator, len(r.issued)+1)
	r.issued = append(r.issued, tok)
	return tok, nil
}

// TestMCPToolBearer: with an authenticator, every request to the server
// carries the token the credential source gives at that moment (asked
// for anew each time, so a long run never sends a stale one).
func TestMCPToolBearer(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		w := newWorld(t, d)
		var mu sync.Mutex
		var seen []string
		srv := mcptest.New(t, mcptest.Options{Check: func(r *http.Request) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, r.Header.Get("Authorization"))
			return nil
		}})
		w.mcpServer(t, "crm", srv.URL, "crm")
		tokens := &rotating{}
		k := mcpKit(t, w, tokens)
		run := w.run(uuid.NewString())
		set := buildSet(t, k, run, `[{"type":"mcp","server":"crm","tools":["echo"]}]`)
		_, err := callTool(t, set.Tools[0], run, "c1", `{}`)
		require.NoError(t, err)
		_, err = callTool(t, set.Tools[0], run, "c2", `{}`)
		require.NoError(t, err)
		set.Close()

		mu.Lock()
		defer mu.Unlock()
		tokens.mu.Lock()
		defer tokens.mu.Unlock()
		require.GreaterOrEqual(t, len(seen), 4, "initialize, list, two calls")
		require.Len(t, tokens.issued, len(seen), "one token asked for per request")
		for i, h := range seen {
			require.Equal(t, "Bearer "+tokens.issued[i], h)
		}
	})
}

// TestMCPToolNames: names stay within ^[a-zA-Z0-9_-]{1,64}$: an overlong
// one is cut and ends with a hash, distinct per tool.
func TestMCPToolNames(t *testing.T) {
	t.Parallel()
	w := newWorld(t, store.SQLite)
	srv := mcptest.New(t, mcptest.Options{})
	long := strings.Repeat("s", 60)
	w.mcpServer(t, long, srv.URL, "")
	k := mcpKit(t, w, nil)
	set := buildSet(t, k, w.run(uuid.NewString()), `[{"type":"mcp","server":"`+long+`"}]`)
	seen := map[string]bool{}
	for _, tl := range set.Tools {
		name := tl.Definition().Name
		require.True(t, tool.NamePattern.MatchString(name), name)
		require.True(t, strings.HasPrefix(name, long[:55]+"_"), name)
		require.False(t, seen[name], name)
		seen[name] = true
	}
	require.Len(t, seen, 4)
}
