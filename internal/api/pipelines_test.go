package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/pipeline"
	"github.com/agentplatform/agentplatform/internal/server"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// pipelineApp imports an app whose functions and agents pipelines chain:
// shout (upper-cases text, adds one to n), boom (throws), echoer (a
// JavaScript agent answering what it got), llm (an LLM agent on the echo
// provider) and fails (a JavaScript agent that throws). extra adds agents.
func (e *env) pipelineApp(token string, extra ...map[string]any) string {
	e.t.Helper()
	fn := func(name, code string) map[string]any {
		return map[string]any{"name": name, "code": code, "input_schema": map[string]any{"type": "object"}, "timeout_seconds": 10}
	}
	js := func(name, code string) map[string]any {
		return map[string]any{"name": name, "agent_type_id": "custom", "version": "1.0.0", "timeout_seconds": 10,
			"agent_config": map[string]any{"runtime": "javascript", "code": code}}
	}
	agents := []any{
		js("echoer", `async function run(input, ctx) { return {got: input, seen: input.text}; }`),
		js("fails", `async function run(input) { throw new Error("agent says no to " + input.text); }`),
		map[string]any{"name": "llm", "agent_type_id": "llm", "version": "1.0.0", "timeout_seconds": 10,
			"agent_config": map[string]any{"provider_id": "echo", "model": "echo"}},
	}
	for _, a := range extra {
		agents = append(agents, a)
	}
	m := map[string]any{"name": "Chains", "slug": "chains-" + uuid.NewString()[:8], "version": "1.0.0",
		"functions": []any{
			fn("shout", `async function run(input) { return {text: input.text.toUpperCase(), n: input.n + 1, tags: [input.text, "x"]}; }`),
			fn("boom", `async function run(input) { throw new Error("boom: " + input.why); }`),
		},
		"agents": agents}
	return e.importManifest(token, m).expect(e.t, 201).str("app_id")
}

func (e *env) createPipeline(token, appID, name string, steps ...map[string]any) string {
	e.t.Helper()
	return e.do("POST", "/api/v1/pipelines", map[string]any{"app_id": appID, "name": name, "steps": steps}, bearer(token)).expect(e.t, 201).str("pipeline_id")
}

func step(id, typ, ref string, input map[string]any) map[string]any {
	return map[string]any{"id": id, "type": typ, "ref": ref, "input": input}
}

func (e *env) runPipeline(token, pipelineID string, input any) *resp {
	e.t.Helper()
	return e.do("POST", "/api/v1/pipelines/"+pipelineID+"/run", map[string]any{"input": input}, bearer(token)).expect(e.t, 201)
}

// awaitRun polls a run until it ends (or fails the test).
func (e *env) awaitRun(token, runID string) *resp {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := e.do("GET", "/api/v1/pipelines/runs/"+runID, nil, bearer(token)).expect(e.t, 200)
		if st := r.str("status"); st == "completed" || st == "failed" {
			return r
		}
		require.True(e.t, time.Now().Before(deadline), "run %s did not end: %s", runID, r.Body)
		time.Sleep(10 * time.Millisecond)
	}
}

func runSteps(r *resp) []map[string]any { return list(r, "steps") }

// TestPipelinesCRUD: pipelines are validated against their app (refs,
// types, ids, templates naming only earlier steps), named uniquely per
// app, listed in pages, and another user's are 404 everywhere.
func TestPipelinesCRUD(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("pipes@example.com")
		other := e.signup("other@example.com")
		appID := e.pipelineApp(tok)

		steps := []map[string]any{
			step("a", "function", "shout", map[string]any{"text": "{{input.text}}"}),
			step("b", "agent", "echoer", map[string]any{"text": "{{ steps.a.output.text }}"}),
		}
		r := e.do("POST", "/api/v1/pipelines", map[string]any{"app_id": appID, "name": "chain", "description": "d", "steps": steps}, bearer(tok)).expect(t, 201)
		id := r.str("pipeline_id")
		require.Equal(t, id, r.str("id"))
		require.Equal(t, appID, r.str("app_id"))
		require.Equal(t, "chain", r.str("name"))
		require.Equal(t, "d", r.str("description"))
		got := list(r, "steps")
		require.Len(t, got, 2)
		require.Equal(t, map[string]any{"id": "b", "type": "agent", "ref": "echoer", "input": map[string]any{"text": "{{ steps.a.output.text }}"}}, got[1])

		for _, tc := range []struct {
			name   string
			body   map[string]any
			detail string
		}{
			{"unknown ref", map[string]any{"app_id": appID, "name": "x", "steps": []any{step("a", "function", "nope", nil)}}, "steps[0].ref"},
			{"agent ref is not a function", map[string]any{"app_id": appID, "name": "x", "steps": []any{step("a", "function", "echoer", nil)}}, "steps[0].ref"},
			{"unknown type", map[string]any{"app_id": appID, "name": "x", "steps": []any{step("a", "webhook", "shout", nil)}}, "steps[0].type"},
			{"duplicate id", map[string]any{"app_id": appID, "name": "x", "steps": []any{step("a", "function", "shout", nil), step("a", "function", "shout", nil)}}, "steps[1].id"},
			{"later step", map[string]any{"app_id": appID, "name": "x", "steps": []any{
				step("a", "function", "shout", map[string]any{"text": "{{steps.b.output.text}}"}), step("b", "function", "shout", nil)}}, "steps[0].input"},
			{"unknown step", map[string]any{"app_id": appID, "name": "x", "steps": []any{
				step("a", "function", "shout", nil), step("b", "function", "shout", map[string]any{"text": "pre {{steps.zz.output}}"})}}, "steps[1].input"},
			{"own step", map[string]any{"app_id": appID, "name": "x", "steps": []any{step("a", "function", "shout", map[string]any{"t": "{{steps.a.output}}"})}}, "steps[0].input"},
			{"unknown root", map[string]any{"app_id": appID, "name": "x", "steps": []any{step("a", "function", "shout", map[string]any{"t": "{{env.HOME}}"})}}, "steps[0].input"},
			{"no steps", map[string]any{"app_id": appID, "name": "x", "steps": []any{}}, "steps"},
			{"no name", map[string]any{"app_id": appID, "steps": steps}, "name"},
			{"no app", map[string]any{"name": "x", "steps": steps}, "Missing required field: app_id"},
		} {
			e.do("POST", "/api/v1/pipelines", tc.body, bearer(tok)).expectError(t, 400, "ValidationError", tc.detail)
		}
		e.do("POST", "/api/v1/pipelines", map[string]any{"app_id": appID, "name": "chain", "steps": steps}, bearer(tok)).
			expectError(t, 409, "ConflictError", `"chain"`)

		require.Equal(t, "chain", e.do("GET", "/api/v1/pipelines/"+id, nil, bearer(tok)).expect(t, 200).str("name"))
		p := e.do("PATCH", "/api/v1/pipelines/"+id, map[string]any{"description": "new", "steps": steps[:1]}, bearer(tok)).expect(t, 200)
		require.Equal(t, "chain", p.str("name"), "a patch keeps what it does not name")
		require.Equal(t, "new", p.str("description"))
		require.Len(t, list(p, "steps"), 1)
		e.do("PATCH", "/api/v1/pipelines/"+id, map[string]any{"steps": []any{step("a", "agent", "missing", nil)}}, bearer(tok)).
			expectError(t, 400, "ValidationError", "steps[0].ref")

		// Pages, in creation order; app_id filters.
		second := e.createPipeline(tok, appID, "second", steps...)
		third := e.createPipeline(tok, appID, "third", steps...)
		e.do("PATCH", "/api/v1/pipelines/"+third, map[string]any{"name": "second"}, bearer(tok)).expectError(t, 409, "ConflictError", "second")
		l := e.do("GET", "/api/v1/pipelines?limit=2", nil, bearer(tok)).expect(t, 200)
		require.Equal(t, []string{"chain", "second"}, names(list(l, "pipelines")))
		require.Equal(t, 3.0, l.JSON["total_count"])
		require.Equal(t, true, l.JSON["has_more"])
		l = e.do("GET", "/api/v1/pipelines?limit=2&offset=2&app_id="+appID, nil, bearer(tok)).expect(t, 200)
		require.Equal(t, []string{"third"}, names(list(l, "pipelines")))
		require.Equal(t, false, l.JSON["has_more"])
		e.do("GET", "/api/v1/pipelines?limit=0", nil, bearer(tok)).expectError(t, 400, "ValidationError", "limit")
		require.Empty(t, list(e.do("GET", "/api/v1/pipelines", nil, bearer(other)).expect(t, 200), "pipelines"))

		// Another user's pipeline, runs and app are 404 everywhere.
		run := e.runPipeline(tok, second, map[string]any{"text": "hi"}).str("run_id")
		e.do("GET", "/api/v1/pipelines/"+second, nil, bearer(other)).expectError(t, 404, "NotFoundError", "Pipeline not found")
		e.do("PATCH", "/api/v1/pipelines/"+second, map[string]any{"name": "mine"}, bearer(other)).expectError(t, 404, "NotFoundError", "Pipeline not found")
		e.do("DELETE", "/api/v1/pipelines/"+second, nil, bearer(other)).expectError(t, 404, "NotFoundError", "Pipeline not found")
		e.do("POST", "/api/v1/pipelines/"+second+"/run", map[string]any{"input": map[string]any{}}, bearer(other)).expectError(t, 404, "NotFoundError", "Pipeline not found")
		e.do("GET", "/api/v1/pipelines/runs?pipeline_id="+second, nil, bearer(other)).expectError(t, 404, "NotFoundError", "Pipeline not found")
		e.do("GET", "/api/v1/pipelines/runs/"+run, nil, bearer(other)).expectError(t, 404, "NotFoundError", "Pipeline run not found")
		e.do("POST", "/api/v1/pipelines", map[string]any{"app_id": appID, "name": "x", "steps": steps}, bearer(other)).expect(t, 404)
		e.do("GET", "/api/v1/pipelines/not-a-uuid", nil, bearer(tok)).expectError(t, 404, "NotFoundError", "Pipeline not found")
		e.do("GET", "/api/v1/pipelines/runs/not-a-uuid", nil, bearer(tok)).expectError(t, 404, "NotFoundError", "Pipeline run not found")
		require.Equal(t, "second", e.do("GET", "/api/v1/pipelines/"+second, nil, bearer(tok)).expect(t, 200).str("name"), "untouched")
		e.awaitRun(tok, run)

		// Deleting a pipeline deletes its runs.
		e.do("DELETE", "/api/v1/pipelines/"+second, nil, bearer(tok)).expect(t, 204)
		e.do("GET", "/api/v1/pipelines/"+second, nil, bearer(tok)).expectError(t, 404, "NotFoundError", "Pipeline not found")
		e.do("GET", "/api/v1/pipelines/runs/"+run, nil, bearer(tok)).expectError(t, 404, "NotFoundError", "Pipeline run not found")
		e.do("GET", "/api/v1/pipelines/runs?pipeline_id="+second, nil, bearer(tok)).expectError(t, 404, "NotFoundError", "Pipeline not found")
	})
}

// TestPipelineRunChainsSteps: a function's output flows through templates
// into a JavaScript agent and then an LLM agent; each step records what
// ran it, and the run's output is the last step's.
func TestPipelineRunChainsSteps(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("chain@example.com")
		appID := e.pipelineApp(tok)
		id := e.createPipeline(tok, appID, "chain",
			step("clean", "function", "shout", map[string]any{"text": "{{input.text}}", "n": "{{input.n}}"}),
			step("js", "agent", "echoer", map[string]any{"text": "{{steps.clean.output.text}}", "n": "{{steps.clean.output.n}}",
				"tags": "{{steps.clean.output.tags}}", "first": "{{steps.clean.output.tags.0}}", "note": "n={{steps.clean.output.n}}, {{input.text}}!",
				"nested": []any{map[string]any{"deep": "{{ input.n }}"}}, "fixed": true}),
			step("say", "agent", "llm", map[string]any{"prompt": "Say {{steps.js.output.seen}}"}))

		r := e.runPipeline(tok, id, map[string]any{"text": "hello", "n": 41})
		require.Equal(t, id, r.str("pipeline_id"))
		require.Equal(t, "queued", r.str("status"))
		require.Nil(t, r.JSON["output"])
		require.Nil(t, r.JSON["error"])
		for _, s := range runSteps(r) {
			require.Equal(t, "queued", s["status"])
		}

		done := e.awaitRun(tok, r.str("run_id"))
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		require.Nil(t, done.JSON["error"])
		steps := runSteps(done)
		require.Len(t, steps, 3)
		for _, s := range steps {
			require.Equal(t, "completed", s["status"], "step %v", s["id"])
			require.Nil(t, s["error"])
		}
		require.Equal(t, map[string]any{"text": "HELLO", "n": 42.0, "tags": []any{"hello", "x"}}, steps[0]["output"])
		require.NotEmpty(t, steps[0]["execution_id"])
		require.NotContains(t, steps[0], "activation_id")
		// A whole-string placeholder keeps its JSON type; an embedded one is text.
		require.Equal(t, map[string]any{"text": "HELLO", "n": 42.0, "tags": []any{"hello", "x"}, "first": "hello", "note": "n=42, hello!",
			"nested": []any{map[string]any{"deep": 41.0}}, "fixed": true}, steps[1]["output"].(map[string]any)["got"])
		require.Equal(t, "echo: Say HELLO", steps[2]["output"].(map[string]any)["response"])
		require.Equal(t, steps[2]["output"], done.JSON["output"])

		// What the steps name is the platform's record of them.
		execs := list(e.do("GET", "/api/v1/apps/"+appID+"/functions/history", nil, bearer(tok)).expect(t, 200), "executions")
		require.Len(t, execs, 1)
		require.Equal(t, steps[0]["execution_id"], execs[0]["execution_id"])
		for _, s := range steps[1:] {
			a := e.do("GET", "/api/v1/activations/"+s["activation_id"].(string), nil, bearer(tok)).expect(t, 200)
			require.Equal(t, "completed", a.str("status"))
			require.Equal(t, s["output"], a.JSON["output_data"])
			require.Equal(t, done.str("run_id"), a.JSON["context"].(map[string]any)["pipeline_run_id"])
			require.Equal(t, s["id"], a.JSON["context"].(map[string]any)["pipeline_step"])
		}

		// The example app's pipeline runs as shipped.
		ex := e.importManifest(tok, exampleManifest(t)).expect(t, 201).str("app_id")
		intake := list(e.do("GET", "/api/v1/pipelines?app_id="+ex, nil, bearer(tok)).expect(t, 200), "pipelines")
		require.Len(t, intake, 1)
		done = e.awaitRun(tok, e.runPipeline(tok, intake[0]["pipeline_id"].(string), map[string]any{
			"subject": "  Refund  ", "body": " please ", "customer_email": "Ada@Example.COM"}).str("run_id"))
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		require.Equal(t, "ada@example.com", runSteps(done)[0]["output"].(map[string]any)["customer_email"])
		out := done.JSON["output"].(map[string]any)
		require.Equal(t, "billing", out["team"])
		require.Equal(t, "echo: Refund", out["summary"], "the router asked the LLM about the normalized ticket")
	})
}

// TestPipelineRunFailures: a throwing function, a failing agent and a
// template path the data lacks each fail their step with the cause, fail
// the run naming the step, and skip the steps after.
func TestPipelineRunFailures(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("fail@example.com")
		appID := e.pipelineApp(tok)
		for _, tc := range []struct {
			name     string
			steps    []map[string]any
			input    map[string]any
			failed   int
			stepErr  string
			runError string
		}{
			{"function throws", []map[string]any{
				step("first", "function", "boom", map[string]any{"why": "{{input.why}}"}),
				step("second", "function", "shout", map[string]any{"text": "x"}),
				step("third", "agent", "echoer", nil),
			}, map[string]any{"why": "bad luck"}, 0, "boom: bad luck", "Step first failed: boom: bad luck"},
			{"agent throws", []map[string]any{
				step("first", "function", "shout", map[string]any{"text": "{{input.text}}"}),
				step("second", "agent", "fails", map[string]any{"text": "{{steps.first.output.text}}"}),
				step("third", "agent", "echoer", nil),
			}, map[string]any{"text": "it"}, 1, "agent says no to IT", "Step second failed: agent says no to IT"},
			{"input path missing", []map[string]any{
				step("first", "function", "shout", map[string]any{"text": "{{input.missing.deeper}}"}),
				step("second", "agent", "echoer", nil),
			}, map[string]any{"text": "it"}, 0, "input.missing.deeper", "Step first failed"},
			{"output path missing", []map[string]any{
				step("first", "function", "shout", map[string]any{"text": "{{input.text}}"}),
				step("second", "agent", "echoer", map[string]any{"t": "got {{steps.first.output.nope}}"}),
				step("third", "agent", "echoer", nil),
			}, map[string]any{"text": "it"}, 1, "steps.first.output.nope", "Step second failed"},
			{"index out of range", []map[string]any{
				step("first", "function", "shout", map[string]any{"text": "{{input.text}}"}),
				step("second", "agent", "echoer", map[string]any{"t": "{{steps.first.output.tags.7}}"}),
			}, map[string]any{"text": "it"}, 1, "steps.first.output.tags.7", "Step second failed"},
			// A 7.5 KB template naming a 200 KB input 500 times would render
			// 100 MB: the step's input obeys the limit of a request body.
			{"rendered input too large", []map[string]any{
				step("first", "function", "shout", map[string]any{"text": strings.Repeat("{{input.x}}", 500)}),
				step("second", "agent", "echoer", nil),
			}, map[string]any{"x": strings.Repeat("x", 200<<10)}, 0, "larger than 1 MiB", "Step first failed"},
		} {
			id := e.createPipeline(tok, appID, tc.name, tc.steps...)
			done := e.awaitRun(tok, e.runPipeline(tok, id, tc.input).str("run_id"))
			require.Equal(t, "failed", done.str("status"), "%s: %s", tc.name, done.Body)
			require.Contains(t, done.str("error"), tc.runError, tc.name)
			require.Contains(t, done.str("error"), tc.stepErr, tc.name)
			require.Nil(t, done.JSON["output"], tc.name)
			for i, s := range runSteps(done) {
				switch {
				case i < tc.failed:
					require.Equal(t, "completed", s["status"], tc.name)
				case i == tc.failed:
					require.Equal(t, "failed", s["status"], tc.name)
					require.Contains(t, s["error"], tc.stepErr, tc.name)
					require.Nil(t, s["output"], tc.name)
				default:
					require.Equal(t, "skipped", s["status"], "%s: step %d", tc.name, i)
					require.NotContains(t, s, "activation_id", tc.name)
					require.NotContains(t, s, "execution_id", tc.name)
				}
			}
		}
	})
}

// TestPipelineRunsList: a pipeline's runs, newest first, in pages; the
// pipeline is required and must be the caller's.
func TestPipelineRunsList(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("runs@example.com")
		appID := e.pipelineApp(tok)
		id := e.createPipeline(tok, appID, "one", step("a", "function", "shout", map[string]any{"text": "{{input.text}}"}))
		other := e.createPipeline(tok, appID, "other", step("a", "function", "shout", map[string]any{"text": "{{input.text}}"}))
		e.runPipeline(tok, other, map[string]any{"text": "elsewhere"})
		var runs []string
		for _, text := range []string{"r0", "r1", "r2"} {
			runs = append(runs, e.runPipeline(tok, id, map[string]any{"text": text}).str("run_id"))
		}

		l := e.do("GET", "/api/v1/pipelines/runs?pipeline_id="+id+"&limit=2", nil, bearer(tok)).expect(t, 200)
		page := list(l, "runs")
		require.Len(t, page, 2)
		require.Equal(t, []any{runs[2], runs[1]}, []any{page[0]["run_id"], page[1]["run_id"]}, "newest first")
		require.Equal(t, map[string]any{"text": "r2"}, page[0]["input"])
		require.Equal(t, id, page[0]["pipeline_id"])
		require.Equal(t, 3.0, l.JSON["total_count"])
		require.Equal(t, true, l.JSON["has_more"])
		l = e.do("GET", "/api/v1/pipelines/runs?pipeline_id="+id+"&limit=2&offset=2", nil, bearer(tok)).expect(t, 200)
		page = list(l, "runs")
		require.Len(t, page, 1)
		require.Equal(t, runs[0], page[0]["run_id"])
		require.Equal(t, 3.0, l.JSON["total_count"])
		require.Equal(t, false, l.JSON["has_more"])

		e.do("GET", "/api/v1/pipelines/runs", nil, bearer(tok)).expectError(t, 400, "ValidationError", "pipeline_id")
		e.do("GET", "/api/v1/pipelines/runs?pipeline_id=", nil, bearer(tok)).expectError(t, 400, "ValidationError", "pipeline_id")
		e.do("GET", "/api/v1/pipelines/runs?pipeline_id="+id+"&limit=1001", nil, bearer(tok)).expectError(t, 400, "ValidationError", "limit")
		e.do("GET", "/api/v1/pipelines/runs?pipeline_id="+uuid.NewString(), nil, bearer(tok)).expectError(t, 404, "NotFoundError", "Pipeline not found")
		for _, r := range runs {
			require.Equal(t, "completed", e.awaitRun(tok, r).str("status"))
		}
	})
}

// pipelineEvents reads c until the run ends and answers its pipeline_run_*
// events, in order (activation events of its agent steps come between).
func pipelineEvents(t *testing.T, c *websocket.Conn, runID string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for {
		ev := readEvent(t, c)
		typ, _ := ev["type"].(string)
		if !strings.HasPrefix(typ, "pipeline_run_") || ev["run_id"] != runID {
			continue
		}
		out = append(out, ev)
		if typ != pipeline.EventStarted {
			return out
		}
	}
}

// TestPipelineRunEvents: the run's owner's sockets see it start and end,
// with the run and pipeline ids, in seq order; other users see nothing.
func TestPipelineRunEvents(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("ws@example.com")
		bob := e.signup("bob@example.com")
		appID := e.pipelineApp(tok)
		auth := func(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }
		ws, _ := e.socket("", auth(tok))
		byApp, _ := e.socket("app_id="+appID, auth(tok))
		bobs, _ := e.socket("", auth(bob))

		ok := e.createPipeline(tok, appID, "ok",
			step("a", "function", "shout", map[string]any{"text": "{{input.text}}"}),
			step("b", "agent", "echoer", map[string]any{"text": "{{steps.a.output.text}}"}))
		bad := e.createPipeline(tok, appID, "bad", step("a", "function", "boom", map[string]any{"why": "{{input.text}}"}))

		okRun := e.runPipeline(tok, ok, map[string]any{"text": "hi"}).str("run_id")
		for _, c := range []*websocket.Conn{ws, byApp} {
			evs := pipelineEvents(t, c, okRun)
			require.Len(t, evs, 2)
			require.Equal(t, "pipeline_run_started", evs[0]["type"])
			require.Equal(t, "pipeline_run_completed", evs[1]["type"])
			for _, ev := range evs {
				require.Equal(t, ok, ev["pipeline_id"])
				require.Equal(t, appID, ev["context"].(map[string]any)["app_id"])
				require.NotEmpty(t, ev["timestamp"])
				require.NotContains(t, ev, "activation_id")
			}
			require.Equal(t, "running", evs[0]["status"])
			require.Equal(t, "completed", evs[1]["status"])
			require.Equal(t, map[string]any{"got": map[string]any{"text": "HI"}, "seen": "HI"}, evs[1]["output_data"])
			require.Greater(t, evs[1]["seq"].(float64), evs[0]["seq"].(float64))
		}

		badRun := e.runPipeline(tok, bad, map[string]any{"text": "no"}).str("run_id")
		evs := pipelineEvents(t, ws, badRun)
		require.Equal(t, []any{"pipeline_run_started", "pipeline_run_failed"}, []any{evs[0]["type"], evs[1]["type"]})
		require.Equal(t, "failed", evs[1]["status"])
		require.Equal(t, bad, evs[1]["pipeline_id"])
		require.Contains(t, evs[1]["error"], "boom: no")

		// Bob's socket got nothing of it: the first thing it reads is his own.
		bobApp := e.pipelineApp(bob)
		bobRun := e.runPipeline(bob, e.createPipeline(bob, bobApp, "mine", step("a", "function", "shout", map[string]any{"text": "b"})), nil).str("run_id")
		first := readEvent(t, bobs)
		require.Equal(t, bobRun, first["run_id"])
		if d == store.SQLite {
			require.EqualValues(t, 1, first["seq"], "seq is per user (dense there: the user's counter)")
		}
	})
}

// stepJob puts a step's job in the queue, as a re-delivery after a crash
// would (River delivers at least once), and waits for River to finish it.
func (e *env) stepJob(runID string, step int) {
	e.t.Helper()
	id := e.insertStepJob(runID, step)
	for !e.stepJobDone(id) {
		time.Sleep(10 * time.Millisecond)
	}
}

// insertStepJob puts a step's job in the queue and returns its id.
func (e *env) insertStepJob(runID string, step int) int64 {
	e.t.Helper()
	ctx := context.Background()
	var job *rivertype.JobRow
	require.NoError(e.t, e.srv.Store.InTx(ctx, func(tx *store.Store) error {
		res, err := e.srv.Queue.InsertTx(ctx, tx, pipeline.StepArgs{RunID: runID, Step: step}, &river.InsertOpts{Queue: pipeline.Queue, MaxAttempts: 1})
		if err == nil {
			job = res.Job
		}
		return err
	}))
	return job.ID
}

// stepJobDone reports whether step job id has completed; it fails the test
// when the job was discarded, or is not done 30 s after it was inserted.
func (e *env) stepJobDone(id int64) bool {
	e.t.Helper()
	j, err := e.srv.Queue.Client().JobGet(context.Background(), id)
	require.NoError(e.t, err)
	if j.State == rivertype.JobStateCompleted {
		return true
	}
	require.NotEqual(e.t, rivertype.JobStateDiscarded, j.State, "errors: %v", j.Errors)
	require.True(e.t, time.Now().Before(j.CreatedAt.Add(30*time.Second)), "step job %d did not finish: %s", id, j.State)
	return false
}

func (e *env) executions(token, appID string) int {
	e.t.Helper()
	return int(e.do("GET", "/api/v1/apps/"+appID+"/functions/history", nil, bearer(token)).expect(e.t, 200).JSON["total_count"].(float64))
}

// TestPipelineStepJobsRunOnce: River delivers a step's job at least once.
// A job delivered again after its step was recorded does nothing, and a
// run interrupted between steps (the first recorded, the second's job
// queued with it) resumes at the second step without running the first
// again.
func TestPipelineStepJobsRunOnce(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("once@example.com")
		appID := e.pipelineApp(tok)
		id := e.createPipeline(tok, appID, "two",
			step("a", "function", "shout", map[string]any{"text": "{{input.text}}", "n": 1}),
			step("b", "agent", "echoer", map[string]any{"text": "{{steps.a.output.text}}"}))

		// Re-delivered jobs of an ended run.
		runID := e.runPipeline(tok, id, map[string]any{"text": "once"}).str("run_id")
		done := e.awaitRun(tok, runID)
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		e.stepJob(runID, 0)
		e.stepJob(runID, 1)
		again := e.do("GET", "/api/v1/pipelines/runs/"+runID, nil, bearer(tok)).expect(t, 200)
		require.JSONEq(t, string(done.Body), string(again.Body), "the run is as it ended")
		require.Equal(t, 1, e.executions(tok, appID), "the function ran once")
		acts := e.do("GET", "/api/v1/apps/"+appID+"/activations", nil, bearer(tok)).expect(t, 200)
		require.Equal(t, 1.0, acts.JSON["total_count"], "the agent ran once")

		// A run stopped between its steps, as the first step's end left it:
		// its state recorded (the output in it the one a real run could not
		// produce, so its use is visible) and the next step current.
		ctx := context.Background()
		p, err := e.srv.Store.PipelineGet(ctx, id)
		require.NoError(t, err)
		states, _ := json.Marshal([]pipeline.StepState{
			{ID: "a", Type: "function", Ref: "shout", Status: "completed", ExecutionID: uuid.NewString(), Output: json.RawMessage(`{"text":"BEFORE THE CRASH"}`)},
			{ID: "b", Type: "agent", Ref: "echoer", Status: "queued"},
		})
		now := store.Now()
		crashed := &store.PipelineRun{ID: uuid.NewString(), PipelineID: id, AppID: appID, UserID: p.UserID, Status: "running",
			Input: json.RawMessage(`{"text":"once"}`), Definition: p.Steps, Steps: states, Current: 1, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, e.srv.Store.PipelineRunCreate(ctx, crashed))
		// Step a's job again (its completion was lost with the crash), then
		// step b's, which its end queued.
		e.stepJob(crashed.ID, 0)
		require.Equal(t, "running", e.do("GET", "/api/v1/pipelines/runs/"+crashed.ID, nil, bearer(tok)).expect(t, 200).str("status"))
		e.stepJob(crashed.ID, 1)
		done = e.awaitRun(tok, crashed.ID)
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		steps := runSteps(done)
		require.Equal(t, "BEFORE THE CRASH", steps[0]["output"].(map[string]any)["text"], "step a kept")
		require.Equal(t, map[string]any{"got": map[string]any{"text": "BEFORE THE CRASH"}, "seen": "BEFORE THE CRASH"}, steps[1]["output"])
		require.Equal(t, 1, e.executions(tok, appID), "step a did not run again")
	})
}

// TestPipelineAgentStepRedelivered: an agent step's job delivered again
// while its activation runs finds that activation (one per step, however
// often the job runs) and the run moves on once.
func TestPipelineAgentStepRedelivered(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		outside, arrived, free := heldServer(t)
		e := newEnv(t, d, nil)
		tok := e.signup("held@example.com")
		appID := e.pipelineApp(tok, map[string]any{"name": "held", "agent_type_id": "custom", "version": "1.0.0", "timeout_seconds": 30,
			"agent_config": map[string]any{"runtime": "javascript",
				"code": `async function run(input, ctx) { const r = await ctx.http.fetch("` + outside.URL + `"); return {body: r.body, text: input.text}; }`}})
		id := e.createPipeline(tok, appID, "held",
			step("a", "function", "shout", map[string]any{"text": "{{input.text}}", "n": 1}),
			step("b", "agent", "held", map[string]any{"text": "{{steps.a.output.text}}"}),
			step("c", "agent", "echoer", map[string]any{"text": "{{steps.b.output.body}}"}))
		runID := e.runPipeline(tok, id, map[string]any{"text": "hold"}).str("run_id")

		select {
		case <-arrived:
		case <-time.After(30 * time.Second):
			t.Fatal("the agent step did not start")
		}
		// The step records its activation's id in a transaction after the
		// one that created (and queued) the activation, so the agent may
		// be running before the run shows it.
		var first map[string]any
		deadline := time.Now().Add(10 * time.Second)
		for first == nil || first["activation_id"] == nil {
			require.True(t, time.Now().Before(deadline), "the step never showed its activation: %v", first)
			if first != nil {
				time.Sleep(10 * time.Millisecond)
			}
			held := e.do("GET", "/api/v1/pipelines/runs/"+runID, nil, bearer(tok)).expect(t, 200)
			first = runSteps(held)[1]
		}
		require.Equal(t, "running", first["status"])
		require.NotEmpty(t, first["activation_id"])
		e.stepJob(runID, 1)
		e.stepJob(runID, 0)
		free()

		done := e.awaitRun(tok, runID)
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		steps := runSteps(done)
		require.Equal(t, first["activation_id"], steps[1]["activation_id"])
		require.Equal(t, map[string]any{"got": map[string]any{"text": "released"}, "seen": "released"}, steps[2]["output"])
		acts := e.do("GET", "/api/v1/apps/"+appID+"/activations", nil, bearer(tok)).expect(t, 200)
		require.Equal(t, 2.0, acts.JSON["total_count"], "one activation per agent step: %s", acts.Body)
		require.Equal(t, 1, e.executions(tok, appID))
		require.Len(t, arrived, 0, "the held agent ran once")
	})
}

// TestPipelineFunctionStepRedelivered: a function step's job delivered
// again while the step runs (River hands a job back when it thinks its
// worker gone) finds the step held by a live worker and does nothing: the
// function runs once, one execution is recorded, the run moves on once.
func TestPipelineFunctionStepRedelivered(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		outside, arrived, free := heldServer(t)
		e := newEnv(t, d, nil)
		tok := e.signup("heldfn@example.com")
		appID := e.importManifest(tok, map[string]any{"name": "Held", "slug": "held-fn", "version": "1.0.0",
			"functions": []any{map[string]any{"name": "held", "input_schema": map[string]any{"type": "object"}, "timeout_seconds": 30,
				"code": `async function run(input, ctx) { const r = await ctx.http.fetch("` + outside.URL + `"); return {body: r.body}; }`}},
			"agents": []any{map[string]any{"name": "echoer", "agent_type_id": "custom", "version": "1.0.0", "timeout_seconds": 10,
				"agent_config": map[string]any{"runtime": "javascript", "code": `async function run(input) { return {got: input}; }`}}},
		}).expect(t, 201).str("app_id")
		id := e.createPipeline(tok, appID, "held",
			step("a", "function", "held", nil),
			step("b", "agent", "echoer", map[string]any{"text": "{{steps.a.output.body}}"}))
		runID := e.runPipeline(tok, id, nil).str("run_id")
		select {
		case <-arrived:
		case <-time.After(30 * time.Second):
			t.Fatal("the function step did not start")
		}

		dup := e.insertStepJob(runID, 0)
		for !e.stepJobDone(dup) {
			select {
			case <-arrived:
				t.Fatal("the re-delivered step ran the function again")
			case <-time.After(10 * time.Millisecond):
			}
		}
		free()
		done := e.awaitRun(tok, runID)
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		require.Equal(t, map[string]any{"got": map[string]any{"text": "released"}}, runSteps(done)[1]["output"])
		require.Equal(t, 1, e.executions(tok, appID), "one execution for the step")
		require.Len(t, arrived, 0, "the function ran once")
	})
}

// TestPipelineDeadWorkersStepsComeBack: runs whose current step a dead
// worker holds (its heartbeat stale, or no worker row at all) are handed
// back by a live worker's reaper within the recovery window and finish; a
// step whose execution the dead worker recorded (but not the step's end)
// uses that execution instead of running the function again; a step that
// had its last attempt fails with the reason.
func TestPipelineDeadWorkersStepsComeBack(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnvWith(t, d, nil, server.Options{HeartbeatEvery: 50 * time.Millisecond, DeadAfter: 300 * time.Millisecond})
		tok := e.signup("dead@example.com")
		appID := e.pipelineApp(tok)
		id := e.createPipeline(tok, appID, "two",
			step("a", "function", "shout", map[string]any{"text": "{{input.text}}", "n": 1}),
			step("b", "agent", "echoer", map[string]any{"text": "{{steps.a.output.text}}"}))
		ctx := context.Background()
		st := e.srv.Store
		p, err := st.PipelineGet(ctx, id)
		require.NoError(t, err)
		old := store.Now().Add(-time.Hour)
		require.NoError(t, st.WorkerHeartbeat(ctx, &store.Worker{ID: "dead-1", Hostname: "gone", PID: 1, Version: "x", StartedAt: old, HeartbeatAt: old}))
		// strand makes a run as a worker left it when it died running the
		// run's first step: claimed by worker, after attempt claims.
		strand := func(worker string, attempt int) string {
			states, _ := json.Marshal([]pipeline.StepState{
				{ID: "a", Type: "function", Ref: "shout", Status: "running"},
				{ID: "b", Type: "agent", Ref: "echoer", Status: "queued"},
			})
			now := store.Now()
			r := &store.PipelineRun{ID: uuid.NewString(), PipelineID: id, AppID: appID, UserID: p.UserID, Status: "running",
				Input: json.RawMessage(`{"text":"it"}`), Definition: p.Steps, Steps: states, CreatedAt: now, UpdatedAt: now,
				WorkerID: worker, Attempt: attempt}
			require.NoError(t, st.PipelineRunCreate(ctx, r))
			return r.ID
		}
		midway := strand("dead-1", 1)
		recorded := strand("dead-1", 2)
		lastTry := strand("dead-1", 3)
		rowless := strand("never-heartbeat", 1)
		// The dead worker had recorded step a's execution of this run.
		fn, err := st.FunctionGetByName(ctx, appID, "shout")
		require.NoError(t, err)
		now := store.Now()
		require.NoError(t, st.ExecutionCreate(ctx, &store.Execution{ID: uuid.NewString(), FunctionID: fn.ID, AppID: appID, UserID: p.UserID,
			Status: "completed", Input: json.RawMessage(`{"text":"it","n":1}`), Output: json.RawMessage(`{"text":"RECORDED"}`),
			CreatedAt: now, CompletedAt: now, PipelineRunID: recorded, PipelineStep: "a"}))

		start := time.Now()
		for _, runID := range []string{midway, rowless} {
			done := e.awaitRun(tok, runID)
			require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
			require.Equal(t, map[string]any{"got": map[string]any{"text": "IT"}, "seen": "IT"}, runSteps(done)[1]["output"])
		}
		done := e.awaitRun(tok, recorded)
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		require.Equal(t, "RECORDED", runSteps(done)[1]["output"].(map[string]any)["seen"], "the recorded execution's output")
		failed := e.awaitRun(tok, lastTry)
		require.Equal(t, "failed", failed.str("status"), "body: %s", failed.Body)
		require.Contains(t, failed.str("error"), "stopped responding (attempt 3 of 3)")
		require.Less(t, time.Since(start), 10*time.Second, "recovered within the window")
		require.Equal(t, 3, e.executions(tok, appID), "one execution per function step that ran")
	})
}

// TestPipelineManifestTemplates: a manifest's pipelines obey the same
// template rules as those made over the API: no step can read a later
// step's output, which no run has yet.
func TestPipelineManifestTemplates(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("manifest@example.com")
		m := exampleManifest(t)
		m["slug"] = "later-step"
		p := m["pipelines"].([]any)[0].(map[string]any)
		steps := p["steps"].([]any)
		steps[0].(map[string]any)["input"] = map[string]any{"subject": "{{steps.triage.output.response}}"}
		e.importManifest(tok, m).expectError(t, 400, "ValidationError", "pipelines[0].steps[0].input")
		steps[0].(map[string]any)["input"] = map[string]any{"subject": "{{secrets.key}}"}
		e.importManifest(tok, m).expectError(t, 400, "ValidationError", "pipelines[0].steps[0].input")
		e.do("GET", "/api/v1/apps", nil, bearer(tok)).expect(t, 200)
		require.Empty(t, list(e.do("GET", "/api/v1/pipelines", nil, bearer(tok)).expect(t, 200), "pipelines"), "nothing imported")
	})
}

// partIDs maps the names of an app's functions and agents to their ids.
func (e *env) partIDs(token, appID string) (functions, agents map[string]string) {
	e.t.Helper()
	functions, agents = map[string]string{}, map[string]string{}
	for _, f := range list(e.do("GET", "/api/v1/functions?app_id="+appID, nil, bearer(token)).expect(e.t, 200), "functions") {
		functions[f["name"].(string)] = f["id"].(string)
	}
	for _, a := range list(e.do("GET", "/api/v1/apps/"+appID+"/agents", nil, bearer(token)).expect(e.t, 200), "agents") {
		agents[a["name"].(string)] = a["id"].(string)
	}
	return functions, agents
}

// TestPipelineStepRefByID: a step's ref is a function's or agent's name or
// id within the pipeline's app (a program that made the function over the
// API has its id); creating and patching take either, the run finds the
// part by it, and another app's or another user's id is a 400 naming the
// field, as an unknown name is, without speaking of a manifest. A
// manifest's refs stay names of its own parts, and the exported manifest
// of an app whose pipeline names parts by id names them by name.
func TestPipelineStepRefByID(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("ids@example.com")
		other := e.signup("ids-other@example.com")
		appID := e.pipelineApp(tok)
		fns, agents := e.partIDs(tok, appID)
		secondApp := e.pipelineApp(tok)
		fns2, agents2 := e.partIDs(tok, secondApp)
		otherFns, otherAgents := e.partIDs(other, e.pipelineApp(other))

		// Made over the API, named by id: 201, kept as given, and it runs.
		steps := []map[string]any{
			step("clean", "function", fns["shout"], map[string]any{"text": "{{input.text}}", "n": 1}),
			step("js", "agent", agents["echoer"], map[string]any{"text": "{{steps.clean.output.text}}"}),
			step("named", "function", "shout", map[string]any{"text": "{{steps.js.output.seen}}", "n": 2}),
		}
		r := e.do("POST", "/api/v1/pipelines", map[string]any{"app_id": appID, "name": "by-id", "steps": steps}, bearer(tok)).expect(t, 201)
		require.Equal(t, fns["shout"], list(r, "steps")[0]["ref"])
		require.Equal(t, agents["echoer"], list(r, "steps")[1]["ref"])
		id := r.str("pipeline_id")
		done := e.awaitRun(tok, e.runPipeline(tok, id, map[string]any{"text": "hey"}).str("run_id"))
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		require.Equal(t, "HEY", runSteps(done)[1]["output"].(map[string]any)["seen"])
		require.Equal(t, "HEY", done.JSON["output"].(map[string]any)["text"])

		// Another app's or user's id, an id of the other kind and an
		// unknown name: a 400 naming the field, with no manifest in sight.
		for _, tc := range []struct {
			name, typ, ref string
		}{
			{"same user's other app's function", "function", fns2["shout"]},
			{"same user's other app's agent", "agent", agents2["echoer"]},
			{"another user's function", "function", otherFns["shout"]},
			{"another user's agent", "agent", otherAgents["echoer"]},
			{"an agent's id as a function", "function", agents["echoer"]},
			{"a function's id as an agent", "agent", fns["shout"]},
			{"unknown name", "function", "ghost"},
		} {
			body := map[string]any{"app_id": appID, "name": "x", "steps": []any{step("a", "function", "shout", nil), step("b", tc.typ, tc.ref, nil)}}
			r := e.do("POST", "/api/v1/pipelines", body, bearer(tok)).expectError(t, 400, "ValidationError", "steps[1].ref")
			require.NotContains(t, r.str("detail"), "manifest", tc.name)
			require.Contains(t, r.str("detail"), tc.ref, tc.name)
			r = e.do("PATCH", "/api/v1/pipelines/"+id, map[string]any{"steps": body["steps"]}, bearer(tok)).expectError(t, 400, "ValidationError", "steps[1].ref")
			require.NotContains(t, r.str("detail"), "manifest", tc.name)
		}

		// A patch takes ids too.
		p := e.do("PATCH", "/api/v1/pipelines/"+id, map[string]any{"steps": []any{step("only", "agent", agents["echoer"], map[string]any{"text": "{{input.text}}"})}}, bearer(tok)).expect(t, 200)
		require.Equal(t, agents["echoer"], list(p, "steps")[0]["ref"])
		done = e.awaitRun(tok, e.runPipeline(tok, id, map[string]any{"text": "again"}).str("run_id"))
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		require.Equal(t, "again", done.JSON["output"].(map[string]any)["seen"])

		// The app's manifest names its parts: it imports as a new app.
		m := e.do("GET", "/api/v1/apps/"+appID+"/manifest", nil, bearer(tok)).expect(t, 200).JSON
		var exported []any
		for _, pl := range m["pipelines"].([]any) {
			for _, s := range pl.(map[string]any)["steps"].([]any) {
				exported = append(exported, s.(map[string]any)["ref"])
			}
		}
		require.Equal(t, []any{"echoer"}, exported)
		m["slug"] = "copy-" + uuid.NewString()[:8]
		e.importManifest(tok, m).expect(t, 201)

		// A manifest's refs are names of its own parts; its error names the manifest.
		m["slug"] = "copy-" + uuid.NewString()[:8]
		m["pipelines"].([]any)[0].(map[string]any)["steps"].([]any)[0].(map[string]any)["ref"] = agents["echoer"]
		e.importManifest(tok, m).expectError(t, 400, "ValidationError", "pipelines[0].steps[0].ref").
			expectError(t, 400, "ValidationError", "in this manifest")
	})
}

// heldServer is an outside server whose requests each signal arrived and
// then wait until free is called (once; the test's cleanup calls it too,
// before the server's Close, which waits for the held requests), then
// answer "released".
func heldServer(t *testing.T) (srv *httptest.Server, arrived <-chan struct{}, free func()) {
	t.Helper()
	in, release := make(chan struct{}, 4), make(chan struct{})
	srv = egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in <- struct{}{}
		<-release
		_, _ = w.Write([]byte("released"))
	}))
	var once sync.Once
	free = func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	return srv, in, free
}
