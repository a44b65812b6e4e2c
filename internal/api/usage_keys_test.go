package api_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestKeysOfFunctionsAndPipelines: a function executed directly and a
// pipeline run count their LLM calls (a function's ctx.llm.complete, a
// function step's, an agent step's) to the API key that started them; a
// spent key budget refuses both at the start with 429 BudgetExceededError.
func TestKeysOfFunctionsAndPipelines(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("keyed@example.com")
		me := e.do("GET", "/api/v1/users/me", nil, bearer(tok)).expect(t, 200).str("id")
		key, keyID := e.key(tok, map[string]any{"name": "k", "scopes": []string{"write:all", "read:all"}})
		appID := e.pipelineApp(tok)
		fn := e.do("POST", "/api/v1/functions", map[string]any{"app_id": appID, "name": "asks", "timeout_seconds": 30,
			"input_schema": map[string]any{"type": "object"},
			"code": `async function run(input, ctx) {
				const a = await ctx.llm.complete({provider_id: "echo", prompt: "hello " + input.who});
				return {text: a.text};
			}`}, bearer(tok)).expect(t, 201).str("id")
		keyCalls := func() float64 {
			r := e.do("GET", "/api/v1/usage?group_by=key&api_key_id="+strconv.FormatInt(keyID, 10), nil, bearer(tok)).expect(t, 200)
			rows := list(r, "rows")
			if len(rows) == 0 {
				return 0
			}
			require.Len(t, rows, 1)
			require.Equal(t, strconv.FormatInt(keyID, 10), rows[0]["key"])
			return rows[0]["calls"].(float64)
		}

		r := e.do("POST", "/api/v1/functions/"+fn+"/execute", map[string]any{"input": map[string]any{"who": "ada"}}, bearer(key)).expect(t, 200)
		require.Equal(t, "completed", r.str("status"), r.JSON)
		require.Equal(t, 1.0, keyCalls(), "a direct function's ctx.llm.complete counts to its key")

		p := e.createPipeline(tok, appID, "keyed", step("ask", "function", "asks", map[string]any{"who": "{{input.who}}"}),
			step("think", "agent", "llm", map[string]any{"prompt": "{{steps.ask.output.text}}"}))
		run := e.awaitRun(tok, e.runPipeline(key, p, map[string]any{"who": "bob"}).str("run_id"))
		require.Equal(t, "completed", run.str("status"), run.JSON)
		require.Equal(t, 3.0, keyCalls(), "a pipeline's function step and agent step count to its key")
		e.do("POST", "/api/v1/functions/"+fn+"/execute", map[string]any{"input": map[string]any{"who": "me"}}, bearer(tok)).expect(t, 200)
		require.Equal(t, 3.0, keyCalls(), "a session's calls are no key's")

		// The function as an agent's tool: the agent's two LLM calls and the
		// function's count to the key that activated the agent.
		clerk := e.do("POST", "/api/v1/apps/"+appID+"/agents", map[string]any{"name": "clerk", "agent_type_id": "llm", "version": "1.0.0",
			"agent_config": map[string]any{"provider_id": "echo", "model": "echo", "tools": []map[string]any{{"type": "function", "function": "asks"}}}},
			bearer(tok)).expect(t, 201).str("agent_id")
		r = e.activateWait(key, clerk, `call asks {"who":"tool"}`)
		require.Equal(t, "completed", r.str("status"), r.JSON)
		require.Equal(t, 6.0, keyCalls(), "a function run as a tool counts to the key of its agent's activation")

		// A spent key budget refuses the key's function runs and pipeline
		// runs, not the session's.
		budget := e.do("POST", "/api/v1/budgets", map[string]any{"scope": "key", "scope_id": strconv.FormatInt(keyID, 10), "period": "day",
			"limit_usd": 0.5}, bearer(tok)).expect(t, 201).str("id")
		e.spend(me, appID, "", keyID, "gpt-5", micro(600_000), time.Now())
		r = e.do("POST", "/api/v1/functions/"+fn+"/execute", map[string]any{"input": map[string]any{"who": "ada"}}, bearer(key)).expect(t, 429)
		require.Equal(t, "BudgetExceededError", r.str("error_type"))
		require.Contains(t, r.str("detail"), budget)
		r = e.do("POST", "/api/v1/pipelines/"+p+"/run", map[string]any{"input": map[string]any{"who": "bob"}}, bearer(key)).expect(t, 429)
		require.Equal(t, "BudgetExceededError", r.str("error_type"))
		require.Contains(t, r.str("detail"), budget)
		e.do("POST", "/api/v1/functions/"+fn+"/execute", map[string]any{"input": map[string]any{"who": "me"}}, bearer(tok)).expect(t, 200)
	})
}
