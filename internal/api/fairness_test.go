package api_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// loop is a JavaScript agent that spins until its timeout.
const loop = `async function run() { while (true) {} }`

// TestLoopingUserDoesNotStarveAnother: user B fills every activation slot
// (AP_WORKERS=4) and more with agents that spin for 30 s; user A's echo
// agent and A's trivial JavaScript agent still complete within seconds,
// because B's activations and B's JavaScript runs take at most their
// share of the slots (issue 16, item 7).
func TestLoopingUserDoesNotStarveAnother(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, map[string]string{"AP_WORKERS": "4", "AP_JS_CONCURRENCY": "2"})
		b := e.signup("b@example.com")
		spinner := e.jsAgent(b, loop, 30)
		var spinning []string
		for range 8 {
			spinning = append(spinning, e.activateJS(b, spinner, map[string]any{}))
		}
		// Cancelled at the end, so the server stops at once.
		t.Cleanup(func() {
			for _, id := range spinning {
				e.do("POST", "/api/v1/activations/"+id+"/cancel", nil, bearer(b))
			}
		})
		require.Eventually(t, func() bool {
			running := 0
			for _, id := range spinning {
				if e.do("GET", "/api/v1/activations/"+id, nil, bearer(b)).expect(t, 200).str("status") == "running" {
					running++
				}
			}
			return running >= 3
		}, 10*time.Second, 20*time.Millisecond, "B's agents took the workers")

		a := e.signup("a@example.com")
		echo := e.llmAgent(a, nil, 10)
		trivial := e.jsAgent(a, `async function run(input) { return {hello: input.name}; }`, 10)
		start := time.Now()
		llm := e.activateJS(a, echo, map[string]any{"prompt": "hi"})
		js := e.activateJS(a, trivial, map[string]any{"name": "Ada"})
		for _, id := range []string{llm, js} {
			r := e.awaitWithin(a, id, 8*time.Second)
			require.Equal(t, "completed", r.str("status"), r.str("error"))
		}
		t.Logf("A's two activations ended %s after they were created, while B's agents spin", time.Since(start))
	})
}

// awaitWithin polls an activation until it ends, failing the test after
// limit.
func (e *env) awaitWithin(token, id string, limit time.Duration) *resp {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		r := e.do("GET", "/api/v1/activations/"+id, nil, bearer(token)).expect(e.t, 200)
		if st := r.str("status"); st == "completed" || st == "failed" {
			return r
		}
		require.True(e.t, time.Now().Before(deadline), "activation %s did not end within %s: %s", id, limit, r.Body)
		time.Sleep(10 * time.Millisecond) //nolint:forbidigo // polling with a deadline
	}
}
