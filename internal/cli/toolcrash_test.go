package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestKill9ToolLoop: LLM agents with tools, killed with SIGKILL at every
// kind of point of their loop, resume after a restart on the same data and
// complete (DESIGN: Agents that act, "Durable"), on SQLite and on
// PostgreSQL. One server runs, each routed by its prompt:
//
//	A: between steps: a function tool's result recorded, the next step
//	   (its second LLM call) not, that call in flight
//	B: an http tool's call in flight
//	C: one answer's two http calls, the first's result recorded, the second in flight
//	D: waiting for a person's approval of an http call
//	E: a function tool in flight (the function's own request hangs)
//	F: an agent tool in flight (the child's LLM call hangs)
//
// After the kill and the restart: no recorded LLM answer is asked for
// again (one request per run and history, two for the one in flight), no
// recorded tool result runs again, an unrecorded call runs again under the
// same idempotency key (Idempotency-Key; ctx.execution.idempotency_key),
// the agent tool has one child, and D, approved after the restart, runs
// its call once and completes.
func TestKill9ToolLoop(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		killToolLoops(t)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		killToolLoops(t, "AP_DATABASE_URL="+testdb.URL(t, store.Postgres))
	})
}

// toolWorld is what the runs talk to: the fake LLM and the http target
// (also fetched by the function tool), which count every request and hold
// the ones the kill must find in flight until it has happened.
type toolWorld struct {
	llm    *llmtest.Server
	target string

	mu      sync.Mutex
	killed  bool
	asked   map[string]int       // "<prompt>/<tool turns>" → LLM requests
	keys    map[string][]string  // who → the idempotency key of each request to the target
	reached map[string]time.Time // when each hold was reached
}

// holds are the points the kill must find in flight.
var holds = []string{"llm:A/1", "http:B", "http:C2", "http:E", "llm:child/0"}

func newToolWorld(t *testing.T) *toolWorld {
	w := &toolWorld{llm: llmtest.NewOpenAI(t), asked: map[string]int{}, keys: map[string][]string{}, reached: map[string]time.Time{}}
	w.llm.SetScript(w.answer)
	target := egresstest.NewServer(t, http.HandlerFunc(w.serve))
	w.target = target.URL
	return w
}

// hold records that point was reached and, before the kill, holds the
// request until its client goes away (the killed server). It says whether
// it held.
func (w *toolWorld) hold(ctx context.Context, point string) bool {
	w.mu.Lock()
	killed := w.killed
	if _, ok := w.reached[point]; !ok {
		w.reached[point] = time.Now()
	}
	w.mu.Unlock()
	if killed {
		return false
	}
	<-ctx.Done()
	return true
}

// allReached says whether every hold is reached, and since when the
// first one is.
func (w *toolWorld) allReached() (bool, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	first := time.Now()
	for _, h := range holds {
		at, ok := w.reached[h]
		if !ok {
			return false, time.Time{}
		}
		if at.Before(first) {
			first = at
		}
	}
	return true, first
}

func (w *toolWorld) kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.killed = true
}

// answer is the LLM: by the run's prompt and how many tool turns it has
// had so far.
func (w *toolWorld) answer(ctx context.Context, rec llmtest.Recorded) (llmtest.Reply, bool) {
	if len(rec.Messages) == 0 {
		return llmtest.Reply{}, false
	}
	turns := 0
	for _, m := range rec.Messages {
		if m.Role == llm.RoleTool {
			turns++
		}
	}
	step := fmt.Sprintf("%s/%d", rec.Messages[0].Content, turns)
	w.mu.Lock()
	w.asked[step]++
	w.mu.Unlock()
	call := func(id, name, args string) llm.ToolCall { return llm.ToolCall{ID: id, Name: name, Arguments: args} }
	calls := map[string][]llm.ToolCall{
		"A/0": {call("a1", "note", `{"who":"A"}`)},
		"B/0": {call("b1", "slow", `{"who":"B"}`)},
		"C/0": {call("c1", "slow", `{"who":"C1"}`), call("c2", "slow", `{"who":"C2"}`)},
		"D/0": {call("d1", "guarded", `{"who":"D"}`)},
		"E/0": {call("e1", "probe", `{"who":"E"}`)},
		"F/0": {call("f1", "helper", `{"prompt":"child"}`)},
	}[step]
	// Every answer reports cache reads too, which the ledger keeps.
	if calls != nil {
		return llmtest.Reply{ToolCalls: calls, CacheRead: 5}, true
	}
	if slices.Contains(holds, "llm:"+step) && w.hold(ctx, "llm:"+step) {
		return llmtest.Reply{}, false
	}
	return llmtest.Reply{Text: "done " + step, CacheRead: 5}, true
}

// serve is the http tools' target and the function's: it counts each
// request under its idempotency key and holds those of B, C2 and E.
func (w *toolWorld) serve(rw http.ResponseWriter, r *http.Request) {
	var body struct {
		Who string `json:"who"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	w.mu.Lock()
	w.keys[body.Who] = append(w.keys[body.Who], r.Header.Get("Idempotency-Key"))
	w.mu.Unlock()
	if slices.Contains(holds, "http:"+body.Who) && w.hold(r.Context(), "http:"+body.Who) {
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(rw, `{"ok":%q}`, body.Who)
}

// setupToolLoops imports the app: the agent "looper" with an http tool
// (slow), one behind approval (guarded), two function tools (note, and
// probe, which posts to the target with its idempotency key) and an agent
// tool (helper, an LLM agent without tools).
func setupToolLoops(t *testing.T, base string, w *toolWorld) (*platform, string) {
	llmConfig := map[string]any{"provider_id": "openai", "model": "gpt-test"}
	p := setupPlatformWith(t, base, llmConfig)
	looper := map[string]any{"provider_id": "openai", "model": "gpt-test", "tools": []any{
		map[string]any{"type": "http", "name": "slow", "method": "POST", "url": w.target + "/slow", "parameters": map[string]any{"type": "object"}},
		map[string]any{"type": "http", "name": "guarded", "method": "POST", "url": w.target + "/guarded", "approval": "always", "parameters": map[string]any{"type": "object"}},
		map[string]any{"type": "function", "function": "note"},
		map[string]any{"type": "function", "function": "probe"},
		map[string]any{"type": "agent", "agent": "helper"},
	}}
	var app struct {
		AppID string `json:"app_id"`
	}
	p.call("POST", "/api/v1/apps/import-manifest", p.key, map[string]any{"name": "Tools", "slug": "tools", "version": "1.0.0",
		"functions": []any{
			map[string]any{"name": "note", "code": `async function run(input) { return {noted: input.who}; }`},
			map[string]any{"name": "probe", "timeout_seconds": 60, "code": `async function run(input, ctx) {
				const r = await ctx.http.fetch("` + w.target + `/probe", {method: "POST", body: JSON.stringify({who: input.who}),
					headers: {"Idempotency-Key": ctx.execution.idempotency_key}});
				return {status: r.status, body: r.body};
			}`},
		},
		"agents": []any{
			map[string]any{"name": "helper", "agent_type_id": "llm", "version": "1.0.0", "agent_config": llmConfig},
			map[string]any{"name": "looper", "agent_type_id": "llm", "version": "1.0.0", "agent_config": looper},
		},
	}, &app)
	var agents struct {
		Agents []struct {
			ID   string `json:"agent_id"`
			Name string `json:"name"`
		} `json:"agents"`
	}
	p.call("GET", "/api/v1/apps/"+app.AppID+"/agents", p.key, nil, &agents)
	for _, a := range agents.Agents {
		if a.Name == "looper" {
			p.agent = a.ID
		}
	}
	require.NotEmpty(t, p.agent)
	return p, app.AppID
}

// toolRun is an activation as its tool loop's checks read it.
type toolRun struct {
	ID      string          `json:"activation_id"`
	Status  string          `json:"status"`
	Error   *string         `json:"error"`
	Context json.RawMessage `json:"context"`
	Output  json.RawMessage `json:"output_data"`
	Waiting *struct {
		WaitpointID string `json:"waitpoint_id"`
		Kind        string `json:"kind"`
	} `json:"waiting"`
}

func (p *platform) toolRun(id string) toolRun {
	var a toolRun
	p.call("GET", "/api/v1/activations/"+id, p.key, nil, &a)
	return a
}

type runStep struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	ToolCallID string `json:"tool_call_id"`
	Status     string `json:"status"`
}

func (p *platform) steps(id string) []runStep {
	var s struct {
		Steps []runStep `json:"steps"`
	}
	p.call("GET", "/api/v1/activations/"+id+"/steps?limit=100", p.key, nil, &s)
	return s.Steps
}

// stepDone says whether the run's step of call has completed.
func (p *platform) stepDone(id, call string) bool {
	for _, s := range p.steps(id) {
		if s.ToolCallID == call && s.Kind == "tool" {
			return s.Status == "completed"
		}
	}
	return false
}

func killToolLoops(t *testing.T, extra ...string) {
	w := newToolWorld(t)
	env := environ(t.TempDir(), append([]string{"AP_OPENAI_BASE_URL=" + w.llm.URL, "AP_OPENAI_API_KEY=sk-test",
		"AP_EGRESS_ALLOW=" + egresstest.Allow, "AP_MAX_INFLIGHT=16", "AP_RATE_LIMIT=1000000"}, extra...)...)
	first := startServe(t, env)
	p, appID := setupToolLoops(t, first.URL, w)

	runs := map[string]string{}
	for _, who := range []string{"A", "B", "C", "D", "E", "F"} {
		var a struct {
			ID string `json:"activation_id"`
		}
		p.call("POST", "/api/v1/agents/"+p.agent+"/activate", p.key, map[string]any{"input_data": map[string]any{"prompt": who}}, &a)
		runs[who] = a.ID
	}
	// The http tools and the function's fetch give up after 10 s: the kill
	// comes well before, as soon as every run is where it should be.
	deadline := time.Now().Add(60 * time.Second)
	for {
		all, since := w.allReached()
		if all && p.stepDone(runs["C"], "c1") && p.toolRun(runs["D"]).Waiting != nil {
			first.signal(syscall.SIGKILL)
			require.Less(t, time.Since(since), 9*time.Second, "too slow: a held call may have timed out before the kill")
			break
		}
		require.True(t, time.Now().Before(deadline), "the runs did not reach their points: %v, C: %+v, D: %+v",
			w.reached, p.steps(runs["C"]), p.toolRun(runs["D"]))
		time.Sleep(50 * time.Millisecond) //nolint:forbidigo // polling with a deadline
	}
	first.wait(stopTimeout)
	w.kill()

	second := startServe(t, env)
	t.Cleanup(second.stop)
	p.base = second.URL
	d := p.toolRun(runs["D"])
	require.Equal(t, "running", d.Status, "D waits through the restart")
	require.NotNil(t, d.Waiting, "D waits through the restart")
	require.Equal(t, "approval", d.Waiting.Kind)
	p.call("POST", "/api/v1/activations/"+runs["D"]+"/waitpoints/"+d.Waiting.WaitpointID, p.key,
		map[string]any{"decisions": []any{map[string]any{"tool_call_id": "d1", "type": "approve"}}}, nil)

	// A killed worker's runs are taken over once it is known dead: at once
	// by the restarted process on SQLite, after 30 s silent on PostgreSQL.
	ids := make([]string, 0, len(runs))
	for _, id := range runs {
		ids = append(ids, id)
	}
	states := p.awaitAllEnded(ids, 3*time.Minute)
	for who, id := range runs {
		require.Equal(t, "completed", states[id].Status, "%s: %v", who, states[id].Error)
		var out struct {
			Response string `json:"response"`
		}
		require.NoError(t, json.Unmarshal(p.toolRun(id).Output, &out))
		require.Equal(t, "done "+who+"/1", out.Response, who)
	}

	w.mu.Lock()
	asked, keys := w.asked, w.keys
	w.mu.Unlock()
	t.Logf("LLM requests per run and tool turns: %v", asked)
	t.Logf("target requests by idempotency key: %v", keys)
	// Every history asked for once; the one in flight at the kill twice
	// (the killed request, then the one after the restart).
	want := map[string]int{"A/0": 1, "A/1": 2, "B/0": 1, "B/1": 1, "C/0": 1, "C/1": 1, "D/0": 1, "D/1": 1,
		"E/0": 1, "E/1": 1, "F/0": 1, "F/1": 1, "child/0": 2}
	require.Equal(t, want, asked, "no recorded LLM answer is asked for again")
	key := func(who, call string) string { return runs[who] + ":" + call }
	require.Equal(t, map[string][]string{
		"B":  {key("B", "b1"), key("B", "b1")}, // in flight: again, same key
		"C1": {key("C", "c1")},                 // recorded: not again
		"C2": {key("C", "c2"), key("C", "c2")}, // in flight: again, same key
		"D":  {key("D", "d1")},                 // approved after the restart: once
		"E":  {key("E", "e1"), key("E", "e1")}, // the function, in flight: again, same key
	}, keys, "recorded calls never run again; unrecorded ones again under their key")

	// One execution recorded per function tool call (A's note, E's probe).
	var history struct {
		Total int `json:"total_count"`
	}
	p.call("GET", "/api/v1/apps/"+appID+"/functions/history?limit=1", p.key, nil, &history)
	require.Equal(t, 2, history.Total, "one execution per function tool call")

	// F's call ran again after the restart and found its child: one child.
	var children []string
	for id := range p.states() {
		var c struct {
			Parent string `json:"parent_activation_id"`
		}
		_ = json.Unmarshal(p.toolRun(id).Context, &c)
		if c.Parent != "" {
			require.Equal(t, runs["F"], c.Parent)
			children = append(children, id)
		}
	}
	require.Len(t, children, 1, "at most one child activation per agent tool call")
	require.Equal(t, "completed", p.toolRun(children[0]).Status)

	// C's record: the answer, both calls completed, the final answer.
	var kinds []string
	for _, s := range p.steps(runs["C"]) {
		kinds = append(kinds, s.Kind+":"+s.ToolCallID+":"+s.Status)
	}
	require.Len(t, kinds, 4, "C's steps")
	sort.Strings(kinds[1:3])
	require.Equal(t, "llm::completed,tool:c1:completed,tool:c2:completed,llm::completed", strings.Join(kinds, ","))

	// The ledger: A's second answer, lost with the kill and asked for
	// again, and the child's, are each recorded once; every recorded step
	// has its record.
	sum := checkLedger(t, openLedger(t, env), p, append(ids, children[0]))
	t.Logf("the ledger's tokens (input, output, cache read, cache write): %v", sum)
}
