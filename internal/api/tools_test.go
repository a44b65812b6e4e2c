package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// toolsManifest is an app whose echo agent "clerk" has the tools named in
// tools, over two functions: lookup (answers a customer's tickets) and
// counter (counts its runs per idempotency key in app data).
func toolsManifest(tools []map[string]any, extra map[string]any) map[string]any {
	cfg := map[string]any{"provider_id": "echo", "model": "echo", "tools": tools}
	for k, v := range extra {
		cfg[k] = v
	}
	return map[string]any{
		"name": "Tools", "slug": "tools", "version": "1.0.0",
		"functions": []map[string]any{
			{"name": "lookup", "description": "A customer's tickets", "timeout_seconds": 5,
				"input_schema": map[string]any{"type": "object", "required": []string{"email"},
					"properties": map[string]any{"email": map[string]any{"type": "string"}}},
				"code": `async function run(input, ctx) { return {email: input.email, tickets: ["T-1", "T-2"], key: ctx.execution.idempotency_key}; }`},
		},
		"agents": []map[string]any{
			{"name": "clerk", "agent_type_id": "llm", "timeout_seconds": 30, "agent_config": cfg},
		},
	}
}

// activateWait activates the app's clerk with prompt and waits for its
// end (or wait) up to 10 s.
func (e *env) activateWait(tok, agentID, prompt string) *resp {
	e.t.Helper()
	return e.do("POST", "/api/v1/activations", map[string]any{"agent_id": agentID, "input_data": map[string]any{"prompt": prompt}},
		bearer(tok), header("Prefer", "wait=10")).expect(e.t, 201)
}

func (e *env) agentNamed(tok, appID, name string) string {
	e.t.Helper()
	for _, a := range list(e.do("GET", "/api/v1/apps/"+appID+"/agents", nil, bearer(tok)).expect(e.t, 200), "agents") {
		if a["name"] == name {
			return a["id"].(string)
		}
	}
	e.t.Fatalf("no agent %s", name)
	return ""
}

// waitFor polls activation id until cond holds (10 s at most).
func (e *env) waitFor(tok, id string, cond func(*resp) bool) *resp {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := e.do("GET", "/api/v1/activations/"+id, nil, bearer(tok)).expect(e.t, 200)
		if cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("activation %s: condition not reached; last %v", id, r.JSON)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitingOf polls activation id until its run waits: its waiting object
// and the id of the first call it waits on.
func (e *env) waitingOf(tok, id string) (w map[string]any, callID string) {
	e.t.Helper()
	w = e.waitFor(tok, id, func(r *resp) bool { return r.JSON["waiting"] != nil }).JSON["waiting"].(map[string]any)
	return w, w["tool_calls"].([]any)[0].(map[string]any)["tool_call_id"].(string)
}

// answerWait posts body to the waitpoint of w, activation id's.
func (e *env) answerWait(tok, id string, w, body map[string]any) *resp {
	e.t.Helper()
	return e.do("POST", "/api/v1/activations/"+id+"/waitpoints/"+w["waitpoint_id"].(string), body, bearer(tok))
}

func steps(e *env, tok, id string) []map[string]any {
	e.t.Helper()
	return list(e.do("GET", "/api/v1/activations/"+id+"/steps", nil, bearer(tok)).expect(e.t, 200), "steps")
}

func kinds(steps []map[string]any) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s["kind"].(string) + ":" + s["status"].(string)
	}
	return out
}

// TestToolLoopCallsAFunction: the model's call runs the function with the
// call's idempotency key, its result goes back to the model, and every
// step is journaled and summed in output_data.
func TestToolLoopCallsAFunction(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("loop@example.com")
		appID := e.importManifest(tok, toolsManifest([]map[string]any{{"type": "function", "function": "lookup"}}, nil)).expect(t, 201).str("app_id")
		clerk := e.agentNamed(tok, appID, "clerk")

		r := e.activateWait(tok, clerk, `call lookup {"email":"ada@example.com"}`)
		require.Equal(t, "completed", r.str("status"), r.JSON)
		id := r.str("activation_id")
		out := r.JSON["output_data"].(map[string]any)
		require.EqualValues(t, 3, out["steps"])
		require.Contains(t, out["response"], `"tickets":["T-1","T-2"]`)
		require.Contains(t, out["response"], id+":call_1_1", "the function saw the call's idempotency key")
		require.Equal(t, "stop", out["finish_reason"])
		usage := out["usage"].(map[string]any)
		require.Greater(t, usage["total_tokens"], float64(0))

		st := steps(e, tok, id)
		require.Equal(t, []string{"llm:completed", "tool:completed", "llm:completed"}, kinds(st))
		require.Equal(t, "lookup", st[1]["name"])
		require.Equal(t, "call_1_1", st[1]["tool_call_id"])
		require.Equal(t, map[string]any{"email": "ada@example.com"}, st[1]["input"])
		require.Equal(t, []any{"T-1", "T-2"}, st[1]["output"].(map[string]any)["tickets"])
		require.NotNil(t, st[0]["usage"])

		// Bad arguments and an unknown tool are the call's error result:
		// a step, not a failed run.
		r = e.activateWait(tok, clerk, `call lookup {"mail":"x"}`)
		require.Equal(t, "completed", r.str("status"), r.JSON)
		st = steps(e, tok, r.str("activation_id"))
		require.Equal(t, []string{"llm:completed", "tool:failed", "llm:completed"}, kinds(st))
		require.Contains(t, st[1]["error"], "Invalid arguments")
		require.Contains(t, r.JSON["output_data"].(map[string]any)["response"], "Invalid arguments")

		// Paged.
		p := e.do("GET", "/api/v1/activations/"+id+"/steps?limit=1&offset=1", nil, bearer(tok)).expect(t, 200)
		require.Len(t, list(p, "steps"), 1)
		require.EqualValues(t, 3, p.JSON["total_count"])
		require.Equal(t, true, p.JSON["has_more"])

		// Another user's activation's steps: 404.
		other := e.signup("other-loop@example.com")
		e.do("GET", "/api/v1/activations/"+id+"/steps", nil, bearer(other)).expect(t, 404)
	})
}

// TestApprovalWaitsAndGoesOn: a tool with approval "always" makes the run
// wait without a worker; approve runs it, a second answer is 409, another
// user's answer 404, and status=waiting lists it while it waits.
func TestApprovalWaitsAndGoesOn(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("approve@example.com")
		appID := e.importManifest(tok, toolsManifest([]map[string]any{{"type": "function", "function": "lookup", "approval": "always"}}, nil)).
			expect(t, 201).str("app_id")
		clerk := e.agentNamed(tok, appID, "clerk")

		for _, tc := range []struct {
			decision map[string]any
			want     string
		}{
			{map[string]any{"type": "approve"}, `"email":"ada@example.com"`},
			{map[string]any{"type": "edit", "arguments": map[string]any{"email": "bob@example.com"}}, `"email":"bob@example.com"`},
			{map[string]any{"type": "reject", "message": "not this customer"}, "not this customer"},
		} {
			r := e.activateWait(tok, clerk, `call lookup {"email":"ada@example.com"}`)
			id := r.str("activation_id")
			r = e.waitFor(tok, id, func(r *resp) bool { return r.JSON["waiting"] != nil })
			require.Equal(t, "running", r.str("status"))
			w := r.JSON["waiting"].(map[string]any)
			require.Equal(t, "approval", w["kind"])
			calls := w["tool_calls"].([]any)
			require.Len(t, calls, 1)
			call := calls[0].(map[string]any)
			require.Equal(t, "lookup", call["name"])
			require.Equal(t, map[string]any{"email": "ada@example.com"}, call["arguments"])
			wp := w["waitpoint_id"].(string)

			waiting := list(e.do("GET", "/api/v1/activations?status=waiting", nil, bearer(tok)).expect(t, 200), "activations")
			require.Len(t, waiting, 1)
			require.Equal(t, id, waiting[0]["activation_id"])

			other := e.signup("other-" + tc.decision["type"].(string) + "@example.com")
			path := "/api/v1/activations/" + id + "/waitpoints/" + wp
			tc.decision["tool_call_id"] = call["tool_call_id"]
			body := map[string]any{"decisions": []any{tc.decision}}
			e.do("POST", path, body, bearer(other)).expect(t, 404)
			e.do("POST", "/api/v1/activations/"+id+"/waitpoints/"+id, body, bearer(tok)).expect(t, 404)
			e.do("POST", path, map[string]any{"decisions": []any{}}, bearer(tok)).expect(t, 400)
			e.do("POST", path, map[string]any{"decisions": []any{map[string]any{"tool_call_id": "nope", "type": "approve"}}}, bearer(tok)).expect(t, 400)
			a := e.do("POST", path, body, bearer(tok)).expect(t, 202)
			require.Nil(t, a.JSON["waiting"])
			e.do("POST", path, body, bearer(tok)).expect(t, 409)

			r = e.waitFor(tok, id, func(r *resp) bool { return r.str("status") == "completed" })
			require.Contains(t, r.JSON["output_data"].(map[string]any)["response"], tc.want)
			st := steps(e, tok, id)
			require.Equal(t, "wait", st[2]["kind"])
			require.Equal(t, "completed", st[2]["status"])
		}
	})
}

// TestClientToolWaitsForItsCaller: a client tool's result comes from the
// caller through the waitpoint, and goes to the model.
func TestClientToolWaitsForItsCaller(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("client@example.com")
		appID := e.importManifest(tok, toolsManifest([]map[string]any{{"type": "client", "name": "pick_date", "description": "Ask the user for a date",
			"parameters": map[string]any{"type": "object"}}}, nil)).expect(t, 201).str("app_id")
		clerk := e.agentNamed(tok, appID, "clerk")

		// answered runs the tool, has its caller answer result, and returns
		// the run once it has completed.
		answered := func(result map[string]any) (string, *resp) {
			id := e.activateWait(tok, clerk, `call pick_date {}`).str("activation_id")
			w, call := e.waitingOf(tok, id)
			require.Equal(t, "tool_result", w["kind"])
			e.answerWait(tok, id, w, map[string]any{"decisions": []any{map[string]any{"tool_call_id": call, "type": "approve"}}}).expect(t, 400)
			result["tool_call_id"] = call
			e.answerWait(tok, id, w, map[string]any{"results": []any{result}}).expect(t, 202)
			return id, e.waitFor(tok, id, func(r *resp) bool { return r.str("status") == "completed" })
		}
		_, r := answered(map[string]any{"output": "2026-12-01"})
		require.Contains(t, r.JSON["output_data"].(map[string]any)["response"], "2026-12-01")

		// A client that could not run its tool answers an error: the model
		// is told, as of any failing tool, and the step failed.
		id, r := answered(map[string]any{"error": "The user closed the date picker"})
		require.Contains(t, r.JSON["output_data"].(map[string]any)["response"], "The user closed the date picker")
		st := steps(e, tok, id)
		require.Equal(t, "failed", st[1]["status"])
		require.Equal(t, "The user closed the date picker", st[1]["error"])
	})
}

// TestWaitingRunsHoldNoSlot: with one run in flight allowed, three runs
// wait for approvals at once and a fourth, plain one still completes;
// then the approvals let the three finish.
func TestWaitingRunsHoldNoSlot(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, map[string]string{"AP_MAX_INFLIGHT": "1", "AP_WORKERS": "1"})
		tok := e.signup("slots@example.com")
		appID := e.importManifest(tok, toolsManifest([]map[string]any{{"type": "function", "function": "lookup", "approval": "always"}}, nil)).
			expect(t, 201).str("app_id")
		clerk := e.agentNamed(tok, appID, "clerk")

		waiting := map[string]map[string]any{}
		for i := range 3 {
			id := e.activateWait(tok, clerk, fmt.Sprintf(`call lookup {"email":"%d@example.com"}`, i)).str("activation_id")
			waiting[id], _ = e.waitingOf(tok, id)
		}
		plain := e.activateWait(tok, clerk, "hello").str("activation_id")
		require.Equal(t, "completed", e.waitFor(tok, plain, func(r *resp) bool { return r.str("status") != "queued" && r.str("status") != "running" }).str("status"))

		for id, w := range waiting {
			call := w["tool_calls"].([]any)[0].(map[string]any)["tool_call_id"]
			e.answerWait(tok, id, w, map[string]any{"decisions": []any{map[string]any{"tool_call_id": call, "type": "approve"}}}).expect(t, 202)
		}
		for id := range waiting {
			require.Equal(t, "completed", e.waitFor(tok, id, func(r *resp) bool { return r.str("status") != "running" }).str("status"))
		}
	})
}

// TestWaitEndsInTime: an approval nobody gives is a rejection with "No
// decision in time" once the tool's timeout_seconds have passed; a client
// tool's missing result fails the run.
func TestWaitEndsInTime(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("late@example.com")
		appID := e.importManifest(tok, toolsManifest([]map[string]any{
			{"type": "function", "function": "lookup", "approval": "always", "timeout_seconds": 1},
			{"type": "client", "name": "pick_date", "timeout_seconds": 1},
		}, nil)).expect(t, 201).str("app_id")
		clerk := e.agentNamed(tok, appID, "clerk")

		// Both wait at once: River's scheduler makes each timeout's job
		// available within seconds of its time.
		approval := e.activateWait(tok, clerk, `call lookup {"email":"ada@example.com"}`).str("activation_id")
		client := e.activateWait(tok, clerk, `call pick_date {}`).str("activation_id")
		r := e.waitFor(tok, approval, func(r *resp) bool { return r.str("status") == "completed" })
		require.Contains(t, r.JSON["output_data"].(map[string]any)["response"], "No decision in time")
		r = e.waitFor(tok, client, func(r *resp) bool { return r.str("status") == "failed" })
		require.Equal(t, "No result in time for pick_date", r.str("error"))
	})
}

// TestCancelEndsAWait: cancelling a waiting run ends it; its waitpoint
// then answers 409.
func TestCancelEndsAWait(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("cancelwait@example.com")
		appID := e.importManifest(tok, toolsManifest([]map[string]any{{"type": "client", "name": "pick_date"}}, nil)).expect(t, 201).str("app_id")
		clerk := e.agentNamed(tok, appID, "clerk")
		id := e.activateWait(tok, clerk, `call pick_date {}`).str("activation_id")
		r := e.waitFor(tok, id, func(r *resp) bool { return r.JSON["waiting"] != nil })
		w := r.JSON["waiting"].(map[string]any)
		e.do("POST", "/api/v1/activations/"+id+"/cancel", nil, bearer(tok)).expect(t, 200)
		call := w["tool_calls"].([]any)[0].(map[string]any)
		e.do("POST", "/api/v1/activations/"+id+"/waitpoints/"+w["waitpoint_id"].(string),
			map[string]any{"results": []any{map[string]any{"tool_call_id": call["tool_call_id"], "output": 1}}}, bearer(tok)).expect(t, 409)
		r = e.do("GET", "/api/v1/activations/"+id, nil, bearer(tok)).expect(t, 200)
		require.Equal(t, "failed", r.str("status"))
		require.Nil(t, r.JSON["waiting"])
	})
}

// TestWaitIsPostedToTheWebhook: whoever gets the end by webhook gets the
// wait first, with the activation's waiting: it may be theirs to answer.
func TestWaitIsPostedToTheWebhook(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("hooked@example.com")
		appID := e.importManifest(tok, toolsManifest([]map[string]any{{"type": "client", "name": "pick_date"}}, nil)).expect(t, 201).str("app_id")
		clerk := e.agentNamed(tok, appID, "clerk")
		bodies := make(chan map[string]any, 4)
		rcv := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var ev map[string]any
			_ = json.NewDecoder(r.Body).Decode(&ev)
			bodies <- ev
		}))
		id := e.do("POST", "/api/v1/activations", map[string]any{"agent_id": clerk, "input_data": map[string]any{"prompt": "call pick_date {}"},
			"metadata": map[string]any{"webhook_url": rcv.URL + "/hook"}}, bearer(tok)).expect(t, 201).str("activation_id")

		next := func() map[string]any {
			select {
			case ev := <-bodies:
				return ev
			case <-time.After(20 * time.Second):
				t.Fatal("no delivery")
				return nil
			}
		}
		ev := next()
		require.Equal(t, "activation_waiting", ev["type"])
		require.Equal(t, id, ev["activation_id"])
		w := ev["waiting"].(map[string]any)
		call := w["tool_calls"].([]any)[0].(map[string]any)
		e.do("POST", "/api/v1/activations/"+id+"/waitpoints/"+w["waitpoint_id"].(string),
			map[string]any{"results": []any{map[string]any{"tool_call_id": call["tool_call_id"], "output": "Tuesday"}}}, bearer(tok)).expect(t, 202)
		ev = next()
		require.Equal(t, "activation_completed", ev["type"])
		require.Contains(t, ev["output_data"].(map[string]any)["response"], "Tuesday")
	})
}

// TestAWaitPausesTheRunsTimeout: a run that waits longer than its agent's
// timeout_seconds for an approval still goes on once approved: the wait
// does not count against its time.
func TestAWaitPausesTheRunsTimeout(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("paused@example.com")
		m := toolsManifest([]map[string]any{{"type": "function", "function": "lookup", "approval": "always"}}, nil)
		// The run's own work (before the wait, and from the answer to its
		// end) must fit in the timeout on a loaded CI run under -race: 2 s
		// did not, once.
		m["agents"].([]map[string]any)[0]["timeout_seconds"] = 5
		appID := e.importManifest(tok, m).expect(t, 201).str("app_id")
		clerk := e.agentNamed(tok, appID, "clerk")

		r := e.activateWait(tok, clerk, `call lookup {"email":"ada@example.com"}`)
		id := r.str("activation_id")
		w := r.JSON["waiting"].(map[string]any)
		time.Sleep(5500 * time.Millisecond) //nolint:forbidigo // the wait must outlast the agent's timeout
		call := w["tool_calls"].([]any)[0].(map[string]any)
		e.do("POST", "/api/v1/activations/"+id+"/waitpoints/"+w["waitpoint_id"].(string),
			map[string]any{"decisions": []any{map[string]any{"tool_call_id": call["tool_call_id"], "type": "approve"}}}, bearer(tok)).expect(t, 202)
		done := e.await(tok, id)
		require.Equal(t, "completed", done.str("status"), done.str("error"))
	})
}
