package api_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
)

// withOpenAI runs a server whose openai system provider is the recording
// test LLM.
func withOpenAI(t *testing.T) (*env, *llmtest.Server) {
	t.Helper()
	fake := llmtest.NewOpenAI(t)
	e := newEnv(t, store.SQLite, map[string]string{"AP_OPENAI_BASE_URL": fake.URL, "AP_OPENAI_API_KEY": "sk-test"})
	return e, fake
}

func TestLLMAgentSendsConfigOverridesAndHistory(t *testing.T) {
	t.Parallel()
	e, fake := withOpenAI(t)
	token := e.signup("u@example.com")
	f := e.llmAgent(token, map[string]any{"model": "gpt-agent", "provider_id": "openai", "temperature": 0.3,
		"system_message": "You triage tickets.", "max_tokens": 50}, 30)
	path := "/api/v1/agents/" + f.agentID + "/activate"

	// Turn 1 of chat c1, with the agent's configuration.
	id := e.do("POST", path, map[string]any{"input_data": map[string]any{"prompt": "first"}, "context": map[string]any{"chat_id": "c1"}}, bearer(token)).expect(t, 201).str("activation_id")
	done := e.await(token, id)
	require.Equal(t, "completed", done.str("status"), "%s", done.Body)
	out := done.JSON["output_data"].(map[string]any)
	require.Equal(t, "reply to: first", out["response"])
	require.Equal(t, "openai", out["provider"])
	req := fake.Requests()[0]
	require.Equal(t, "gpt-agent", req.Model)
	require.InDelta(t, 0.3, *req.Temperature, 1e-9)
	require.Equal(t, "You triage tickets.", req.System)
	require.Equal(t, 50, req.MaxTokens)
	require.Equal(t, []llm.Message{{Role: llm.RoleUser, Content: "first"}}, req.Messages)

	// Turn 2 of the same chat, with metadata overrides: the history is sent.
	id = e.do("POST", path, map[string]any{"input_data": map[string]any{"prompt": "second"}, "context": map[string]any{"chat_id": "c1"},
		"metadata": map[string]any{"model": "gpt-override", "temperature": 1.5, "max_tokens": 7, "system_prompt": "Be brief."}}, bearer(token)).expect(t, 201).str("activation_id")
	require.Equal(t, "completed", e.await(token, id).str("status"))
	req = fake.Requests()[1]
	require.Equal(t, "gpt-override", req.Model)
	require.InDelta(t, 1.5, *req.Temperature, 1e-9)
	require.Equal(t, 7, req.MaxTokens)
	require.Equal(t, "Be brief.", req.System)
	require.Equal(t, []llm.Message{
		{Role: llm.RoleUser, Content: "first"}, {Role: llm.RoleAssistant, Content: "reply to: first"},
		{Role: llm.RoleUser, Content: "second"},
	}, req.Messages)

	// Another chat starts afresh.
	id = e.do("POST", path, map[string]any{"input_data": map[string]any{"prompt": "other"}, "context": map[string]any{"chat_id": "c2"}}, bearer(token)).expect(t, 201).str("activation_id")
	e.await(token, id)
	require.Len(t, fake.Requests()[2].Messages, 1)
}

func TestCancelInterruptsTheLLMCall(t *testing.T) {
	t.Parallel()
	e, fake := withOpenAI(t)
	token := e.signup("u@example.com")
	f := e.llmAgent(token, map[string]any{"model": "gpt", "provider_id": "openai"}, 60)
	release := fake.Block()
	defer release()

	id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "hang"}}, bearer(token)).expect(t, 201).str("activation_id")
	fake.WaitCalls(t, 1) // the call is in flight, blocked at the provider
	r := e.do("GET", "/api/v1/activations/"+id, nil, bearer(token)).expect(t, 200)
	require.Equal(t, "running", r.str("status"))

	c := e.do("POST", "/api/v1/activations/"+id+"/cancel", nil, bearer(token)).expect(t, 200)
	require.Equal(t, "failed", c.str("status"))
	require.Equal(t, "Activation cancelled", c.str("error"))
	// The worker is free at once: the in-flight HTTP call was interrupted,
	// not waited for (the provider is still blocked).
	require.Eventually(t, func() bool {
		st := e.do("GET", "/api/v1/worker/status", nil, bearer(token))
		return st.JSON["queue"].(map[string]any)["running"] == float64(0)
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "Activation cancelled", e.await(token, id).str("error"), "the cancel is final")
}

func TestAgentTimeout(t *testing.T) {
	t.Parallel()
	e, fake := withOpenAI(t)
	token := e.signup("u@example.com")
	f := e.llmAgent(token, map[string]any{"model": "gpt", "provider_id": "openai"}, 1)
	release := fake.Block()
	defer release()
	id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "slow"}}, bearer(token)).expect(t, 201).str("activation_id")
	done := e.await(token, id)
	require.Equal(t, "failed", done.str("status"))
	require.Equal(t, "Activation timed out after 1 s", done.str("error"))
}

func TestTransientProviderErrorsAreRetriedThenFail(t *testing.T) {
	t.Parallel()
	e, fake := withOpenAI(t)
	token := e.signup("u@example.com")
	f := e.llmAgent(token, map[string]any{"model": "gpt", "provider_id": "openai"}, 60)
	path := "/api/v1/agents/" + f.agentID + "/activate"

	// Two 503s, then an answer: retried, completed.
	fake.FailNext(2, 503)
	id := e.do("POST", path, map[string]any{"input_data": map[string]any{"prompt": "flaky"}}, bearer(token)).expect(t, 201).str("activation_id")
	require.Equal(t, "completed", e.await(token, id).str("status"))
	require.Equal(t, 3, fake.Calls())

	// Always 429: retried, then failed naming the provider and the status.
	fake.FailNext(100, 429)
	id = e.do("POST", path, map[string]any{"input_data": map[string]any{"prompt": "busy"}}, bearer(token)).expect(t, 201).str("activation_id")
	done := e.await(token, id)
	require.Equal(t, "failed", done.str("status"))
	require.Contains(t, done.str("error"), "LLM provider OpenAI answered 429", "named by its name")
	require.Contains(t, done.str("error"), "429")
	require.Equal(t, 3+4, fake.Calls(), "one call and three retries")

	// A 400 is not transient: no retry.
	fake.FailNext(1, 400)
	before := fake.Calls()
	id = e.do("POST", path, map[string]any{"input_data": map[string]any{"prompt": "bad"}}, bearer(token)).expect(t, 201).str("activation_id")
	done = e.await(token, id)
	require.Equal(t, "failed", done.str("status"))
	require.Contains(t, done.str("error"), "400")
	require.Equal(t, before+1, fake.Calls())
}

// An activation created while its process has a free worker is claimed by
// the creating transaction (activation/local.go); one created while every
// worker is busy waits, queued, for the dispatcher (activation/dispatch.go),
// which runs it as soon as a worker frees. One cancelled while it waits
// never reaches the provider.
func TestClaimAtCreateAndItsLimits(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	e := newEnv(t, store.SQLite, map[string]string{"AP_OPENAI_BASE_URL": fake.URL, "AP_OPENAI_API_KEY": "sk-test", "AP_MAX_INFLIGHT": "1"})
	token := e.signup("u@example.com")
	f := e.llmAgent(token, map[string]any{"model": "gpt", "provider_id": "openai"}, 60)
	activate := func(prompt string) string {
		r := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": prompt}}, bearer(token)).expect(t, 201)
		return r.str("activation_id")
	}
	status := func(id string) string {
		return e.do("GET", "/api/v1/activations/"+id, nil, bearer(token)).expect(t, 200).str("status")
	}

	first := fake.Block()
	defer first()
	b := activate("b") // the one worker is free: claimed, running
	fake.WaitCalls(t, 1)
	require.Equal(t, "running", status(b))
	a := activate("a") // the worker is busy: queued
	require.Equal(t, "queued", status(a))

	second := fake.Block()
	defer second()
	first() // b completes; the dispatcher gives a the worker, and a blocks
	require.Equal(t, "completed", e.await(token, b).str("status"))
	fake.WaitCalls(t, 2)
	require.Equal(t, "running", status(a))

	c := activate("c") // queued, waiting for the worker a holds
	require.Equal(t, "queued", status(c))
	r := e.do("POST", "/api/v1/activations/"+c+"/cancel", nil, bearer(token)).expect(t, 200)
	require.Equal(t, "Activation cancelled", r.str("error"))

	second()
	require.Equal(t, "completed", e.await(token, a).str("status"))
	require.Equal(t, "failed", e.await(token, c).str("status"))
	d := activate("d")
	require.Equal(t, "completed", e.await(token, d).str("status"))
	require.Equal(t, 3, fake.Calls(), "b, a and d reached the provider; c never did")
	// The deferred jobs of b, c and d went with their ends (the first user
	// is admin): none is left to come due later.
	for _, state := range []string{"scheduled", "cancelled"} {
		jobs := e.do("GET", "/api/v1/worker/jobs?state="+state, nil, bearer(token)).expect(t, 200)
		require.Empty(t, jobs.JSON["jobs"], state)
	}
}
