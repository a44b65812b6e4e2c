package api_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/usage"
)

// spend records an LLM call in the ledger, as the runtimes do once a call
// is answered; cost nil is an unpriced call.
func (e *env) spend(userID, appID, agentID string, keyID int64, model string, cost *int64, at time.Time) {
	e.t.Helper()
	require.NoError(e.t, e.srv.Store.UsageInsert(context.Background(), &store.UsageRecord{ID: uuid.NewString(), UserID: userID,
		AppID: appID, AgentID: agentID, APIKeyID: keyID, Provider: "openai", Model: model, InputTokens: 100, OutputTokens: 10,
		CostMicroUSD: cost, CreatedAt: at}))
}

func micro(n int64) *int64 { return &n }

// TestUsageReport: the caller's usage by day, agent, model and key, with
// unpriced calls told apart; bad bounds are 400s naming the field; another
// user's usage is absent but to an admin with a reason, audited.
func TestUsageReport(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		admin := e.signup("admin-usage@example.com")
		tok := e.signup("usage@example.com")
		me := e.do("GET", "/api/v1/users/me", nil, bearer(tok)).expect(t, 200).str("id")
		a, b := e.llmAgent(tok, nil, 0), e.llmAgent(tok, nil, 0)
		day := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
		e.spend(me, a.appID, a.agentID, 7, "gpt-5", micro(1_500_000), day.Add(10*time.Hour))
		e.spend(me, a.appID, a.agentID, 7, "gpt-5", micro(500_000), day.Add(34*time.Hour))
		e.spend(me, b.appID, b.agentID, 0, "local", nil, day.Add(35*time.Hour))
		e.spend(me, a.appID, a.agentID, 0, "gpt-5", micro(1), day.AddDate(0, 1, 0)) // outside the month

		q := "/api/v1/usage?from=2026-11-01&to=2026-11-30"
		r := e.do("GET", q, nil, bearer(tok)).expect(t, 200)
		require.Equal(t, []map[string]any{
			{"key": "2026-11-03", "calls": 1.0, "input_tokens": 100.0, "output_tokens": 10.0, "cost_usd": 1.5, "unpriced_calls": 0.0},
			{"key": "2026-11-04", "calls": 2.0, "input_tokens": 200.0, "output_tokens": 20.0, "cost_usd": 0.5, "unpriced_calls": 1.0},
		}, list(r, "rows"))
		require.Equal(t, map[string]any{"key": "", "calls": 3.0, "input_tokens": 300.0, "output_tokens": 30.0, "cost_usd": 2.0, "unpriced_calls": 1.0},
			r.JSON["total"])
		byAgent := list(e.do("GET", q+"&group_by=agent", nil, bearer(tok)).expect(t, 200), "rows")
		require.Len(t, byAgent, 2)
		require.Equal(t, a.agentID, byAgent[0]["key"], "dearest first")
		require.Equal(t, b.agentID, byAgent[1]["key"])
		require.Nil(t, byAgent[1]["cost_usd"], "no call priced: no cost, never a fake 0")
		byKey := list(e.do("GET", q+"&group_by=key&app_id="+a.appID, nil, bearer(tok)).expect(t, 200), "rows")
		require.Equal(t, []any{"7"}, []any{byKey[0]["key"]})
		byModel := list(e.do("GET", q+"&group_by=model&agent_id="+b.agentID, nil, bearer(tok)).expect(t, 200), "rows")
		require.Len(t, byModel, 1)
		require.Equal(t, "local", byModel[0]["key"])
		// Times: [from, to) leaves out a call at 10:00 on the 3rd and one at 10:00 on the 4th.
		r = e.do("GET", "/api/v1/usage?from=2026-11-03T10:00:01Z&to=2026-11-04T10:00:00Z", nil, bearer(tok)).expect(t, 200)
		require.Empty(t, list(r, "rows"), "the bounds are times: [from, to)")

		for _, tc := range []struct{ query, field string }{
			{"from=yesterday", "from"}, {"to=2026-13-01", "to"}, {"from=2026-11-05&to=2026-11-01", "to"}, {"group_by=week", "group_by"},
		} {
			r := e.do("GET", "/api/v1/usage?"+tc.query, nil, bearer(tok)).expect(t, 400)
			require.Contains(t, r.str("detail"), tc.field, tc.query)
		}

		// Another user's usage: absent, even to an admin without a reason.
		require.Empty(t, list(e.do("GET", q, nil, bearer(admin)).expect(t, 200), "rows"))
		e.do("GET", q+"&user_id="+me, nil, bearer(admin)).expect(t, 404)
		other := e.signup("other-usage@example.com")
		e.do("GET", q+"&user_id="+me, nil, bearer(other), header("X-Admin-Reason", "curious")).expect(t, 404)
		r = e.do("GET", q+"&user_id="+me, nil, bearer(admin), header("X-Admin-Reason", "support ticket 42")).expect(t, 200)
		require.Len(t, list(r, "rows"), 2)
		audit := list(e.do("GET", "/api/v1/users/audit-log", nil, bearer(admin)).expect(t, 200), "entries")
		require.NotEmpty(t, audit)
		require.Equal(t, "usage.read", audit[0]["action"])
		require.Equal(t, "support ticket 42", audit[0]["reason"])

		// A key bound to app a sees a's usage only.
		bound, _ := e.key(tok, map[string]any{"name": "bound", "scopes": []string{"app:access"}, "app_id": a.appID})
		r = e.do("GET", q+"&group_by=app", nil, bearer(bound)).expect(t, 200)
		require.Equal(t, a.appID, list(r, "rows")[0]["key"])
		require.Len(t, list(r, "rows"), 1)
		e.do("GET", q+"&app_id="+b.appID, nil, bearer(bound)).expect(t, 404)
	})
}

// TestBudgetsAPI: CRUD with validation naming the field; another user's
// budget is absent; a spent budget refuses activate with a 429 naming it,
// on the OpenAI endpoint too in OpenAI's shape; and a run whose next LLM
// call would start over budget fails with that error.
func TestBudgetsAPI(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("budgets@example.com")
		me := e.do("GET", "/api/v1/users/me", nil, bearer(tok)).expect(t, 200).str("id")
		other := e.signup("other-budgets@example.com")
		a := e.llmAgent(tok, nil, 0)

		for _, tc := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"scope": "team", "period": "day", "limit_usd": 1}, "scope"},
			{map[string]any{"scope": "user", "period": "week", "limit_usd": 1}, "period"},
			{map[string]any{"scope": "user", "period": "day", "limit_usd": 0}, "limit_usd"},
			{map[string]any{"scope": "app", "period": "day", "limit_usd": 1}, "scope_id"},
			{map[string]any{"scope": "key", "scope_id": "abc", "period": "day", "limit_usd": 1}, "scope_id"},
		} {
			r := e.do("POST", "/api/v1/budgets", tc.body, bearer(tok)).expect(t, 400)
			require.Contains(t, r.str("detail"), tc.field)
		}
		e.do("POST", "/api/v1/budgets", map[string]any{"scope": "app", "scope_id": a.appID, "period": "day", "limit_usd": 1}, bearer(other)).expect(t, 404)

		r := e.do("POST", "/api/v1/budgets", map[string]any{"scope": "app", "scope_id": a.appID, "period": "month", "limit_usd": 2}, bearer(tok)).expect(t, 201)
		id := r.str("id")
		require.Equal(t, 2.0, r.JSON["limit_usd"])
		require.Equal(t, 0.0, r.JSON["spent_usd"])
		e.do("GET", "/api/v1/budgets/"+id, nil, bearer(other)).expect(t, 404)
		e.do("PATCH", "/api/v1/budgets/"+id, map[string]any{"limit_usd": 9}, bearer(other)).expect(t, 404)
		e.do("DELETE", "/api/v1/budgets/"+id, nil, bearer(other)).expect(t, 404)
		require.Empty(t, list(e.do("GET", "/api/v1/budgets", nil, bearer(other)).expect(t, 200), "budgets"))
		got := list(e.do("GET", "/api/v1/budgets", nil, bearer(tok)).expect(t, 200), "budgets")
		require.Len(t, got, 1)

		// Activations run while the budget lasts.
		run := func() string {
			return e.do("POST", "/api/v1/agents/"+a.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "p"}},
				bearer(tok)).expect(t, 201).str("activation_id")
		}
		require.Equal(t, "completed", e.await(tok, run()).str("status"))
		e.spend(me, a.appID, a.agentID, 0, "gpt-5", micro(2_000_000), time.Now())
		require.Equal(t, 2.0, e.do("GET", "/api/v1/budgets/"+id, nil, bearer(tok)).expect(t, 200).JSON["spent_usd"])
		r = e.do("POST", "/api/v1/agents/"+a.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "p"}}, bearer(tok)).expect(t, 429)
		require.Equal(t, "BudgetExceededError", r.str("error_type"))
		require.Contains(t, r.str("detail"), id)
		slug := e.do("GET", "/api/v1/apps/"+a.appID, nil, bearer(tok)).expect(t, 200).str("slug")
		r = e.do("POST", "/api/v1/openai/chat/completions", map[string]any{"model": slug + "/triage",
			"messages": []map[string]any{{"role": "user", "content": "hi"}}}, bearer(tok))
		require.Equal(t, 429, r.Status, r.Body)
		oe := r.JSON["error"].(map[string]any)
		require.Equal(t, "insufficient_quota", oe["code"])
		require.Contains(t, oe["message"], id)

		// Raised: activate works again; deleted: no budget applies.
		r = e.do("PATCH", "/api/v1/budgets/"+id, map[string]any{"limit_usd": 10, "period": "day"}, bearer(tok)).expect(t, 200)
		require.Equal(t, "day", r.str("period"))
		require.Equal(t, "completed", e.await(tok, run()).str("status"))
		e.do("DELETE", "/api/v1/budgets/"+id, nil, bearer(tok)).expect(t, 204)
		e.do("GET", "/api/v1/budgets/"+id, nil, bearer(tok)).expect(t, 404)
	})
}

// TestBudgetStopsAToolLoop: a run admitted under budget, whose budget is
// spent while it waits for an approval, fails at its next LLM call with
// the budget's error; its tool call ran, no LLM step follows it.
func TestBudgetStopsAToolLoop(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("loop-budget@example.com")
		me := e.do("GET", "/api/v1/users/me", nil, bearer(tok)).expect(t, 200).str("id")
		appID := e.importManifest(tok, toolsManifest([]map[string]any{{"type": "function", "function": "lookup", "approval": "always"}}, nil)).
			expect(t, 201).str("app_id")
		clerk := e.agentNamed(tok, appID, "clerk")
		budget := e.do("POST", "/api/v1/budgets", map[string]any{"scope": "user", "period": "day", "limit_usd": 0.5}, bearer(tok)).expect(t, 201).str("id")

		id := e.activateWait(tok, clerk, `call lookup {"email":"ada@example.com"}`).str("activation_id")
		r := e.waitFor(tok, id, func(r *resp) bool { return r.JSON["waiting"] != nil })
		w := r.JSON["waiting"].(map[string]any)
		call := w["tool_calls"].([]any)[0].(map[string]any)
		e.spend(me, appID, clerk, 0, "gpt-5", micro(600_000), time.Now()) // the budget runs out meanwhile
		e.do("POST", "/api/v1/activations/"+id+"/waitpoints/"+w["waitpoint_id"].(string),
			map[string]any{"decisions": []any{map[string]any{"tool_call_id": call["tool_call_id"], "type": "approve"}}}, bearer(tok)).expect(t, 202)
		r = e.await(tok, id)
		require.Equal(t, "failed", r.str("status"))
		require.Contains(t, r.str("error"), budget)
		require.Contains(t, r.str("error"), "exceeded")
		require.Equal(t, []string{"llm:completed", "tool:completed", "wait:completed"}, sortedKinds(steps(e, tok, id)))
	})
}

func sortedKinds(st []map[string]any) []string {
	k := kinds(st)
	for i := range k {
		for j := i + 1; j < len(k); j++ {
			if k[j] < k[i] {
				k[i], k[j] = k[j], k[i]
			}
		}
	}
	return k
}

// TestBudgetHoldsUnderConcurrentRuns: tool loops run at once against a
// small budget, each LLM call priced and in the ledger; once it is spent,
// every run fails at its next call, and the ledger's final spent exceeds
// the limit by no more than one call per run (the calls in flight when it
// ran out).
func TestBudgetHoldsUnderConcurrentRuns(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("concurrent-budget@example.com")
		me := e.do("GET", "/api/v1/users/me", nil, bearer(tok)).expect(t, 200).str("id")
		fake := llmtest.NewOpenAI(t)
		fake.SetDelay(20 * time.Millisecond)
		// The model calls the tool forever: only the budget (or the step
		// limit) ends a run.
		fake.SetScript(func(context.Context, llmtest.Recorded) (llmtest.Reply, bool) {
			return llmtest.Reply{ToolCalls: []llm.ToolCall{{Name: "lookup", Arguments: `{"email":"ada@example.com"}`}}}, true
		})
		pid := e.do("POST", providersPath, map[string]any{"name": "priced", "provider_type": "openai", "base_url": fake.URL,
			"api_key": "sk-test", "models": []string{"m"}, "prices": map[string]any{"m": map[string]any{"input": 100, "output": 0}}},
			bearer(tok)).expect(t, 201).str("id")
		appID := e.importManifest(tok, toolsManifest([]map[string]any{{"type": "function", "function": "lookup"}},
			map[string]any{"provider_id": pid, "model": "m", "max_steps": 50})).expect(t, 201).str("app_id")
		clerk := e.agentNamed(tok, appID, "clerk")
		const runs, limitUSD = 6, 0.02
		budget := e.do("POST", "/api/v1/budgets", map[string]any{"scope": "app", "scope_id": appID, "period": "day", "limit_usd": limitUSD},
			bearer(tok)).expect(t, 201).str("id")

		ids := make([]string, runs)
		for i := range ids {
			ids[i] = e.do("POST", "/api/v1/agents/"+clerk+"/activate", map[string]any{"input_data": map[string]any{"prompt": "look it up"}},
				bearer(tok)).expect(t, 201).str("activation_id")
		}
		stopped := 0
		for _, id := range ids {
			r := e.await(tok, id)
			require.Equal(t, "failed", r.str("status"), r.JSON)
			if strings.Contains(r.str("error"), budget) {
				stopped++
			}
		}
		require.Equal(t, runs, stopped, "every run stopped at the budget")
		var spent, maxCall int64
		for _, id := range ids {
			for _, rec := range e.ledger(id) {
				require.NotNil(t, rec.CostMicroUSD)
				spent += *rec.CostMicroUSD
				maxCall = max(maxCall, *rec.CostMicroUSD)
			}
		}
		limit := int64(limitUSD * 1e6)
		require.GreaterOrEqual(t, spent, limit)
		require.LessOrEqual(t, spent, limit+runs*maxCall, "overshoot: at most the calls in flight")
		t.Logf("%s: spent %d µUSD of %d, the dearest call %d, %d runs", d, spent, limit, maxCall, runs)
		rep := e.do("GET", "/api/v1/usage?group_by=app&user_id="+me, nil, bearer(tok)).expect(t, 200)
		require.InDelta(t, float64(spent)/1e6, rep.JSON["total"].(map[string]any)["cost_usd"], 1e-9, "the report sums the ledger")
		e.do("POST", "/api/v1/agents/"+clerk+"/activate", map[string]any{"input_data": map[string]any{"prompt": "p"}}, bearer(tok)).expect(t, 429)
	})
}

// warningsOf are the budget_warning events of user about budget id.
func (e *env) warningsOf(userID, budgetID string) []events.Event {
	e.t.Helper()
	var got []events.Event
	require.NoError(e.t, e.srv.Events.Replay(context.Background(), userID, 0, func(ev events.Event) bool {
		if ev.Type == usage.EventBudgetWarning && ev.Context["budget_id"] == budgetID {
			got = append(got, ev)
		}
		return true
	}))
	return got
}

// TestBudgetWarnsAtTheCrossingCall: the one LLM call of an activation that
// takes a budget from below 80 % to above is warned of as the activation
// ends, with no other check to come after it — whichever way the call is
// recorded: a plain completion's end, a tool loop's step, a script's
// ctx.llm.complete. Once per period: the next activation warns no more.
func TestBudgetWarnsAtTheCrossingCall(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("crossing@example.com")
		me := e.do("GET", "/api/v1/users/me", nil, bearer(tok)).expect(t, 200).str("id")
		fake := llmtest.NewOpenAI(t)
		pid := e.do("POST", providersPath, map[string]any{"name": "priced", "provider_type": "openai", "base_url": fake.URL,
			"api_key": "sk-test", "models": []string{"m"}, "prices": map[string]any{"m": map[string]any{"input": 100, "output": 100}}},
			bearer(tok)).expect(t, 201).str("id")
		cfg := map[string]any{"provider_id": pid, "model": "m"}
		tools := e.importManifest(tok, toolsManifest([]map[string]any{{"type": "function", "function": "lookup"}}, cfg)).
			expect(t, 201).str("app_id")
		js := e.jsAgent(tok, `async function run(input, ctx) {
			const a = await ctx.llm.complete({provider_id: input.provider, model: "m", prompt: "how much"});
			return {text: a.text};
		}`, 30)
		for _, tc := range []struct {
			name  string
			agent string
			input map[string]any
		}{
			{"completion", e.llmAgent(tok, cfg, 30).agentID, map[string]any{"prompt": "how much"}},
			{"tool loop", e.agentNamed(tok, tools, "clerk"), map[string]any{"prompt": "how much"}},
			{"script", js.agentID, map[string]any{"provider": pid}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				activate := func(token string) string {
					id := e.do("POST", "/api/v1/agents/"+tc.agent+"/activate", map[string]any{"input_data": tc.input}, bearer(token)).
						expect(t, 201).str("activation_id")
					r := e.await(token, id)
					require.Equal(t, "completed", r.str("status"), r.JSON)
					return id
				}
				// What the call costs, made with the session: no key's.
				recs := e.ledger(activate(tok))
				require.Len(t, recs, 1)
				require.NotNil(t, recs[0].CostMicroUSD)
				cost := *recs[0].CostMicroUSD
				// A key budget the call takes to 85 %.
				key, keyID := e.key(tok, map[string]any{"name": tc.name, "scopes": []string{"write:all", "read:all"}})
				limit := float64(cost) / 0.85 / 1e6
				budget := e.do("POST", "/api/v1/budgets", map[string]any{"scope": "key", "scope_id": strconv.FormatInt(keyID, 10),
					"period": "day", "limit_usd": limit}, bearer(tok)).expect(t, 201).str("id")

				activate(key)
				require.Eventually(t, func() bool { return len(e.warningsOf(me, budget)) == 1 }, 5*time.Second, 20*time.Millisecond,
					"warned with the call that crossed 80 %")
				w := e.warningsOf(me, budget)[0]
				require.Equal(t, float64(cost)/1e6, w.Context["spent_usd"])
				require.Equal(t, fmt.Sprint(keyID), w.Context["scope_id"])

				activate(key) // over the limit now, admitted below it
				time.Sleep(50 * time.Millisecond)
				require.Len(t, e.warningsOf(me, budget), 1, "once per period")
			})
		}
	})
}
