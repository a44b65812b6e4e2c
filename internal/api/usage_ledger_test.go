package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/pricing"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// ledger is the usage ledger's records of activation id.
func (e *env) ledger(id string) []store.UsageRecord {
	e.t.Helper()
	recs, err := e.srv.Store.UsageRecordsOf(context.Background(), id)
	require.NoError(e.t, err)
	return recs
}

// usageOf decodes a step's or an output's usage.
func usageOf(t *testing.T, v any) llm.Usage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var u llm.Usage
	require.NoError(t, json.Unmarshal(b, &u))
	return u
}

// requireTokens checks that r holds u's tokens.
func requireTokens(t *testing.T, u llm.Usage, r store.UsageRecord) {
	t.Helper()
	require.Equal(t, []int64{int64(u.PromptTokens), int64(u.CompletionTokens), int64(u.CacheReadTokens), int64(u.CacheWriteTokens)},
		[]int64{r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens})
}

// TestUsageOfAPlainCompletion: an LLM agent's answer is one record, written
// with the activation's end: who (user, app, agent, activation, the API
// key it was made with), what (the provider, the model as answered, the
// tokens the provider reported, cache reads among the input) and its cost
// at the list price of the model its dated name starts with; /metrics
// counts the same tokens and cost.
func TestUsageOfAPlainCompletion(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		alice := e.signup("ledger@example.com")
		key, keyID := e.key(alice, map[string]any{"name": "k", "scopes": []string{"write:all", "read:all"}})
		fake := llmtest.NewOpenAI(t)
		fake.Queue(llmtest.Reply{Text: "one two three", CacheRead: 40})
		pid := e.do("POST", providersPath, map[string]any{"name": "oa", "provider_type": "openai", "base_url": fake.URL,
			"api_key": "sk-test", "models": []string{"gpt-4o-2024-08-06"}}, bearer(alice)).expect(t, 201).str("id")
		f := e.llmAgent(alice, map[string]any{"provider_id": pid, "model": "gpt-4o-2024-08-06"}, 30)

		id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "hello"}},
			bearer(key)).expect(t, 201).str("activation_id")
		done := e.await(key, id)
		require.Equal(t, "completed", done.str("status"), done.JSON)
		u := usageOf(t, done.JSON["output_data"].(map[string]any)["usage"])
		require.Equal(t, 40, u.CacheReadTokens)

		recs := e.ledger(id)
		require.Len(t, recs, 1)
		r := recs[0]
		me := e.do("GET", "/api/v1/users/me", nil, bearer(alice)).expect(t, 200).str("id")
		require.Equal(t, []any{me, f.appID, f.agentID, id, keyID, pid, "gpt-4o-2024-08-06"},
			[]any{r.UserID, r.AppID, r.AgentID, r.ActivationID, r.APIKeyID, r.Provider, r.Model})
		require.Nil(t, r.StepIndex, "no journal step")
		requireTokens(t, u, r)
		// gpt-4o: $2.50 a million input tokens, $1.25 cached, $10 output.
		want := pricing.Defaults["gpt-4o"].Cost(u.Tokens())
		require.Equal(t, int64(float64(u.PromptTokens-40)*2.5+40*1.25+float64(u.CompletionTokens)*10+0.5), want)
		require.NotNil(t, r.CostMicroUSD)
		require.Equal(t, want, *r.CostMicroUSD)

		scrape := string(e.scrape())
		require.Contains(t, scrape, fmt.Sprintf(`agentplatform_llm_usage_tokens_total{model="gpt-4o-2024-08-06",provider="openai",type="cache_read"} 40`))
		require.Contains(t, scrape, fmt.Sprintf(`agentplatform_llm_usage_tokens_total{model="gpt-4o-2024-08-06",provider="openai",type="input"} %d`, u.PromptTokens))
		require.Contains(t, scrape, `agentplatform_llm_cost_usd_total{model="gpt-4o-2024-08-06",provider="openai"}`)

		// Echo is unpriced: its record has no cost, not 0.
		g := e.llmAgent(alice, nil, 30)
		id = e.do("POST", "/api/v1/agents/"+g.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "hi"}},
			bearer(alice)).expect(t, 201).str("activation_id")
		require.Equal(t, "completed", e.await(alice, id).str("status"))
		recs = e.ledger(id)
		require.Len(t, recs, 1)
		require.Equal(t, "echo", recs[0].Provider)
		require.Nil(t, recs[0].CostMicroUSD)
		require.Zero(t, recs[0].APIKeyID, "made with a session")
	})
}

// TestUsageOfEveryToolLoopStep: each LLM step of a tool loop is a record
// of its own, with the step's index and the step's usage; the agent the
// loop calls as a tool runs as a child whose calls count to the key its
// parent was made with.
func TestUsageOfEveryToolLoopStep(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("loopledger@example.com")
		key, keyID := e.key(tok, map[string]any{"name": "k", "scopes": []string{"write:all", "read:all"}})
		echo := map[string]any{"provider_id": "echo", "model": "echo"}
		m := map[string]any{"name": "Ledger", "slug": "ledger", "version": "1.0.0",
			"agents": []map[string]any{
				{"name": "helper", "agent_type_id": "llm", "timeout_seconds": 30, "agent_config": echo},
				{"name": "clerk", "agent_type_id": "llm", "timeout_seconds": 30, "agent_config": map[string]any{
					"provider_id": "echo", "model": "echo", "tools": []map[string]any{{"type": "agent", "agent": "helper"}}}},
			}}
		appID := e.importManifest(tok, m).expect(t, 201).str("app_id")
		clerk := e.agentNamed(tok, appID, "clerk")

		r := e.activateWait(key, clerk, `call helper {"prompt":"child question"}`)
		require.Equal(t, "completed", r.str("status"), r.JSON)
		id := r.str("activation_id")
		st := steps(e, tok, id)
		require.Equal(t, []string{"llm:completed", "tool:completed", "llm:completed"}, kinds(st))

		recs := e.ledger(id)
		require.Len(t, recs, 2)
		for i, si := range []int{0, 2} {
			require.NotNil(t, recs[i].StepIndex)
			require.Equal(t, si, *recs[i].StepIndex)
			requireTokens(t, usageOf(t, st[si]["usage"]), recs[i])
			require.Equal(t, keyID, recs[i].APIKeyID)
			require.Equal(t, "echo", recs[i].Provider)
			require.Nil(t, recs[i].CostMicroUSD)
		}

		// The child: one record, its own activation's, the parent's key.
		var child string
		for _, a := range list(e.do("GET", "/api/v1/activations", nil, bearer(tok)).expect(t, 200), "activations") {
			if a["activation_id"] != id {
				child = a["activation_id"].(string)
			}
		}
		require.NotEmpty(t, child)
		recs = e.ledger(child)
		require.Len(t, recs, 1)
		require.Equal(t, keyID, recs[0].APIKeyID, "a child counts to its parent's key")
		require.Equal(t, e.agentNamed(tok, appID, "helper"), recs[0].AgentID)
	})
}

// TestUsageOfJavaScriptCompletions: every ctx.llm.complete of a
// JavaScript agent is a record, with the run's activation and key.
func TestUsageOfJavaScriptCompletions(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("jsledger@example.com")
		key, keyID := e.key(tok, map[string]any{"name": "k", "scopes": []string{"write:all", "read:all"}})
		fake := llmtest.NewAnthropic(t)
		fake.Queue(llmtest.Reply{Text: "a b", CacheRead: 7, CacheWrite: 3}, llmtest.Reply{Text: "c"})
		pid := e.do("POST", providersPath, map[string]any{"name": "claude", "provider_type": "anthropic", "base_url": fake.URL,
			"api_key": "sk-ant", "models": []string{"claude-haiku-4-5"},
			"prices": map[string]any{"claude-haiku-4-5": map[string]any{"input": 2, "output": 10}}}, bearer(tok)).expect(t, 201).str("id")
		ag := e.jsAgent(tok, `async function run(input, ctx) {
			const a = await ctx.llm.complete({provider_id: input.provider, prompt: "first"});
			const b = await ctx.llm.complete({provider_id: input.provider, prompt: "second"});
			return {a: a.usage, b: b.usage};
		}`, 30)
		id := e.activateJS(key, ag, map[string]any{"provider": pid})
		done := e.await(key, id)
		require.Equal(t, "completed", done.str("status"), done.JSON)
		out := done.JSON["output_data"].(map[string]any)

		recs := e.ledger(id)
		require.Len(t, recs, 2)
		for i, name := range []string{"a", "b"} {
			u := usageOf(t, out[name])
			requireTokens(t, u, recs[i])
			require.Nil(t, recs[i].StepIndex)
			require.Equal(t, []any{keyID, ag.agentID, ag.appID, pid}, []any{recs[i].APIKeyID, recs[i].AgentID, recs[i].AppID, recs[i].Provider})
			// The provider's own price: $2 input (cache reads and writes
			// too: it states none for them), $10 output.
			require.Equal(t, int64(u.PromptTokens*2+u.CompletionTokens*10), *recs[i].CostMicroUSD)
		}
		require.Equal(t, []int64{7, 3}, []int64{recs[0].CacheReadTokens, recs[0].CacheWriteTokens})
	})
}

// TestUsageOfTheOpenAIEndpointAndMCP: a chat completion of the
// OpenAI-compatible endpoint and an MCP tool call of an agent are
// activations: each is one record, counting to the key that made it.
func TestUsageOfTheOpenAIEndpointAndMCP(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("reachledger@example.com")
		key, keyID := e.key(tok, map[string]any{"name": "k", "scopes": []string{"write:all", "read:all"}})
		f := e.llmAgent(tok, nil, 30)
		e.do("POST", "/api/v1/openai/chat/completions", map[string]any{"model": e.openaiModel(tok, f),
			"messages": []any{map[string]any{"role": "user", "content": "via openai"}}}, bearer(key)).expect(t, 200)
		e.do("POST", "/api/v1/apps/"+f.appID+"/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"name": "triage", "arguments": map[string]any{"prompt": "via mcp"}}},
			bearer(key), header("Accept", "application/json, text/event-stream")).expect(t, 200)

		acts := list(e.do("GET", "/api/v1/activations", nil, bearer(tok)).expect(t, 200), "activations")
		require.Len(t, acts, 2)
		for _, a := range acts {
			id := a["activation_id"].(string)
			require.Equal(t, "completed", e.await(tok, id).str("status"))
			recs := e.ledger(id)
			require.Len(t, recs, 1, id)
			require.Equal(t, keyID, recs[0].APIKeyID)
			require.Equal(t, f.agentID, recs[0].AgentID)
		}
	})
}
