package api_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// jsAgent imports an app with one JavaScript agent running code and
// answers its app and agent ids.
func (e *env) jsAgent(token, code string, timeoutSeconds int) agentFixture {
	e.t.Helper()
	m := map[string]any{"name": "Scripts", "slug": "scripts-" + uuid.NewString()[:8], "version": "1.0.0",
		"agents": []any{map[string]any{"name": "script", "agent_type_id": "custom", "version": "1.0.0", "timeout_seconds": timeoutSeconds,
			"agent_config": map[string]any{"runtime": "javascript", "code": code}}}}
	appID := e.importManifest(token, m).expect(e.t, 201).str("app_id")
	agents := list(e.do("GET", "/api/v1/apps/"+appID+"/agents", nil, bearer(token)).expect(e.t, 200), "agents")
	require.Len(e.t, agents, 1)
	return agentFixture{appID: appID, agentID: agents[0]["agent_id"].(string)}
}

func (e *env) activateJS(token string, ag agentFixture, input map[string]any) string {
	e.t.Helper()
	return e.do("POST", "/api/v1/agents/"+ag.agentID+"/activate", map[string]any{"input_data": input}, bearer(token)).expect(e.t, 201).str("activation_id")
}

// TestJavaScriptAgentRunsWithItsServices: a custom agent's code runs through
// the activation lifecycle with ctx's storage, LLM, logs and credentials.
func TestJavaScriptAgentRunsWithItsServices(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("js@example.com")
		ag := e.jsAgent(tok, `async function run(input, ctx) {
			const before = await ctx.storage.get("count");
			await ctx.storage.set("count", (before || 0) + 1);
			await ctx.storage.set("other", "x");
			const listed = await ctx.storage.list("co");
			const answer = await ctx.llm.complete({prompt: "hello " + input.name, provider_id: "echo"});
			let creds;
			try { await ctx.credentials.getCredentials("google"); } catch (e) { creds = e.name; }
			ctx.log("run", ctx.activation.activation_id, "of", ctx.activation.agent_id);
			console.log({seen: before});
			return {before, listed, text: answer.text, creds, app: ctx.app_id === ctx.activation.app_id, key: ctx.agent_key.startsWith("agk_")};
		}`, 10)
		first := e.await(tok, e.activateJS(tok, ag, map[string]any{"name": "Ada"}))
		require.Equal(t, "completed", first.str("status"), first.str("error"))
		require.Equal(t, map[string]any{"before": nil, "listed": []any{map[string]any{"key": "count", "value": 1.0}},
			"text": "echo: hello Ada", "creds": "ProviderNotSupportedError", "app": true, "key": true}, first.JSON["output_data"])
		second := e.await(tok, e.activateJS(tok, ag, map[string]any{"name": "Bob"}))
		require.Equal(t, 1.0, second.JSON["output_data"].(map[string]any)["before"], "storage outlives a run")

		id := second.str("activation_id")
		logs := e.do("GET", "/api/v1/activations/"+id+"/logs", nil, bearer(tok)).expect(t, 200)
		lines := logs.JSON["logs"].([]any)
		require.Len(t, lines, 2)
		require.Equal(t, fmt.Sprintf("run %s of %s", id, ag.agentID), lines[0].(map[string]any)["message"])
		require.Equal(t, `{"seen":1}`, lines[1].(map[string]any)["message"])
		require.Equal(t, false, logs.JSON["truncated"])

		// Another user's run is not there; an LLM agent's has no logs.
		other := e.signup("other@example.com")
		e.do("GET", "/api/v1/activations/"+id+"/logs", nil, bearer(other)).expectError(t, 404, "NotFoundError", "Activation not found")
		llm := e.llmAgent(tok, nil, 10)
		done := e.await(tok, e.activateJS(tok, llm, map[string]any{"prompt": "hi"}))
		require.Equal(t, map[string]any{"logs": []any{}, "truncated": false},
			e.do("GET", "/api/v1/activations/"+done.str("activation_id")+"/logs", nil, bearer(tok)).expect(t, 200).JSON)
	})
}

// TestJavaScriptAgentFailures: a throw keeps its message and stack, a loop
// times out with the lifecycle's text, a promise that never settles and an
// endless allocation fail the run, not the process.
func TestJavaScriptAgentFailures(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		// 16 MB: a 2 MiB string and its JSON fit, so the output cap (1 MiB)
		// is what refuses it, and an endless allocation ends in seconds
		// even under -race on a busy machine (32 MB and a 10 MB string
		// took 5 and 7.6 s quiet, and overran the 20 s wait in a loaded
		// full run).
		e := newEnv(t, d, map[string]string{"AP_JS_MEMORY_MB": "16"})
		tok := e.signup("fail@example.com")
		// Only the loop waits for its timeout; the others end on their
		// own, however slow the machine (an allocation under -race is).
		cases := []struct{ code, err string }{
			{`function check(t) { throw new RangeError("ticket " + t + " is too old"); }
			  async function run(input) { check(input.id); }`, "RangeError: ticket 7 is too old"},
			{`async function run() { for (;;) {} }`, "Activation timed out after 1 s"},
			{`async function run() { await new Promise(() => {}); }`, "never settles"},
			{`async function run() { const a = []; for (;;) a.push("y".repeat(4096)); }`, "out of memory"},
			{`async function run() { return "z".repeat(2 * 1024 * 1024); }`, "over the limit of 1048576"},
			{`async function run() { const o = {}; o.self = o; return o; }`, "TypeError"},
			{`async function run() { return require("child_process").execSync("id"); }`, "'require' is not defined"},
			{`async function run() { return process.env; }`, "'process' is not defined"},
			{`async function run() { return await import("os"); }`, "module imports are not available"},
		}
		for _, c := range cases {
			timeout := 60
			if strings.Contains(c.err, "timed out") {
				timeout = 1
			}
			ag := e.jsAgent(tok, c.code, timeout)
			r := e.await(tok, e.activateJS(tok, ag, map[string]any{"id": 7}))
			require.Equal(t, "failed", r.str("status"))
			require.Contains(t, r.str("error"), c.err)
			if strings.HasPrefix(c.err, "RangeError") {
				logs := e.do("GET", "/api/v1/activations/"+r.str("activation_id")+"/logs", nil, bearer(tok)).expect(t, 200)
				line := logs.JSON["logs"].([]any)[0].(map[string]any)
				require.Equal(t, "error", line["level"])
				require.Contains(t, line["message"], "check", "the stack names the function that threw")
			}
		}
	})
}

// TestJavaScriptFetchStaysOutside: ctx.http.fetch reaches the outside world
// but is refused every private address before anything is sent, and a
// cancel stops a run waiting on a fetch.
func TestJavaScriptFetchStaysOutside(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("fetch@example.com")

		// What must never be reached: a listener on 127.0.0.1 counting
		// connections.
		inside, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { inside.Close() })
		var dialled atomic.Int32
		go func() {
			for {
				c, err := inside.Accept()
				if err != nil {
					return
				}
				dialled.Add(1)
				c.Close()
			}
		}()
		port := inside.Addr().(*net.TCPAddr).Port
		hold := make(chan struct{})
		arrived := make(chan struct{}, 1)
		outside := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/hello":
				w.Header().Set("X-Seen", r.Header.Get("X-Token"))
				fmt.Fprint(w, "hello "+r.Method)
			case "/to-inside":
				http.Redirect(w, r, fmt.Sprintf("http://127.0.0.1:%d/", port), http.StatusFound)
			case "/hang":
				arrived <- struct{}{}
				select {
				case <-hold:
				case <-r.Context().Done():
				}
			}
		}))
		t.Cleanup(func() { close(hold) })

		ag := e.jsAgent(tok, fmt.Sprintf(`async function run(input, ctx) {
			const ok = await ctx.http.fetch(%q, {method: "POST", headers: {"X-Token": "t1"}, body: "x"});
			const refused = {};
			for (const url of input.urls) {
				try { await ctx.http.fetch(url); refused[url] = "reached"; } catch (e) { refused[url] = e.name + ": " + e.message; }
			}
			return {status: ok.status, body: ok.body, seen: ok.headers["x-seen"], refused};
		}`, outside.URL+"/hello"), 20)
		urls := []string{fmt.Sprintf("http://127.0.0.1:%d/", port), fmt.Sprintf("http://localhost:%d/", port),
			fmt.Sprintf("http://[::1]:%d/", port), "http://169.254.169.254/latest/meta-data/", "http://2130706433/",
			outside.URL + "/to-inside"}
		r := e.await(tok, e.activateJS(tok, ag, map[string]any{"urls": urls}))
		require.Equal(t, "completed", r.str("status"), r.str("error"))
		out := r.JSON["output_data"].(map[string]any)
		require.Equal(t, 200.0, out["status"])
		require.Equal(t, "hello POST", out["body"])
		require.Equal(t, "t1", out["seen"])
		for _, u := range urls {
			got := out["refused"].(map[string]any)[u].(string)
			require.True(t, strings.HasPrefix(got, "FetchError: ctx.http.fetch failed: ctx.http.fetch"), "%s: %s", u, got)
			require.Contains(t, got, "AP_EGRESS_ALLOW", u)
		}
		require.Zero(t, dialled.Load(), "nothing reached the inside")

		// Cancel during a fetch ends the run at once.
		slow := e.jsAgent(tok, fmt.Sprintf(`async function run(input, ctx) { await ctx.http.fetch(%q); return "late"; }`, outside.URL+"/hang"), 60)
		id := e.activateJS(tok, slow, map[string]any{})
		select {
		case <-arrived:
		case <-time.After(20 * time.Second):
			t.Fatal("the fetch did not arrive")
		}
		start := time.Now()
		e.do("POST", "/api/v1/activations/"+id+"/cancel", nil, bearer(tok)).expect(t, 200)
		require.Equal(t, "Activation cancelled", e.await(tok, id).str("error"))
		require.Less(t, time.Since(start), 10*time.Second)
	})
}
