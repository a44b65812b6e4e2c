package api_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestWaitingRunsHoldNoWorker: with the default in-flight settings, 300 LLM
// activations whose provider holds every call are all in flight at once
// (issue 22, item 1: a run waiting on an LLM holds no CPU slot, only an
// in-flight one): the provider has all 300 calls open together, and once
// it answers every run completes.
func TestWaitingRunsHoldNoWorker(t *testing.T) {
	t.Parallel()
	const runs = 300
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		// The rate limit is not under test: without -race the 300 creates
		// and the polls that follow spend the harness's 100,000 a minute.
		e := newEnv(t, d, map[string]string{"AP_RATE_LIMIT": "1000000000"})
		token := e.signup("u@example.com")
		fake := llmtest.NewOpenAI(t)
		pid, _ := e.userProvider(token, "Slow", fake)
		// A timeout the runs cannot meet while the others are created,
		// however busy the machine.
		f := e.llmAgent(token, map[string]any{"model": "m", "provider_id": pid}, 600)
		release := fake.Block()
		defer release()
		ids := make([]string, runs)
		for i := range ids {
			ids[i] = e.activate(token, f, map[string]any{"prompt": fmt.Sprint("run ", i)})
		}
		fake.WaitCalls(t, runs) // every call open at once: none answered yet
		release()
		for _, id := range ids {
			r := e.await(token, id)
			require.Equal(t, "completed", r.str("status"), r.str("error"))
		}
		require.Equal(t, runs, fake.Calls())
	})
}

// TestWaitingJavaScriptRunsHoldNoCPUSlot: JavaScript agents waiting on
// ctx.llm.complete give their CPU slot back: with AP_WORKERS=2, forty of
// them have their LLM calls open at once, and all complete once the
// provider answers.
func TestWaitingJavaScriptRunsHoldNoCPUSlot(t *testing.T) {
	t.Parallel()
	const runs = 40
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, map[string]string{"AP_WORKERS": "2"})
		token := e.signup("u@example.com")
		fake := llmtest.NewOpenAI(t)
		pid, _ := e.userProvider(token, "Slow", fake)
		ag := e.jsAgent(token, `async function run(input, ctx) {
			const r = await ctx.llm.complete({provider_id: input.provider, model: "m", prompt: input.prompt});
			return {text: r.text};
		}`, 600)
		release := fake.Block()
		defer release()
		ids := make([]string, runs)
		for i := range ids {
			ids[i] = e.activateJS(token, ag, map[string]any{"provider": pid, "prompt": fmt.Sprint("run ", i)})
		}
		fake.WaitCalls(t, runs) // every run's call open at once, on two CPU slots
		release()
		for i, id := range ids {
			r := e.await(token, id)
			require.Equal(t, "completed", r.str("status"), r.str("error"))
			require.Equal(t, map[string]any{"text": fmt.Sprint("reply to: run ", i)}, r.JSON["output_data"])
		}
	})
}
