package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/oauthtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/tool/mcptest"
)

// The MCP client (DESIGN §4 "Agents that act: tools"): apps declare remote
// MCP servers (mcp_servers, /api/v1/apps/{app_id}/mcp-servers) whose tools
// their LLM agents call, against a real go-sdk MCP server on the outside
// world's address.

// TestMCPServersAPI: CRUD of an app's MCP servers, paged like the other
// lists; a literal private URL is refused at save naming the field (in a
// manifest too), and the manifest carries them both ways; another user's
// server or app is absent; an app:access key reads but does not change
// them; a server an agent's tools name is not deleted (409 naming it).
func TestMCPServersAPI(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		alice := e.signup("alice-mcp@example.com")
		bob := e.signup("bob-mcp@example.com")
		m := map[string]any{"name": "Docs", "slug": "docs", "version": "1.0.0",
			"mcp_servers": []any{map[string]any{"name": "docs", "url": "http://10.1.2.3/mcp"}}}
		r := e.importManifest(alice, m).expect(t, 400)
		require.Contains(t, r.str("detail"), "mcp_servers[0].url: 10.1.2.3 is a private address")

		m["mcp_servers"] = []any{map[string]any{"name": "docs", "url": "https://docs.example.com/mcp"}}
		m["agents"] = []any{map[string]any{"name": "clerk", "agent_type_id": "llm",
			"agent_config": map[string]any{"provider_id": "echo", "model": "echo", "tools": []any{map[string]any{"type": "mcp", "server": "docs", "tools": []any{"search"}}}}}}
		appID := e.importManifest(alice, m).expect(t, 201).str("app_id")
		manifest := e.do("GET", "/api/v1/apps/"+appID+"/manifest", nil, bearer(alice)).expect(t, 200)
		require.Equal(t, []any{map[string]any{"name": "docs", "url": "https://docs.example.com/mcp"}}, manifest.JSON["mcp_servers"])
		tools := manifest.JSON["agents"].([]any)[0].(map[string]any)["agent_config"].(map[string]any)["tools"]
		require.Equal(t, []any{map[string]any{"type": "mcp", "server": "docs", "tools": []any{"search"}}}, tools)

		base := "/api/v1/apps/" + appID + "/mcp-servers"
		wiki := e.do("POST", base, map[string]any{"name": "wiki", "url": "https://wiki.example.com/mcp"}, bearer(alice)).expect(t, 201)
		wikiID := wiki.str("id")
		require.Equal(t, appID, wiki.str("app_id"))
		require.Equal(t, "", wiki.str("authenticator"))
		r = e.do("POST", base, map[string]any{"name": "lan", "url": "http://192.168.1.10/mcp"}, bearer(alice)).expect(t, 400)
		require.Contains(t, r.str("detail"), "field url: 192.168.1.10 is a private address")
		r = e.do("POST", base, map[string]any{"name": "x", "url": "https://x.example.com", "authenticator": "crm"}, bearer(alice)).expect(t, 400)
		require.Contains(t, r.str("detail"), "field authenticator: Unknown authenticator: crm")
		e.do("POST", base, map[string]any{"name": "wiki", "url": "https://x.example.com"}, bearer(alice)).expect(t, 409)

		p := e.do("GET", base+"?limit=1&offset=1", nil, bearer(alice)).expect(t, 200)
		require.EqualValues(t, 2, p.JSON["total_count"])
		require.Equal(t, "wiki", list(p, "mcp_servers")[0]["name"])
		require.Equal(t, "https://wiki.example.com/mcp", e.do("GET", base+"/"+wikiID, nil, bearer(alice)).expect(t, 200).str("url"))
		up := e.do("PATCH", base+"/"+wikiID, map[string]any{"url": "https://wiki2.example.com/mcp"}, bearer(alice)).expect(t, 200)
		require.Equal(t, "https://wiki2.example.com/mcp", up.str("url"))
		require.Equal(t, "wiki", up.str("name"))
		r = e.do("PATCH", base+"/"+wikiID, map[string]any{"url": "http://127.0.0.1:9/mcp"}, bearer(alice)).expect(t, 400)
		require.Contains(t, r.str("detail"), "field url: 127.0.0.1 is a private address")

		// Another user sees nothing of it.
		e.do("GET", base, nil, bearer(bob)).expect(t, 404)
		e.do("GET", base+"/"+wikiID, nil, bearer(bob)).expect(t, 404)
		e.do("PATCH", base+"/"+wikiID, map[string]any{"url": "https://evil.example.com"}, bearer(bob)).expect(t, 404)
		e.do("DELETE", base+"/"+wikiID, nil, bearer(bob)).expect(t, 404)
		e.do("POST", base, map[string]any{"name": "bobs", "url": "https://x.example.com"}, bearer(bob)).expect(t, 404)

		// An app:access key reads them, changes none.
		reader := e.keyWith(alice, "app:access")
		e.do("GET", base, nil, bearer(reader)).expect(t, 200)
		e.do("GET", base+"/"+wikiID, nil, bearer(reader)).expect(t, 200)
		e.do("POST", base, map[string]any{"name": "k", "url": "https://x.example.com"}, bearer(reader)).expect(t, 403)

		// docs is named by clerk's tools.
		docsID := list(e.do("GET", base, nil, bearer(alice)).expect(t, 200), "mcp_servers")[0]["id"].(string)
		r = e.do("DELETE", base+"/"+docsID, nil, bearer(alice)).expect(t, 409)
		require.Contains(t, r.str("detail"), "clerk")
		e.do("PATCH", base+"/"+docsID, map[string]any{"name": "docs2"}, bearer(alice)).expect(t, 409)
		e.do("DELETE", base+"/"+wikiID, nil, bearer(alice)).expect(t, 204)
		e.do("GET", base+"/"+wikiID, nil, bearer(alice)).expect(t, 404)

		// An agent's mcp tool must name a server of the app.
		r = e.do("POST", "/api/v1/apps/"+appID+"/agents", map[string]any{"name": "other", "agent_type_id": "llm",
			"agent_config": map[string]any{"provider_id": "echo", "model": "echo", "tools": []any{map[string]any{"type": "mcp", "server": "wiki"}}}},
			bearer(alice)).expect(t, 400)
		require.Contains(t, r.str("detail"), "field agent_config.tools[0].server: Unknown MCP server: wiki")
	})
}

// mcpApp imports an app with the MCP servers servers (name → URL) whose
// LLM agent "clerk", on f's fake LLM, has tools; it returns the app's and
// clerk's ids.
func (f *fakeEnv) mcpApp(servers map[string]string, tools ...map[string]any) (appID, clerkID string) {
	f.t.Helper()
	var ms []any
	for name, url := range servers {
		ms = append(ms, map[string]any{"name": name, "url": url})
	}
	f.apps++
	appID = f.importManifest(f.tok, map[string]any{"name": "MCP", "slug": fmt.Sprintf("mcp-%d", f.apps), "version": "1.0.0",
		"mcp_servers": ms, "agents": []any{map[string]any{"name": "clerk", "agent_type_id": "llm", "timeout_seconds": 60,
			"agent_config": map[string]any{"provider_id": f.provider, "model": "m", "tools": tools}}}}).expect(f.t, 201).str("app_id")
	return appID, f.agentNamed(f.tok, appID, "clerk")
}

func toolNames(tools []llm.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// TestMCPToolRun: an LLM agent calls a remote MCP server's tools: the
// server is listed once per run however many steps it takes; results go
// back to the model, each call carrying its idempotency key; an isError
// result, a server gone mid-run and garbage answers are the call's error
// result and the run completes; tools filters what is offered.
func TestMCPToolRun(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		f := newFakeEnv(t, d, llm.TypeOpenAI)
		srv := mcptest.New(t, mcptest.Options{})
		_, clerk := f.mcpApp(map[string]string{"docs": srv.URL}, map[string]any{"type": "mcp", "server": "docs"})

		f.fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", "docs_echo", `{"text":"hi"}`), call("c2", "docs_fail", `{}`)}},
			llmtest.Reply{ToolCalls: []llm.ToolCall{call("c3", "docs_look_up", `{}`)}},
			llmtest.Reply{Text: "done"})
		id := f.start(clerk, "go")
		done := f.await(f.tok, id)
		require.Equal(t, "completed", done.str("status"), done.Body)
		require.EqualValues(t, 1, srv.Lists(), "listed once for a run of three LLM steps")
		reqs := f.fake.Requests()
		require.Len(t, reqs, 3)
		require.Equal(t, []string{"docs_echo", "docs_fail", "docs_look_up", "docs_slow"}, toolNames(reqs[0].Tools))
		require.Equal(t, "Echoes its arguments", reqs[0].Tools[0].Description)
		require.JSONEq(t, `{"type":"object","properties":{"text":{"type":"string"}}}`, string(reqs[0].Tools[0].Parameters))
		st := steps(f.env, f.tok, id)
		require.Equal(t, []string{"llm:completed", "tool:completed", "tool:failed", "llm:completed", "tool:completed", "llm:completed"}, kinds(st))
		require.Equal(t, map[string]any{"echo": map[string]any{"text": "hi"}}, st[1]["output"])
		require.Contains(t, st[2]["error"], mcptest.FailText)
		require.Equal(t, "found", st[4]["output"])
		require.ElementsMatch(t, []string{id + ":c1", id + ":c2", id + ":c3"}, srv.Keys(), "c1 and c2 run at once")

		// A server gone, then answering garbage, mid-run.
		for _, broken := range []func(bool){srv.SetDown, srv.SetGarbage} {
			broken(true)
			f.fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", "docs_echo", `{"text":"x"}`)}}, llmtest.Reply{Text: "done"})
			id = f.start(clerk, "go")
			done = f.await(f.tok, id)
			require.Equal(t, "completed", done.str("status"), done.Body)
			st = steps(f.env, f.tok, id)
			require.Equal(t, "tool:failed", kinds(st)[1])
			require.Contains(t, st[1]["error"], "MCP server docs: calling echo failed")
			broken(false)
		}

		// Filtered.
		_, only := f.mcpApp(map[string]string{"docs": srv.URL}, map[string]any{"type": "mcp", "server": "docs", "tools": []any{"echo"}})
		f.fake.Queue(llmtest.Reply{Text: "nothing to do"})
		done = f.await(f.tok, f.start(only, "go"))
		require.Equal(t, "completed", done.str("status"), done.Body)
		reqs = f.fake.Requests()
		require.Equal(t, []string{"docs_echo"}, toolNames(reqs[len(reqs)-1].Tools))
	})
}

// TestMCPToolListingFails: a server that cannot be listed at the run's
// start does not fail the run: the tools its agent names are offered and
// each call answers why; a server offered whole offers nothing, and the
// run's log says why. A name that resolves to a private address is
// refused when dialled.
func TestMCPToolListingFails(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		f := newFakeEnv(t, d, llm.TypeOpenAI)
		ln := egresstest.Listen(t)
		gone := "http://" + ln.Addr().String() + "/mcp"
		require.NoError(t, ln.Close())
		inside := mcptest.New(t, mcptest.Options{})
		appID, clerk := f.mcpApp(map[string]string{"gone": gone, "local": "https://mcp.example.com/mcp"},
			map[string]any{"type": "mcp", "server": "gone", "tools": []any{"echo"}}, map[string]any{"type": "mcp", "server": "local"})
		// Reached by a name that resolves to loopback (stored as if before
		// the save-time check): the guard refuses it when dialled.
		ctx := context.Background()
		ms, err := f.srv.Store.MCPServerGetByName(ctx, appID, "local")
		require.NoError(t, err)
		ms.URL = strings.Replace(inside.URL, egresstest.Addr, "localhost", 1)
		require.NoError(t, f.srv.Store.MCPServerUpdate(ctx, ms))
		f.fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", "gone_echo", `{"text":"x"}`)}}, llmtest.Reply{Text: "done"})
		id := f.start(clerk, "go")
		done := f.await(f.tok, id)
		require.Equal(t, "completed", done.str("status"), done.Body)
		reqs := f.fake.Requests()
		require.Equal(t, []string{"gone_echo"}, toolNames(reqs[0].Tools))
		require.JSONEq(t, `{"type":"object"}`, string(reqs[0].Tools[0].Parameters))
		st := steps(f.env, f.tok, id)
		require.Equal(t, "tool:failed", kinds(st)[1])
		require.Contains(t, st[1]["error"], "MCP server gone could not list its tools at the run's start")
		logs := list(f.do("GET", "/api/v1/activations/"+id+"/logs", nil, bearer(f.tok)).expect(t, 200), "logs")
		require.Len(t, logs, 1)
		require.Equal(t, "warn", logs[0]["level"])
		require.Contains(t, logs[0]["message"], "MCP server local offers no tools to this run")
		require.Contains(t, logs[0]["message"], "127.0.0.1")
		require.Zero(t, inside.Lists(), "the guard let no request through")
	})
}

// TestMCPToolBearer: an MCP server with an authenticator gets the user's
// connected account's access token as Bearer on every request, asked for
// anew each time: across a run that outlives a token (2 s), the server,
// which checks each token at the provider, never sees an expired one.
func TestMCPToolBearer(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		fx := newCRMApp(t, d, oauthtest.Options{AccessTokenLifespan: 2 * time.Second}, nil)
		p, e, alice, appID := fx.p, fx.e, fx.alice, fx.appID
		var checked atomic.Int64
		check := &http.Client{}
		t.Cleanup(check.CloseIdleConnections)
		srv := mcptest.New(t, mcptest.Options{Check: func(r *http.Request) error {
			checked.Add(1)
			req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, p.UserinfoURL(), nil)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", r.Header.Get("Authorization"))
			res, err := check.Do(req)
			if err != nil {
				return err
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("the provider says %d for %q", res.StatusCode, r.Header.Get("Authorization"))
			}
			return nil
		}})
		fake := llmtest.NewOpenAI(t)
		pid := e.do("POST", providersPath, map[string]any{"name": "fake", "provider_type": "openai",
			"base_url": fake.URL, "api_key": "sk-test", "models": []string{"m"}}, bearer(alice)).expect(t, 201).str("id")
		e.do("POST", "/api/v1/apps/"+appID+"/mcp-servers", map[string]any{"name": "crm", "url": srv.URL, "authenticator": "crm"},
			bearer(alice)).expect(t, 201)
		agentID := e.do("POST", "/api/v1/apps/"+appID+"/agents", map[string]any{"name": "clerk", "agent_type_id": "llm",
			"agent_config": map[string]any{"provider_id": pid, "model": "m", "tools": []any{map[string]any{"type": "mcp", "server": "crm"}}}},
			bearer(alice)).expect(t, 201).str("agent_id")

		// Not connected yet: the server cannot be listed, the run goes on.
		fake.Queue(llmtest.Reply{Text: "no tools"})
		done := e.await(alice, e.do("POST", "/api/v1/agents/"+agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "p"}},
			bearer(alice)).expect(t, 201).str("activation_id"))
		require.Equal(t, "completed", done.str("status"), done.Body)
		require.Zero(t, checked.Load(), "no request without a token")

		e.connect(alice, appID, p, "alice", "/").expect(t, 303)
		fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", "crm_slow", `{"ms":2500}`)}},
			llmtest.Reply{ToolCalls: []llm.ToolCall{call("c2", "crm_echo", `{"text":"late"}`)}},
			llmtest.Reply{Text: "done"})
		id := e.do("POST", "/api/v1/agents/"+agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "p"}},
			bearer(alice)).expect(t, 201).str("activation_id")
		done = e.await(alice, id)
		require.Equal(t, "completed", done.str("status"), done.Body)
		st := steps(e, alice, id)
		require.Equal(t, []string{"llm:completed", "tool:completed", "llm:completed", "tool:completed", "llm:completed"}, kinds(st))
		require.Equal(t, map[string]any{"echo": map[string]any{"text": "late"}}, st[3]["output"])
		require.Zero(t, srv.Refused(), "no request carried an expired or unknown token")
		require.GreaterOrEqual(t, checked.Load(), int64(4), "initialize, list, two calls")
		require.GreaterOrEqual(t, p.Refreshes(), int64(1), "the token was refreshed during the run")
	})
}
