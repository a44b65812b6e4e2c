package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/executor/runtimes"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// The tool loop against a hostile model and hostile tools (issue 19):
// every test runs a real platform whose agents' LLM is a fake behind a
// user provider, and tools that are real functions and HTTP servers.

// fakeEnv is a platform, one user, and the fake LLM the user's provider
// points at.
type fakeEnv struct {
	*env
	tok      string
	fake     *llmtest.Server
	provider string
	apps     int
}

func newFakeEnv(t *testing.T, d store.Dialect, providerType string) *fakeEnv {
	t.Helper()
	e := newEnv(t, d, nil)
	tok := e.signup("hostile@example.com")
	fake := llmtest.NewOpenAI(t)
	if providerType == llm.TypeAnthropic {
		fake = llmtest.NewAnthropic(t)
	}
	pid := e.do("POST", providersPath, map[string]any{"name": "fake", "provider_type": providerType,
		"base_url": fake.URL, "api_key": "sk-test", "models": []string{"m"}}, bearer(tok)).expect(t, 201).str("id")
	return &fakeEnv{env: e, tok: tok, fake: fake, provider: pid}
}

// hostileFunctions are the functions of every test app: lookup answers,
// big answers 300 KiB, boom throws, spin never ends (its own timeout is
// long: what stops it must be the run's).
var hostileFunctions = []map[string]any{
	{"name": "lookup", "timeout_seconds": 5,
		"input_schema": map[string]any{"type": "object", "required": []string{"email"},
			"properties": map[string]any{"email": map[string]any{"type": "string"}}},
		"code": `async function run(input) { return {email: input.email}; }`},
	{"name": "big", "timeout_seconds": 5, "code": `async function run() { return "x".repeat(300 * 1024); }`},
	{"name": "boom", "timeout_seconds": 5, "code": `async function run() { throw new Error("the boom function broke"); }`},
	{"name": "spin", "timeout_seconds": 60, "code": `async function run() { for (;;) {} }`},
}

// agent imports an app whose LLM agent "clerk", on the fake, has tools and
// the extra agent_config (and timeout_seconds when extra has it); more are
// further agents of the app. It returns the app's and clerk's ids.
func (f *fakeEnv) agent(tools []map[string]any, extra map[string]any, more ...map[string]any) (appID, clerkID string) {
	f.t.Helper()
	cfg := map[string]any{"provider_id": f.provider, "model": "m", "tools": tools}
	timeout := 30
	for k, v := range extra {
		if k == "timeout_seconds" {
			timeout = v.(int)
			continue
		}
		cfg[k] = v
	}
	f.apps++
	agents := append([]map[string]any{{"name": "clerk", "agent_type_id": "llm", "timeout_seconds": timeout, "agent_config": cfg}}, more...)
	appID = f.importManifest(f.tok, map[string]any{"name": "Hostile", "slug": fmt.Sprintf("hostile-%d", f.apps), "version": "1.0.0",
		"functions": hostileFunctions, "agents": agents}).expect(f.t, 201).str("app_id")
	return appID, f.agentNamed(f.tok, appID, "clerk")
}

// start activates agent with prompt and returns the activation's id.
func (f *fakeEnv) start(agentID, prompt string) string {
	f.t.Helper()
	return f.do("POST", "/api/v1/activations", map[string]any{"agent_id": agentID, "input_data": map[string]any{"prompt": prompt}},
		bearer(f.tok)).expect(f.t, 201).str("activation_id")
}

// lastResults are the tool results of the last request the fake got.
func (f *fakeEnv) lastResults() []llm.ToolResult {
	f.t.Helper()
	reqs := f.fake.Requests()
	msgs := reqs[len(reqs)-1].Messages
	last := msgs[len(msgs)-1]
	require.Equal(f.t, llm.RoleTool, last.Role)
	return last.Results
}

// call is a tool call of the model.
func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: args}
}

// TestToolLoopStepLimit: a model that calls tools forever fails its run at
// max_steps after exactly that many LLM calls; with on_step_limit
// "answer" the last call is sent with tool_choice none and its answer
// completes the run, even when the model calls tools anyway.
func TestToolLoopStepLimit(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		f := newFakeEnv(t, d, llm.TypeOpenAICompatible)
		f.fake.SetScript(func(_ context.Context, rec llmtest.Recorded) (llmtest.Reply, bool) {
			r := llmtest.Reply{ToolCalls: []llm.ToolCall{call(fmt.Sprintf("c%d", len(rec.Messages)), "lookup", `{"email":"a@example.com"}`)}}
			if rec.ToolChoice == "none" {
				r.Text = "gave up"
			}
			return r, true
		})
		tools := []map[string]any{{"type": "function", "function": "lookup"}}

		_, failing := f.agent(tools, map[string]any{"max_steps": 3})
		done := f.await(f.tok, f.start(failing, "loop"))
		require.Equal(t, "failed", done.str("status"))
		require.Equal(t, "Step limit of 3 steps reached", done.str("error"))
		require.Equal(t, 3, f.fake.Calls())

		_, answering := f.agent(tools, map[string]any{"max_steps": 3, "on_step_limit": "answer"})
		done = f.await(f.tok, f.start(answering, "loop"))
		require.Equal(t, "completed", done.str("status"), done.str("error"))
		out := done.JSON["output_data"].(map[string]any)
		require.Equal(t, "step_limit", out["finish_reason"])
		require.Equal(t, "gave up", out["response"])
		reqs := f.fake.Requests()
		require.Len(t, reqs, 6, "3 LLM calls in all")
		require.Equal(t, "none", reqs[5].ToolChoice)
		require.NotEqual(t, "none", reqs[4].ToolChoice)
	})
}

// concurrency is an HTTP tool's server that echoes the body and counts
// requests and the most in flight at once. A request waits (up to hold)
// for limit requests to be in flight, so a limit that is allowed is
// reached, whatever the scheduler does.
type concurrency struct {
	srv      *httptest.Server
	mu       sync.Mutex
	inFlight int
	most     int
	total    int
	full     chan struct{}
}

func newConcurrency(t *testing.T, limit int, hold time.Duration) *concurrency {
	c := &concurrency{full: make(chan struct{})}
	c.srv = egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.inFlight++
		c.total++
		c.most = max(c.most, c.inFlight)
		if c.inFlight == limit {
			select {
			case <-c.full:
			default:
				close(c.full)
			}
		}
		c.mu.Unlock()
		timer := time.NewTimer(hold)
		select {
		case <-c.full:
		case <-timer.C:
		case <-r.Context().Done():
		}
		timer.Stop()
		c.mu.Lock()
		c.inFlight--
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	return c
}

func (c *concurrency) counts() (most, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.most, c.total
}

// TestToolLoopTooManyCalls: of 1,000 calls in one answer 32 run, at most
// 4 at once; the rest get the error result; every call has its result in
// the next request, in call order. Without parallel_tool_calls they run
// one at a time.
//
// The flood costs ~2 s of CPU under the race detector, and CI runs it
// beside the other packages' tests on 2 cores: starved that way (1/15 of
// a core) it took over 20 s, and a call could wait more than 5 s for the
// fourth to come. Its deadlines allow for that; a run that never gets 4
// calls in flight still fails (at the deadline, with the counts).
func TestToolLoopTooManyCalls(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		f := newFakeEnv(t, d, llm.TypeOpenAICompatible)
		srv := newConcurrency(t, 4, 30*time.Second)
		tools := []map[string]any{{"type": "http", "name": "ping", "method": "POST", "url": srv.srv.URL + "/ping",
			"parameters": map[string]any{"type": "object"}}}
		calls := func(n int) []llm.ToolCall {
			out := make([]llm.ToolCall, n)
			for i := range out {
				out[i] = call(fmt.Sprintf("call_%04d", i), "ping", fmt.Sprintf(`{"n":%d}`, i))
			}
			return out
		}

		_, parallel := f.agent(tools, nil)
		f.fake.Queue(llmtest.Reply{ToolCalls: calls(1000)}, llmtest.Reply{Text: "done"})
		id := f.start(parallel, "flood")
		t.Cleanup(func() {
			if t.Failed() {
				most, total := srv.counts()
				t.Logf("HTTP tool calls: %d in all, at most %d at once", total, most)
			}
		})
		done := f.awaitWithin(f.tok, id, 2*time.Minute)
		require.Equal(t, "completed", done.str("status"), done.str("error"))
		require.EqualValues(t, 1002, done.JSON["output_data"].(map[string]any)["steps"])
		most, total := srv.counts()
		require.Equal(t, 32, total)
		require.Equal(t, 4, most)
		results := f.lastResults()
		require.Len(t, results, 1000)
		for i, r := range results {
			require.Equal(t, fmt.Sprintf("call_%04d", i), r.CallID, "in call order")
			if i < 32 {
				require.Contains(t, r.Content, fmt.Sprintf(`{"n":%d}`, i))
			} else {
				require.Equal(t, "Too many tool calls in one answer (32)", r.Content)
			}
		}
		st := list(f.do("GET", "/api/v1/activations/"+id+"/steps?offset=40&limit=1", nil, bearer(f.tok)).expect(t, 200), "steps")
		require.Equal(t, "failed", st[0]["status"])
		require.Equal(t, "Too many tool calls in one answer (32)", st[0]["error"])

		// One at a time: nobody waits for a second request (each is held
		// 200 ms for company that never comes).
		one := newConcurrency(t, 2, 200*time.Millisecond)
		_, serial := f.agent([]map[string]any{{"type": "http", "name": "ping", "method": "POST", "url": one.srv.URL + "/ping"}},
			map[string]any{"parallel_tool_calls": false})
		f.fake.Queue(llmtest.Reply{ToolCalls: calls(4)}, llmtest.Reply{Text: "done"})
		done = f.await(f.tok, f.start(serial, "one by one"))
		require.Equal(t, "completed", done.str("status"), done.str("error"))
		most, total = one.counts()
		require.Equal(t, 4, total)
		require.Equal(t, 1, most)
		for i, r := range f.lastResults() {
			require.Equal(t, fmt.Sprintf("call_%04d", i), r.CallID)
			require.Contains(t, r.Content, fmt.Sprintf(`{"n":%d}`, i))
		}
	})
}

// TestToolLoopCapsAHugeResult: a function's and an HTTP tool's result over
// 256 KiB reach the model capped with the truncation mark, and their step
// keeps the same capped result.
func TestToolLoopCapsAHugeResult(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		f := newFakeEnv(t, d, llm.TypeOpenAICompatible)
		huge := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, strings.Repeat("y", 400<<10))
		}))
		_, clerk := f.agent([]map[string]any{{"type": "function", "function": "big"},
			{"type": "http", "name": "page", "method": "GET", "url": huge.URL}}, nil)
		f.fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", "big", `{}`), call("c2", "page", `{}`)}}, llmtest.Reply{Text: "ok"})
		id := f.start(clerk, "big")
		done := f.await(f.tok, id)
		require.Equal(t, "completed", done.str("status"), done.str("error"))

		results := f.lastResults()
		require.Len(t, results, 2)
		st := steps(f.env, f.tok, id)
		require.Equal(t, []string{"llm:completed", "tool:completed", "tool:completed", "llm:completed"}, kinds(st))
		for i, r := range results {
			require.True(t, strings.HasSuffix(r.Content, "…[truncated]"), "result %d ends %q", i, r.Content[max(0, len(r.Content)-20):])
			require.Len(t, r.Content, runtimes.MaxResultBytes+len("…[truncated]"))
			require.Equal(t, r.Content, st[1+i]["output"], "the step keeps what the model got")
		}
	})
}

// TestHTTPToolEgress: a literal private address (and localhost) is
// refused when the agent is saved, naming the field; a host name that
// resolves to one is refused when dialled: the call's error result says
// so, the server is never reached, and the run goes on.
func TestHTTPToolEgress(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		f := newFakeEnv(t, d, llm.TypeOpenAICompatible)
		for _, u := range []string{"http://10.0.0.1/x", "http://127.0.0.1:8080/", "http://[::1]/", "http://localhost/"} {
			r := f.importManifest(f.tok, map[string]any{"name": "Private", "slug": "private", "version": "1.0.0",
				"agents": []map[string]any{{"name": "clerk", "agent_type_id": "llm", "agent_config": map[string]any{
					"provider_id": f.provider, "model": "m", "tools": []map[string]any{{"type": "http", "name": "in", "method": "GET", "url": u}}}}}})
			r.expect(t, 400)
			require.Contains(t, string(r.Body), "agent_config.tools[0].url", u)
		}

		// A server on 127.0.0.1 that must never be reached.
		var reached atomic.Bool
		inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached.Store(true) }))
		t.Cleanup(inside.Close)
		_, port, err := net.SplitHostPort(inside.Listener.Addr().String())
		require.NoError(t, err)
		// Saving refuses localhost as the loopback it names (above), and
		// leaves other names to the dial, where their DNS answer is known.
		// A name whose answer is private (in tests only localhost resolves
		// without a network) is an agent stored without the save's check.
		appID, _ := f.agent(nil, nil)
		clerk := f.storedAgent(appID, map[string]any{"provider_id": f.provider, "model": "m",
			"tools": []map[string]any{{"type": "http", "name": "in", "method": "GET", "url": "http://localhost:" + port + "/"}}})
		f.fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", "in", `{}`)}}, llmtest.Reply{Text: "ok"})
		id := f.start(clerk, "inside")
		done := f.await(f.tok, id)
		require.Equal(t, "completed", done.str("status"), done.str("error"))
		r := f.lastResults()[0]
		require.Contains(t, r.Content, "AP_EGRESS_ALLOW", "the refusal says how to allow it: %s", r.Content)
		require.False(t, reached.Load())
		require.Equal(t, "failed", steps(f.env, f.tok, id)[1]["status"])
	})
}

// TestToolLoopBadCallsAreResults: an unknown tool, arguments that are not
// JSON or fail the schema, a function that throws and an HTTP 500 are
// each their call's error result; the run completes.
func TestToolLoopBadCallsAreResults(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		f := newFakeEnv(t, d, llm.TypeOpenAICompatible)
		broken := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "database on fire", http.StatusInternalServerError)
		}))
		_, clerk := f.agent([]map[string]any{{"type": "function", "function": "lookup"}, {"type": "function", "function": "boom"},
			{"type": "http", "name": "broken", "method": "POST", "url": broken.URL}}, nil)
		f.fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", "nope", `{}`), call("c2", "lookup", `{"mail":"x"}`),
			call("c3", "lookup", `not json`), call("c4", "boom", `{}`), call("c5", "broken", `{}`), call("c6", "lookup", `{"email":"a@example.com"}`)}},
			llmtest.Reply{Text: "ok"})
		id := f.start(clerk, "bad")
		done := f.await(f.tok, id)
		require.Equal(t, "completed", done.str("status"), done.str("error"))
		want := []string{"Unknown tool: nope", "Invalid arguments", "Invalid arguments: not JSON", "the boom function broke", "answered HTTP 500: database on fire"}
		results := f.lastResults()
		require.Len(t, results, 6)
		st := steps(f.env, f.tok, id)
		for i, w := range want {
			require.Contains(t, results[i].Content, w, "call %d", i)
			require.Equal(t, "failed", st[1+i]["status"])
			require.Contains(t, st[1+i]["error"], w)
		}
		require.Contains(t, results[5].Content, `"email":"a@example.com"`, "the good call among them ran")
		require.Equal(t, "completed", st[6]["status"])
	})
}

// TestCancelAndTimeoutStopTheCalls: cancel aborts an HTTP tool's request
// in flight; the agent's timeout interrupts a function stuck in a loop
// (its VM stops); cancelling a run cancels the child activation an agent
// tool runs, and the child's LLM call.
func TestCancelAndTimeoutStopTheCalls(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		f := newFakeEnv(t, d, llm.TypeOpenAICompatible)
		arrived, aborted := make(chan struct{}), make(chan struct{})
		var once sync.Once
		hang := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			once.Do(func() { close(arrived) })
			<-r.Context().Done()
			close(aborted)
		}))
		_, clerk := f.agent([]map[string]any{{"type": "http", "name": "hang", "method": "GET", "url": hang.URL}}, nil)
		f.fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", "hang", `{}`)}})
		id := f.start(clerk, "hang")
		waitClosed(t, arrived, "the tool's request")
		c := f.do("POST", "/api/v1/activations/"+id+"/cancel", nil, bearer(f.tok)).expect(t, 200)
		require.Equal(t, "Activation cancelled", c.str("error"))
		waitClosed(t, aborted, "the request's abort")
		require.Equal(t, "failed", f.await(f.tok, id).str("status"))

		_, spinner := f.agent([]map[string]any{{"type": "function", "function": "spin"}}, map[string]any{"timeout_seconds": 2})
		f.fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", "spin", `{}`)}})
		id = f.start(spinner, "spin")
		require.Eventually(t, func() bool { return toolsInVM() > 0 }, 10*time.Second, 10*time.Millisecond, "the function runs")
		done := f.await(f.tok, id)
		require.Equal(t, "failed", done.str("status"))
		require.Equal(t, "Activation timed out after 2 s", done.str("error"))
		// Its VM stopped: no goroutine of this process runs a tool's
		// JavaScript any more (other tests' calls come and go).
		require.Eventually(t, func() bool { return toolsInVM() == 0 }, 10*time.Second, 10*time.Millisecond, "the VM still runs")

		// The child's LLM hangs until its caller gives up.
		gaveUp := make(chan struct{})
		f.fake.SetScript(func(ctx context.Context, rec llmtest.Recorded) (llmtest.Reply, bool) {
			if rec.Messages[0].Content == "slow" {
				<-ctx.Done()
				close(gaveUp)
				return llmtest.Reply{}, false
			}
			return llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", "helper", `{"prompt":"slow"}`)}}, true
		})
		_, parent := f.agent([]map[string]any{{"type": "agent", "agent": "helper"}}, nil,
			map[string]any{"name": "helper", "agent_type_id": "llm", "timeout_seconds": 60, "agent_config": map[string]any{"provider_id": f.provider, "model": "m"}})
		before := f.fake.Calls()
		id = f.start(parent, "delegate")
		f.fake.WaitCalls(t, before+2)
		var child string
		for _, a := range list(f.do("GET", "/api/v1/activations", nil, bearer(f.tok)).expect(t, 200), "activations") {
			if ctx, _ := a["context"].(map[string]any); ctx["parent_activation_id"] == id {
				child = a["activation_id"].(string)
			}
		}
		require.NotEmpty(t, child, "the child is listed with its parent")
		f.do("POST", "/api/v1/activations/"+id+"/cancel", nil, bearer(f.tok)).expect(t, 200)
		done = f.await(f.tok, child)
		require.Equal(t, "failed", done.str("status"))
		require.Equal(t, "Activation cancelled", done.str("error"))
		waitClosed(t, gaveUp, "the child's LLM call's abort")
	})
}

// storedAgent stores an LLM agent of app with cfg as it is, without the
// checks of a save.
func (f *fakeEnv) storedAgent(appID string, cfg map[string]any) string {
	f.t.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(f.t, err)
	now := store.Now()
	a := &store.Agent{ID: uuid.NewString(), AppID: appID, UserID: f.do("GET", "/api/v1/users/me", nil, bearer(f.tok)).expect(f.t, 200).str("id"),
		Name: "stored", AgentTypeID: "llm", Version: "1.0.0", Status: "active", TimeoutSeconds: 30, Config: raw, CreatedAt: now, UpdatedAt: now}
	require.NoError(f.t, f.srv.Store.AgentCreate(context.Background(), a))
	return a.ID
}

// waitClosed waits (10 s at most) for c to be closed.
func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not come", what)
	}
}

// toolsInVM is how many goroutines of this process (the platform under
// test runs in it) are in a tool call's JavaScript VM.
func toolsInVM() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "runtimes.(*loop).call(") && strings.Contains(g, "sandbox.(*run).exec(") {
			count++
		}
	}
	return count
}

// TestToolLoopLiveEvents: the WebSocket carries an activation_step event
// for each ended step and activation_waiting for an approval; the SSE
// stream sends them as step and waiting.
func TestToolLoopLiveEvents(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		f := newFakeEnv(t, d, llm.TypeOpenAICompatible)
		_, clerk := f.agent([]map[string]any{{"type": "function", "function": "lookup", "approval": "always"}}, nil)
		approve := func(id string, w map[string]any) {
			f.do("POST", "/api/v1/activations/"+id+"/waitpoints/"+w["waitpoint_id"].(string), map[string]any{"decisions": []any{
				map[string]any{"tool_call_id": "c1", "type": "approve"}}}, bearer(f.tok)).expect(t, 202)
		}
		script := func() {
			f.fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", "lookup", `{"email":"a@example.com"}`)}}, llmtest.Reply{Text: "ok"})
		}

		ws, _ := f.socket("", http.Header{"Authorization": {"Bearer " + f.tok}})
		script()
		id := f.start(clerk, "approve me")
		var got []string
		for {
			ev := readEvent(t, ws)
			if ev["activation_id"] != id {
				continue
			}
			switch ev["type"] {
			case "activation_step":
				s := ev["step"].(map[string]any)
				got = append(got, fmt.Sprintf("%v:%v:%v", s["index"], s["kind"], s["status"]))
			case "activation_waiting":
				w := ev["waiting"].(map[string]any)
				require.Equal(t, "approval", w["kind"])
				got = append(got, "waiting")
				approve(id, w)
			}
			if ev["type"] == "activation_completed" {
				break
			}
		}
		// In the order they end: the wait when it is answered, then the
		// call it approved.
		require.Equal(t, []string{"0:llm:completed", "waiting", "2:wait:completed", "1:tool:completed", "3:llm:completed"}, got)

		script()
		s := f.openSSE("POST", "/api/v1/activations", map[string]any{"agent_id": clerk, "input_data": map[string]any{"prompt": "again"}},
			bearer(f.tok), header("Accept", "text/event-stream"))
		got = nil
		var streamed string
		t.Cleanup(func() {
			// Where the run was when the stream fell silent (it did once,
			// and could not be made to again).
			if t.Failed() && streamed != "" {
				a := f.do("GET", "/api/v1/activations/"+streamed, nil, bearer(f.tok))
				st := f.do("GET", "/api/v1/activations/"+streamed+"/steps", nil, bearer(f.tok))
				t.Logf("streamed events %v; activation %s; steps %s", got, a.Body, st.Body)
			}
		})
		for {
			ev, ok := s.next()
			require.True(t, ok, "the stream ended before the activation: %v", got)
			switch ev.name {
			case "step":
				got = append(got, fmt.Sprintf("%v:%v:%v", ev.data["index"], ev.data["kind"], ev.data["status"]))
			case "waiting":
				got = append(got, "waiting")
				streamed = f.waitingOf(ev.data)
				approve(streamed, ev.data)
			}
			if ev.name == "activation" {
				require.Equal(t, "completed", ev.data["status"])
				break
			}
		}
		require.Equal(t, []string{"0:llm:completed", "waiting", "2:wait:completed", "1:tool:completed", "3:llm:completed"}, got)
	})
}

// waitingOf is the activation a waiting is of: the one of the caller's
// that waits on its waitpoint.
func (f *fakeEnv) waitingOf(w map[string]any) string {
	f.t.Helper()
	for _, a := range list(f.do("GET", "/api/v1/activations?status=waiting", nil, bearer(f.tok)).expect(f.t, 200), "activations") {
		if aw, _ := a["waiting"].(map[string]any); aw != nil && aw["waitpoint_id"] == w["waitpoint_id"] {
			return a["activation_id"].(string)
		}
	}
	f.t.Fatalf("no activation waits on %v", w)
	return ""
}

// TestWaitpointOfAnotherApp: a key bound to another app answers a
// waitpoint 404, as if it were absent; a key bound to the app answers it.
func TestWaitpointOfAnotherApp(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		f := newFakeEnv(t, d, llm.TypeOpenAICompatible)
		appA, clerk := f.agent([]map[string]any{{"type": "client", "name": "pick"}}, nil)
		appB, _ := f.agent(nil, nil)
		f.fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", "pick", `{}`)}}, llmtest.Reply{Text: "ok"})
		id := f.start(clerk, "wait")
		w := f.waitFor(f.tok, id, func(r *resp) bool { return r.JSON["waiting"] != nil }).JSON["waiting"].(map[string]any)
		path := "/api/v1/activations/" + id + "/waitpoints/" + w["waitpoint_id"].(string)
		body := map[string]any{"results": []any{map[string]any{"tool_call_id": "c1", "output": "x"}}}
		keyB, _ := f.key(f.tok, map[string]any{"name": "b", "scopes": []string{"write:all"}, "app_id": appB})
		keyA, _ := f.key(f.tok, map[string]any{"name": "a", "scopes": []string{"write:all"}, "app_id": appA})
		f.do("POST", path, body, bearer(keyB)).expect(t, 404)
		f.do("GET", "/api/v1/activations/"+id+"/steps", nil, bearer(keyB)).expect(t, 404)
		f.do("POST", path, body, bearer(keyA)).expect(t, 202)
		require.Equal(t, "completed", f.await(f.tok, id).str("status"))
	})
}

// TestToolLoopAnthropic: two calls in one step through Anthropic; the fake
// refuses results split over messages, so a completed run proves they
// went back in one user message.
func TestToolLoopAnthropic(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		f := newFakeEnv(t, d, llm.TypeAnthropic)
		_, clerk := f.agent([]map[string]any{{"type": "function", "function": "lookup"}}, nil)
		f.fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{call("toolu_1", "lookup", `{"email":"a@example.com"}`),
			call("toolu_2", "lookup", `{"email":"b@example.com"}`)}}, llmtest.Reply{Text: "both"})
		done := f.await(f.tok, f.start(clerk, "two"))
		require.Equal(t, "completed", done.str("status"), done.str("error"))
		require.Equal(t, "both", done.JSON["output_data"].(map[string]any)["response"])
		reqs := f.fake.Requests()
		require.Len(t, reqs, 2)
		results := f.lastResults()
		sent := reqs[1].Sent
		require.Equal(t, llm.RoleUser, sent[len(sent)-1].Role)
		for _, r := range results {
			require.False(t, r.IsError, r.Content)
		}
		require.Len(t, results, 2)
		require.Contains(t, results[0].Content, "a@example.com")
		require.Contains(t, results[1].Content, "b@example.com")
	})
}

// A tool naming another user's agent or function, by id, is refused when
// the agent is saved, as if it did not exist.
func TestToolsOfAnotherUserAreRefused(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		mine, theirs := e.signup("mine@example.com"), e.signup("theirs@example.com")
		myApp := e.importManifest(mine, toolsManifest(nil, nil)).expect(t, 201).str("app_id")
		theirApp := e.importManifest(theirs, toolsManifest(nil, nil)).expect(t, 201).str("app_id")
		theirFn := list(e.do("GET", "/api/v1/functions?app_id="+theirApp, nil, bearer(theirs)).expect(t, 200), "functions")[0]["id"].(string)
		for _, c := range []struct {
			tool   map[string]any
			detail string
		}{
			{map[string]any{"type": "agent", "agent": e.agentNamed(theirs, theirApp, "clerk")}, "agent_config.tools[0].agent"},
			{map[string]any{"type": "function", "function": theirFn}, "agent_config.tools[0].function"},
		} {
			e.do("POST", "/api/v1/apps/"+myApp+"/agents", map[string]any{"name": "x", "agent_type_id": "llm",
				"agent_config": map[string]any{"provider_id": "echo", "model": "echo", "tools": []map[string]any{c.tool}}}, bearer(mine)).
				expectError(t, 400, "ValidationError", c.detail)
		}
	})
}

// A tool loop's output_data.usage is the sum of its LLM steps' usage.
func TestToolLoopUsageIsTheStepsSum(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		f := newFakeEnv(t, d, llm.TypeOpenAICompatible)
		f.fake.SetScript(func(_ context.Context, rec llmtest.Recorded) (llmtest.Reply, bool) {
			if len(rec.Messages) < 5 {
				return llmtest.Reply{ToolCalls: []llm.ToolCall{call(fmt.Sprintf("c%d", len(rec.Messages)), "lookup", `{"email":"a@example.com"}`)}}, true
			}
			return llmtest.Reply{Text: "done"}, true
		})
		_, clerk := f.agent([]map[string]any{{"type": "function", "function": "lookup"}}, nil)
		id := f.start(clerk, "go")
		done := f.await(f.tok, id)
		require.Equal(t, "completed", done.str("status"), done.str("error"))
		sum := map[string]float64{}
		llmSteps := 0
		for _, s := range steps(f.env, f.tok, id) {
			if s["kind"] != "llm" {
				require.Nil(t, s["usage"], "a %s step has no usage", s["kind"])
				continue
			}
			llmSteps++
			for k, v := range s["usage"].(map[string]any) {
				sum[k] += v.(float64)
			}
		}
		require.Equal(t, 3, llmSteps)
		usage := done.JSON["output_data"].(map[string]any)["usage"].(map[string]any)
		for _, k := range []string{"prompt_tokens", "completion_tokens", "total_tokens"} {
			require.Positive(t, sum[k], k)
			require.Equal(t, sum[k], usage[k], k)
		}
	})
}
