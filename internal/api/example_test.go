package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestExampleCustomAgentFunctionPipeline is the README's walkthrough of
// examples/support-desk.json over HTTP: the custom agent records a ticket
// in the app's data and asks the LLM (echo) for its summary, the function
// normalizes a ticket, and the pipeline runs the function into the agent.
func TestExampleCustomAgentFunctionPipeline(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		session := e.signup("ada@example.com")
		key := e.keyWith(session, "read:all", "write:all")
		imported := e.importManifest(key, exampleManifest(t)).expect(t, 201)
		require.Equal(t, map[string]any{"agents": 3.0, "models": 1.0, "functions": 3.0, "pipelines": 1.0, "authenticators": 1.0},
			imported.JSON["created"])
		appID := imported.str("app_id")
		var router string
		for _, a := range list(e.do("GET", "/api/v1/apps/"+appID+"/agents", nil, bearer(key)).expect(t, 200), "agents") {
			if a["name"] == "escalation-router" {
				router = a["agent_id"].(string)
			}
		}
		require.NotEmpty(t, router)

		// The custom agent: a new ticket is recorded, summarized by the LLM
		// and routed.
		id := e.do("POST", "/api/v1/agents/"+router+"/activate", map[string]any{"input_data": map[string]any{
			"subject": "Refund for a double charge", "body": "I was charged twice this month.",
			"customer_email": "grace@example.com", "priority": "high"}}, bearer(key)).expect(t, 201).str("activation_id")
		done := e.await(key, id)
		require.Equal(t, "completed", done.str("status"), done.str("error"))
		out := done.JSON["output_data"].(map[string]any)
		summary := "echo: Refund for a double charge"
		require.Equal(t, "billing", out["team"])
		require.Equal(t, false, out["escalated"])
		require.Equal(t, summary, out["summary"], "the summary is the LLM's answer (echo repeats the prompt)")
		require.Equal(t, 1.0, out["customer_tickets"])
		itemID := out["item_id"].(string)

		// The record it wrote, in the app's data.
		tickets := "/api/v1/data/" + appID + "/tickets"
		page := e.do("GET", tickets, nil, bearer(key)).expect(t, 200)
		require.Equal(t, 1.0, page.JSON["total_count"])
		rec := list(page, "items")[0]
		require.Equal(t, itemID, rec["item_id"])
		require.Equal(t, map[string]any{"subject": "Refund for a double charge", "body": "I was charged twice this month.",
			"customer_email": "grace@example.com", "priority": "high", "team": "billing", "summary": summary, "escalated": false},
			rec["data"])
		require.Equal(t, rec["data"], e.do("GET", tickets+"/"+itemID, nil, bearer(key)).expect(t, 200).JSON["data"])

		// Its log, and the LLM call it made.
		logs := e.do("GET", "/api/v1/activations/"+id+"/logs", nil, bearer(key)).expect(t, 200)
		lines := list(logs, "logs")
		require.Len(t, lines, 1)
		require.Equal(t, "ticket "+itemID+" goes to billing", lines[0]["message"])
		require.Equal(t, "info", lines[0]["level"])
		require.Equal(t, false, logs.JSON["truncated"])

		// A ticket already recorded, routed again by item_id (ctx.data.get).
		again := e.await(key, e.do("POST", "/api/v1/agents/"+router+"/activate", map[string]any{"input_data": map[string]any{
			"item_id": itemID}}, bearer(key)).expect(t, 201).str("activation_id"))
		require.Equal(t, "completed", again.str("status"), again.str("error"))
		require.Equal(t, itemID, again.JSON["output_data"].(map[string]any)["item_id"])
		missing := e.await(key, e.do("POST", "/api/v1/agents/"+router+"/activate", map[string]any{"input_data": map[string]any{
			"item_id": "00000000-0000-7000-8000-000000000000"}}, bearer(key)).expect(t, 201).str("activation_id"))
		require.Equal(t, "failed", missing.str("status"))
		require.Contains(t, missing.str("error"), "no ticket 00000000-0000-7000-8000-000000000000")
		// A ticket that fails the model's validation fails the run, naming the field.
		invalid := e.await(key, e.do("POST", "/api/v1/agents/"+router+"/activate", map[string]any{"input_data": map[string]any{
			"subject": "s", "body": "b", "customer_email": "c@example.com", "priority": "asap"}}, bearer(key)).expect(t, 201).str("activation_id"))
		require.Equal(t, "failed", invalid.str("status"))
		require.Contains(t, invalid.str("error"), "data.priority")

		// The function.
		fn := e.functionID(key, appID, "normalize-ticket")
		ex := e.do("POST", "/api/v1/apps/"+appID+"/functions/"+fn+"/execute", map[string]any{"input": map[string]any{
			"subject": "  App crashes on login ", "body": " Error 500 since this morning. ", "customer_email": "Linus@Example.COM"}},
			bearer(key)).expect(t, 200)
		require.Equal(t, "completed", ex.str("status"), ex.str("error"))
		require.Equal(t, map[string]any{"subject": "App crashes on login", "body": "Error 500 since this morning.",
			"customer_email": "linus@example.com", "priority": "normal"}, ex.JSON["output"])

		// The pipeline: the function's output feeds the agent.
		pipes := list(e.do("GET", "/api/v1/pipelines?app_id="+appID, nil, bearer(key)).expect(t, 200), "pipelines")
		require.Len(t, pipes, 1)
		require.Equal(t, "intake", pipes[0]["name"])
		pipelineID := pipes[0]["pipeline_id"].(string)
		started := e.do("POST", "/api/v1/pipelines/"+pipelineID+"/run", map[string]any{"input": map[string]any{
			"subject": "  App crashes on login ", "body": " Error 500 since this morning. ", "customer_email": "Linus@Example.COM",
			"priority": "urgent"}}, bearer(key)).expect(t, 201)
		runID := started.str("run_id")
		run := e.awaitRun(key, runID)
		require.Equal(t, "completed", run.str("status"), "run: %s", run.Body)
		steps := list(run, "steps")
		require.Len(t, steps, 2)
		require.Equal(t, "normalize", steps[0]["id"])
		require.Equal(t, "completed", steps[0]["status"])
		require.NotEmpty(t, steps[0]["execution_id"])
		require.Equal(t, "route", steps[1]["id"])
		require.Equal(t, "completed", steps[1]["status"])
		routed := run.JSON["output"].(map[string]any)
		require.Equal(t, steps[1]["output"], routed, "the run's output is the last step's")
		require.Equal(t, "engineering", routed["team"])
		require.Equal(t, true, routed["escalated"], "urgent tickets are escalated")
		require.Equal(t, "echo: App crashes on login", routed["summary"])
		stored := e.do("GET", tickets+"/"+routed["item_id"].(string), nil, bearer(key)).expect(t, 200).JSON["data"].(map[string]any)
		require.Equal(t, "linus@example.com", stored["customer_email"], "the agent got the function's output")
		require.Equal(t, "App crashes on login", stored["subject"])
		require.Equal(t, "urgent", stored["priority"])
		activation := e.do("GET", "/api/v1/activations/"+steps[1]["activation_id"].(string), nil, bearer(key)).expect(t, 200)
		require.Equal(t, routed, activation.JSON["output_data"])

		runs := e.do("GET", "/api/v1/pipelines/runs?pipeline_id="+pipelineID, nil, bearer(key)).expect(t, 200)
		require.Equal(t, 1.0, runs.JSON["total_count"])
		require.Equal(t, runID, list(runs, "runs")[0]["run_id"])
		require.Equal(t, 2.0, e.do("GET", tickets, nil, bearer(key)).expect(t, 200).JSON["total_count"])
	})
}

// TestExampleFrontDeskUsesTools is the README's walkthrough of the
// example's front-desk: the echo model calls the two function tools and
// the escalate HTTP tool, which waits for a person's approval; the
// approval lets the run go on to its answer.
func TestExampleFrontDeskUsesTools(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		key := e.keyWith(e.signup("grace@example.com"), "read:all", "write:all")
		appID := e.importManifest(key, exampleManifest(t)).expect(t, 201).str("app_id")
		desk := e.agentNamed(key, appID, "front-desk")

		prompt := "call customer_tickets {\"customer_email\": \"grace@example.com\"}\n" +
			"call record_ticket {\"subject\": \"Charged twice\", \"body\": \"Two charges for one order.\", \"customer_email\": \"grace@example.com\", \"priority\": \"high\"}\n" +
			"call escalate {\"customer_email\": \"grace@example.com\", \"reason\": \"double charge\"}"
		r := e.do("POST", "/api/v1/apps/"+appID+"/agents/"+desk+"/activate", map[string]any{"input_data": map[string]any{"prompt": prompt}},
			bearer(key), header("Prefer", "wait=10")).expect(t, 201)
		require.Equal(t, "running", r.str("status"), "create-and-wait answers once the run waits")
		id := r.str("activation_id")
		w := r.JSON["waiting"].(map[string]any)
		require.Equal(t, "approval", w["kind"])
		call := w["tool_calls"].([]any)[0].(map[string]any)
		require.Equal(t, "escalate", call["name"])
		require.Equal(t, "call_1_3", call["tool_call_id"])
		require.Equal(t, []string{"llm:completed", "tool:completed", "tool:completed", "tool:waiting", "wait:waiting"}, kinds(steps(e, key, id)))
		recorded := steps(e, key, id)[2]["output"].(map[string]any)
		require.Equal(t, "Charged twice", recorded["subject"])

		e.do("POST", "/api/v1/activations/"+id+"/waitpoints/"+w["waitpoint_id"].(string),
			map[string]any{"decisions": []any{map[string]any{"tool_call_id": "call_1_3", "type": "approve"}}}, bearer(key)).expect(t, 202)
		done := e.await(key, id)
		require.Equal(t, "completed", done.str("status"), done.str("error"))
		out := done.JSON["output_data"].(map[string]any)
		require.EqualValues(t, 6, out["steps"])
		st := steps(e, key, id)
		require.EqualValues(t, 0, st[1]["output"].(map[string]any)["total"], "the lookup ran first (parallel_tool_calls false): no tickets before")
		require.Equal(t, []string{"llm:completed", "tool:completed", "tool:completed", "tool:failed", "wait:completed", "llm:completed"}, kinds(st))
		// helpdesk.example.com is a placeholder: the call fails and the
		// model is told, as it would be of any failing tool.
		require.Contains(t, st[3]["error"], "helpdesk.example.com")

		// The ticket was recorded once.
		items := list(e.do("GET", "/api/v1/data/"+appID+"/tickets", nil, bearer(key)).expect(t, 200), "items")
		require.Len(t, items, 1)
	})
}
