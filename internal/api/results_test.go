package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/store/storetest"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// userProvider creates an openai_compatible provider named name at fake
// for the user of token, and an agent using it.
func (e *env) userProvider(token, name string, fake *llmtest.Server) (providerID string, f agentFixture) {
	e.t.Helper()
	providerID = e.do("POST", providersPath, map[string]any{"name": name, "provider_type": "openai_compatible",
		"base_url": fake.URL, "models": []string{"m"}}, bearer(token)).expect(e.t, 201).str("id")
	return providerID, e.llmAgent(token, map[string]any{"model": "m", "provider_id": providerID}, 30)
}

func (e *env) activate(token string, f agentFixture, input map[string]any) string {
	e.t.Helper()
	return e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": input}, bearer(token)).expect(e.t, 201).str("activation_id")
}

// A provider's answer that is not a completion, or is too large, fails the
// run with an error that names the provider as its user named it.
func TestProviderAnswersThatAreNotCompletionsFailTheRun(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("u@example.com")
		fake := llmtest.NewOpenAI(t)
		pid, f := e.userProvider(token, "My Ollama", fake)

		fake.SetRaw(http.StatusOK, "text/html", "<html><body>Welcome to nginx!</body></html>")
		done := e.await(token, e.activate(token, f, map[string]any{"prompt": "hi"}))
		require.Equal(t, "failed", done.str("status"))
		require.Equal(t, "LLM provider My Ollama answered 200: the answer is not a completion (text/html)", done.str("error"))
		require.NotContains(t, done.str("error"), pid)
		require.Equal(t, 1, fake.Calls(), "not retried: the same page would come again")

		fake.SetRaw(http.StatusOK, "application/json", `{"status":"ok"}`)
		done = e.await(token, e.activate(token, f, map[string]any{"prompt": "hi"}))
		require.Equal(t, "failed", done.str("status"))
		require.Contains(t, done.str("error"), "LLM provider My Ollama answered 200: the answer is not a completion")

		fake.SetRaw(0, "", "")
		fake.SetReplySize(llm.MaxResponseBytes + 1)
		done = e.await(token, e.activate(token, f, map[string]any{"prompt": "hi"}))
		require.Equal(t, "failed", done.str("status"))
		require.Equal(t, "LLM response exceeds 4 MiB (provider My Ollama)", done.str("error"))
	})
}

// NUL cannot be stored by PostgreSQL: an agent's output with one is stored
// with U+FFFD in its place, on both databases, and the run ends.
func TestNULInOutputBecomesReplacementCharacter(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("u@example.com")
		fake := llmtest.NewOpenAI(t)
		_, f := e.userProvider(token, "nul", fake)
		fake.SetReply("before\x00after \\u0000 stays")
		done := e.await(token, e.activate(token, f, map[string]any{"prompt": "hi"}))
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		out := done.JSON["output_data"].(map[string]any)
		require.Equal(t, "before\uFFFDafter \\u0000 stays", out["response"])
		// The history reads back the same.
		list := e.do("GET", "/api/v1/activations?agent_id="+f.agentID, nil, bearer(token)).expect(t, 200)
		first := list.JSON["activations"].([]any)[0].(map[string]any)
		require.Equal(t, out, first["output_data"])
	})
}

// A store error while recording an end never leaves an activation running:
// a result that cannot be stored is replaced by a failure with a short
// reason; while nothing can be stored, the end is retried until it is.
func TestFailingFinishNeverLeavesTheActivationRunning(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("u@example.com")
		f := e.llmAgent(token, nil, 30) // echo: the output repeats the prompt

		// This output can never be stored: the run fails with the reason.
		storetest.FailFinishes(t, e.srv.Store, "output_data", "poison-output")
		done := e.await(token, e.activate(token, f, map[string]any{"prompt": "poison-output"}))
		require.Equal(t, "failed", done.str("status"))
		require.Equal(t, "The activation ended but its result could not be stored", done.str("error"))
		require.Contains(t, e.logs.String(), "injected fault", "the cause is logged")
		require.NotContains(t, done.str("error"), "injected", "the database's words stay in the log")

		// No end of this activation can be stored for a while: it is retried
		// (still running meanwhile), and recorded as it was once possible.
		// Each round tries the result, then the failure, and logs once
		// before waiting 0.1, 0.2, 0.4, 0.8 s…: the fault goes while the
		// fourth round waits (had it gone between a round's two tries, the
		// failure would rightly be what is stored).
		faults := strings.Count(e.logs.String(), "injected fault")
		drop := storetest.FailFinishes(t, e.srv.Store, "input_data", "blocked-for-a-while")
		id := e.activate(token, f, map[string]any{"prompt": "blocked-for-a-while"})
		require.Eventually(t, func() bool { return strings.Count(e.logs.String(), "injected fault") >= faults+4 }, 20*time.Second, 10*time.Millisecond)
		require.Equal(t, "running", e.do("GET", "/api/v1/activations/"+id, nil, bearer(token)).expect(t, 200).str("status"))
		drop()
		done = e.await(token, id)
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		require.Equal(t, "echo: blocked-for-a-while", done.JSON["output_data"].(map[string]any)["response"])
	})
}
