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
// (AP_MAX_INFLIGHT=4) and more with agents that spin for 30 s; user A's echo
// agent and A's trivial JavaScript agent still complete within seconds,
// because B's activations and B's JavaScript runs take at most their
// share of the slots (issue 16, item 7).
func TestLoopingUserDoesNotStarveAnother(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, map[string]string{"AP_MAX_INFLIGHT": "4", "AP_WORKERS": "2"})
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

// TestSpinningPipelinesDoNotBlockAnotherUser: user B starts more spinning
// pipeline runs than the pipeline queue has workers (10); user A's
// pipeline run still completes within seconds, because B's steps take at
// most their share of the workers and the rest snooze (issue 16, item 7).
func TestSpinningPipelinesDoNotBlockAnotherUser(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, map[string]string{"AP_WORKERS": "2"})
		e.stopAtOnce()
		b := e.signup("b@example.com")
		m := map[string]any{"name": "Spin", "slug": "spin", "version": "1.0.0", "functions": []any{map[string]any{
			"name": "spin", "code": loop, "input_schema": map[string]any{"type": "object"}, "timeout_seconds": 10}}}
		bApp := e.importManifest(b, m).expect(t, 201).str("app_id")
		spin := e.createPipeline(b, bApp, "spin", step("s", "function", "spin", map[string]any{}))
		for range 12 {
			e.runPipeline(b, spin, map[string]any{})
		}
		require.Eventually(t, func() bool {
			var n int
			require.NoError(t, e.srv.Store.DB().QueryRow(`SELECT COUNT(*) FROM river_job WHERE kind = 'pipeline_step' AND state = 'running'`).Scan(&n))
			return n >= 8
		}, 10*time.Second, 20*time.Millisecond, "B's steps took the workers")

		a := e.signup("a@example.com")
		aApp := e.pipelineApp(a)
		shout := e.createPipeline(a, aApp, "shout", step("s", "function", "shout", map[string]any{"text": "{{input.text}}", "n": 1}))
		start := time.Now()
		run := e.runPipeline(a, shout, map[string]any{"text": "hi"}).str("run_id")
		deadline := time.Now().Add(6 * time.Second)
		for {
			r := e.do("GET", "/api/v1/pipelines/runs/"+run, nil, bearer(a)).expect(t, 200)
			if st := r.str("status"); st == "completed" || st == "failed" {
				require.Equal(t, "completed", st, string(r.Body))
				break
			}
			require.True(t, time.Now().Before(deadline), "A's run did not end within 6 s while B's pipelines spin: %s", r.Body)
			time.Sleep(10 * time.Millisecond) //nolint:forbidigo // polling with a deadline
		}
		t.Logf("A's run ended %s after it started, while B's pipelines spin", time.Since(start))
	})
}
