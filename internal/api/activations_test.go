package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// agentFixture is an app with one LLM agent, owned by the user of token.
type agentFixture struct {
	appID, agentID string
}

func (e *env) llmAgent(token string, config map[string]any, timeoutSeconds int) agentFixture {
	e.t.Helper()
	ctx := context.Background()
	me := e.do("GET", "/api/v1/users/me", nil, bearer(token)).expect(e.t, 200)
	now := store.Now()
	app := &store.App{ID: uuid.NewString(), UserID: me.str("id"), Name: "Desk", Slug: "desk-" + uuid.NewString()[:8], Version: "1.0.0", Status: "active", CreatedAt: now, UpdatedAt: now}
	require.NoError(e.t, e.srv.Store.AppCreate(ctx, app))
	if config == nil {
		config = map[string]any{"model": "echo", "provider_id": "echo"}
	}
	cfg, _ := json.Marshal(config)
	ag := &store.Agent{ID: uuid.NewString(), AppID: app.ID, UserID: app.UserID, Name: "triage", AgentTypeID: "llm", Version: "1.0.0",
		Status: "active", TimeoutSeconds: max(timeoutSeconds, 1), Config: cfg, CreatedAt: now, UpdatedAt: now}
	require.NoError(e.t, e.srv.Store.AgentCreate(ctx, ag))
	return agentFixture{appID: app.ID, agentID: ag.ID}
}

// await polls an activation until it ends (or fails the test).
func (e *env) await(token, id string) *resp {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := e.do("GET", "/api/v1/activations/"+id, nil, bearer(token)).expect(e.t, 200)
		if st := r.str("status"); st == "completed" || st == "failed" {
			return r
		}
		require.True(e.t, time.Now().Before(deadline), "activation %s did not end: %s", id, r.Body)
		time.Sleep(5 * time.Millisecond)
	}
}

func TestActivateAndPoll(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("u@example.com")
		f := e.llmAgent(token, nil, 0)

		// Simple form: pending and a message.
		r := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "hello"}}, bearer(token)).expect(t, 201)
		require.Equal(t, "pending", r.str("status"))
		require.NotEmpty(t, r.str("message"))
		id := r.str("activation_id")
		require.Len(t, r.JSON, 3)

		done := e.await(token, id)
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		out := done.JSON["output_data"].(map[string]any)
		require.Equal(t, "echo: hello", out["response"])
		require.Equal(t, "echo", out["model"])
		require.Equal(t, "echo", out["provider"])
		require.Equal(t, "stop", out["finish_reason"])
		usage := out["usage"].(map[string]any)
		for _, k := range []string{"prompt_tokens", "completion_tokens", "total_tokens"} {
			require.Contains(t, usage, k)
		}
		require.NotNil(t, done.JSON["started_at"])
		require.NotNil(t, done.JSON["completed_at"])
		require.NotNil(t, done.JSON["duration_ms"])
		require.Nil(t, done.JSON["error"])
		require.Equal(t, f.appID, done.str("app_id"))
		// The counter moves just after the commit that made it visible.
		require.Eventually(t, func() bool {
			metrics := string(e.do("GET", "/metrics", nil).Body)
			return strings.Contains(metrics, `agentplatform_activations_total{status="completed"} 1`) &&
				strings.Contains(metrics, "agentplatform_activation_duration_seconds_count 1")
		}, 10*time.Second, 10*time.Millisecond)

		// App-scoped form: the full record, queued, nulls where nothing happened yet.
		r = e.do("POST", "/api/v1/apps/"+f.appID+"/agents/"+f.agentID+"/activate",
			map[string]any{"input_data": map[string]any{"prompt": "a"}, "context": map[string]any{"chat_id": "c1"}, "metadata": map[string]any{"source": "test"}}, bearer(token)).expect(t, 201)
		require.Equal(t, "queued", r.str("status"))
		for _, k := range []string{"started_at", "completed_at", "duration_ms", "output_data", "error"} {
			require.Contains(t, r.JSON, k)
			require.Nil(t, r.JSON[k], k)
		}
		require.Equal(t, float64(2), r.JSON["priority"])
		require.Equal(t, "c1", r.JSON["context"].(map[string]any)["chat_id"])
		// The alternate body {input, context}.
		r = e.do("POST", "/api/v1/apps/"+f.appID+"/agents/"+f.agentID+"/activate",
			map[string]any{"input": map[string]any{"prompt": "b"}}, bearer(token)).expect(t, 201)
		require.Equal(t, "echo: b", e.await(token, r.str("activation_id")).JSON["output_data"].(map[string]any)["response"])
		// POST /api/v1/activations.
		r = e.do("POST", "/api/v1/activations", map[string]any{"agent_id": f.agentID, "input_data": map[string]any{"prompt": "c"}, "priority": 1}, bearer(token)).expect(t, 201)
		require.Equal(t, "queued", r.str("status"))
		require.Equal(t, float64(1), r.JSON["priority"])
		e.await(token, r.str("activation_id"))
	})
}

func TestActivationBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	token := e.signup("u@example.com")
	other := e.signup("other@example.com")
	f := e.llmAgent(token, nil, 0)
	for _, path := range []string{"/api/v1/agents/" + f.agentID + "/activate", "/api/v1/apps/" + f.appID + "/agents/" + f.agentID + "/activate"} {
		e.do("POST", path, map[string]any{"context": map[string]any{}}, bearer(token)).expectError(t, 400, "ValidationError", "Missing required field: input_data")
		e.do("POST", path, map[string]any{"input_data": "text"}, bearer(token)).expectError(t, 400, "ValidationError", "input_data")
		e.do("POST", path, map[string]any{"input_data": map[string]any{}, "priority": 7}, bearer(token)).expectError(t, 400, "ValidationError", "priority")
		e.do("POST", path, map[string]any{"input_data": map[string]any{}, "metadata": map[string]any{"temperature": 3}}, bearer(token)).expectError(t, 400, "ValidationError", "metadata.temperature")
		e.do("POST", path, map[string]any{"input_data": map[string]any{}, "metadata": map[string]any{"webhook_url": "ftp://x"}}, bearer(token)).expectError(t, 400, "ValidationError", "metadata.webhook_url")
		e.do("POST", path, map[string]any{"input_data": map[string]any{}, "metadata": map[string]any{"provider_id": "nope"}}, bearer(token)).expectError(t, 400, "ValidationError", "provider_id")
		e.do("POST", path, map[string]any{"input_data": map[string]any{}, "context": map[string]any{"chat_id": 5}}, bearer(token)).expectError(t, 400, "ValidationError", "context.chat_id")
		// Another user's agent does not exist for them.
		e.do("POST", path, map[string]any{"input_data": map[string]any{}}, bearer(other)).expect(t, 404)
	}
	e.do("POST", "/api/v1/activations", map[string]any{"agent_id": f.agentID}, bearer(token)).expectError(t, 400, "ValidationError", "Missing required field: input_data")
	e.do("POST", "/api/v1/agents/"+uuid.NewString()+"/activate", map[string]any{"input_data": map[string]any{}}, bearer(token)).expectError(t, 404, "NotFoundError", "Agent not found")
	e.do("POST", "/api/v1/agents/not-a-uuid/activate", map[string]any{"input_data": map[string]any{}}, bearer(token)).expectError(t, 404, "NotFoundError", "Agent not found")
	// The agent exists, but not in that app.
	g := e.llmAgent(token, nil, 0)
	e.do("POST", "/api/v1/apps/"+g.appID+"/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{}}, bearer(token)).expect(t, 404)
}

func TestActivationIsolationAndLists(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("u@example.com")
		other := e.signup("other@example.com")
		f := e.llmAgent(token, nil, 0)
		g := e.llmAgent(token, nil, 0)
		mk := func(agent agentFixture, chat string) string {
			body := map[string]any{"input_data": map[string]any{"prompt": "p"}}
			if chat != "" {
				body["context"] = map[string]any{"chat_id": chat}
			}
			r := e.do("POST", "/api/v1/agents/"+agent.agentID+"/activate", body, bearer(token)).expect(t, 201)
			return e.await(token, r.str("activation_id")).str("activation_id")
		}
		a1, a2, a3 := mk(f, "c1"), mk(f, "c2"), mk(g, "")

		// Another user's activation is 404 everywhere.
		e.do("GET", "/api/v1/activations/"+a1, nil, bearer(other)).expectError(t, 404, "NotFoundError", "Activation not found")
		e.do("POST", "/api/v1/activations/"+a1+"/cancel", nil, bearer(other)).expect(t, 404)
		r := e.do("GET", "/api/v1/activations", nil, bearer(other)).expect(t, 200)
		require.Equal(t, float64(0), r.JSON["total_count"])
		e.do("GET", "/api/v1/agents/"+f.agentID+"/activations", nil, bearer(other)).expect(t, 404)
		e.do("GET", "/api/v1/apps/"+f.appID+"/activations", nil, bearer(other)).expect(t, 404)

		ids := func(r *resp) []string {
			var out []string
			for _, x := range r.JSON["activations"].([]any) {
				out = append(out, x.(map[string]any)["activation_id"].(string))
			}
			return out
		}
		r = e.do("GET", "/api/v1/activations", nil, bearer(token)).expect(t, 200)
		require.Equal(t, []string{a3, a2, a1}, ids(r), "newest first")
		require.Equal(t, float64(3), r.JSON["total_count"])
		require.Equal(t, []string{a2, a1}, ids(e.do("GET", "/api/v1/activations?agent_id="+f.agentID, nil, bearer(token))))
		require.Equal(t, []string{a1}, ids(e.do("GET", "/api/v1/activations?chat_id=c1", nil, bearer(token))))
		require.Equal(t, []string{a3}, ids(e.do("GET", "/api/v1/activations?app_id="+g.appID, nil, bearer(token))))
		require.Equal(t, 3, len(ids(e.do("GET", "/api/v1/activations?status=completed", nil, bearer(token)))))
		require.Empty(t, ids(e.do("GET", "/api/v1/activations?status=pending", nil, bearer(token))))
		require.Empty(t, ids(e.do("GET", "/api/v1/activations?status=processing", nil, bearer(token))))
		e.do("GET", "/api/v1/activations?status=done", nil, bearer(token)).expectError(t, 400, "ValidationError", "status")
		r = e.do("GET", "/api/v1/activations?limit=1", nil, bearer(token)).expect(t, 200)
		require.Equal(t, true, r.JSON["has_more"])
		e.do("GET", "/api/v1/activations?limit=0", nil, bearer(token)).expect(t, 400)

		require.Equal(t, []string{a1}, ids(e.do("GET", `/api/v1/agents/`+f.agentID+`/activations?context=%7B%22chat_id%22%3A%22c1%22%7D`, nil, bearer(token))))
		require.Equal(t, []string{a2}, ids(e.do("GET", "/api/v1/agents/"+f.agentID+"/activations?chat_id=c2", nil, bearer(token))))
		e.do("GET", "/api/v1/agents/"+f.agentID+"/activations?context=nope", nil, bearer(token)).expectError(t, 400, "ValidationError", "context")
		require.Equal(t, []string{a2, a1}, ids(e.do("GET", "/api/v1/apps/"+f.appID+"/activations", nil, bearer(token))))
		e.do("GET", "/api/v1/apps/"+f.appID+"/agents/activations/"+a1, nil, bearer(token)).expect(t, 200)
		e.do("GET", "/api/v1/apps/"+g.appID+"/agents/activations/"+a1, nil, bearer(token)).expect(t, 404)
	})
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("u@example.com")
		f := e.llmAgent(token, nil, 0)
		path := "/api/v1/agents/" + f.agentID + "/activate"
		body := map[string]any{"input_data": map[string]any{"prompt": "once"}}

		first := e.do("POST", path, body, bearer(token), header("Idempotency-Key", "k1")).expect(t, 201)
		again := e.do("POST", path, body, bearer(token), header("Idempotency-Key", "k1")).expect(t, 201)
		require.Equal(t, first.str("activation_id"), again.str("activation_id"))
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		e.do("POST", path, map[string]any{"input_data": map[string]any{"prompt": "other"}}, bearer(token), header("Idempotency-Key", "k1")).
			expectError(t, 409, "ConflictError", "Idempotency-Key")
		// Keys are per user: another user's k1 is theirs.
		// 20 concurrent duplicates: one activation, and every answer names it.
		var wg sync.WaitGroup
		got := make([]string, 20)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := e.do("POST", path, map[string]any{"input_data": map[string]any{"prompt": "burst"}}, bearer(token), header("Idempotency-Key", "burst"))
				require.Equal(t, 201, r.Status, "body: %s", r.Body)
				got[i] = r.str("activation_id")
			}()
		}
		wg.Wait()
		for _, id := range got {
			require.Equal(t, got[0], id)
		}
		r := e.do("GET", "/api/v1/activations?limit=100", nil, bearer(token)).expect(t, 200)
		require.Equal(t, float64(2), r.JSON["total_count"], "k1 and burst: two activations in all")
	})
}

// TestIdempotencyKeyIgnoresTheInputsSpelling: the input is stored as the
// client sent it, but two spellings of the same input (key order, spaces,
// 1.0 or 1) are the same request for an Idempotency-Key; another input is
// not.
func TestIdempotencyKeyIgnoresTheInputsSpelling(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("u@example.com")
		f := e.llmAgent(token, nil, 0)
		path := "/api/v1/agents/" + f.agentID + "/activate"
		key := header("Idempotency-Key", "spelling")

		first := e.do("POST", path, []byte(`{"input_data":{"prompt":"p","n":1,"big":12345678901234567891,"o":{"b":2,"a":1}}}`),
			bearer(token), key).expect(t, 201)
		again := e.do("POST", path, []byte(`{ "input_data" : { "o" : {"a":1.0, "b":2}, "big":12345678901234567891, "n":1.0, "prompt":"p" } }`),
			bearer(token), key).expect(t, 201)
		require.Equal(t, first.str("activation_id"), again.str("activation_id"))
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		e.do("POST", path, []byte(`{"input_data":{"prompt":"p","n":2,"big":12345678901234567891,"o":{"b":2,"a":1}}}`), bearer(token), key).
			expectError(t, 409, "ConflictError", "Idempotency-Key")

		got := e.do("GET", "/api/v1/activations/"+first.str("activation_id"), nil, bearer(token)).expect(t, 200)
		var raw struct {
			InputData json.RawMessage `json:"input_data"`
		}
		require.NoError(t, json.Unmarshal(got.Body, &raw))
		require.Contains(t, string(raw.InputData), "12345678901234567891", "the input is kept as sent, not as a float64")
	})
}

func TestCancelQueuedAndPause(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		admin := e.signup("admin@example.com")
		token := e.signup("u@example.com")
		f := e.llmAgent(token, nil, 0)
		e.do("POST", "/api/v1/worker/pause", nil, bearer(token)).expect(t, 403)
		require.Equal(t, true, e.do("POST", "/api/v1/worker/pause", nil, bearer(admin)).expect(t, 200).JSON["paused"])
		// River hands the pause to its producer asynchronously and exposes
		// no event for it: a fetch already in flight may still take a job.
		// Give it a few fetch cycles.
		time.Sleep(150 * time.Millisecond)

		// Paused: activations wait, queued.
		ids := make([]string, 3)
		for i := range ids {
			ids[i] = e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": fmt.Sprint(i)}}, bearer(token)).expect(t, 201).str("activation_id")
		}
		st := e.do("GET", "/api/v1/worker/status", nil, bearer(token)).expect(t, 200)
		require.GreaterOrEqual(t, st.JSON["queue"].(map[string]any)["queued"], float64(3))
		require.NotContains(t, st.JSON, "workers", "worker processes are for admins")
		require.NotEmpty(t, e.do("GET", "/api/v1/worker/status", nil, bearer(admin)).expect(t, 200).JSON["workers"])
		// A queued activation is its row, with no queue job behind it.
		jobs := e.do("GET", "/api/v1/worker/jobs?state=available", nil, bearer(admin)).expect(t, 200)
		for _, j := range jobs.JSON["jobs"].([]any) {
			require.NotEqual(t, "activation", j.(map[string]any)["kind"])
		}
		e.do("GET", "/api/v1/worker/jobs", nil, bearer(token)).expect(t, 403)

		// Cancel a queued one: failed, "Activation cancelled"; twice is 409.
		c := e.do("POST", "/api/v1/activations/"+ids[0]+"/cancel", nil, bearer(token)).expect(t, 200)
		require.Equal(t, "failed", c.str("status"))
		require.Equal(t, "Activation cancelled", c.str("error"))
		e.do("POST", "/api/v1/activations/"+ids[0]+"/cancel", nil, bearer(token)).expectError(t, 409, "ConflictError", "already failed")

		// Resume: the others complete, the cancelled one stays failed.
		e.do("POST", "/api/v1/worker/resume", nil, bearer(admin)).expect(t, 200)
		for _, id := range ids[1:] {
			require.Equal(t, "completed", e.await(token, id).str("status"))
		}
		require.Equal(t, "failed", e.await(token, ids[0]).str("status"))
		st = e.do("GET", "/api/v1/worker/status", nil, bearer(token)).expect(t, 200)
		tp := st.JSON["throughput"].(map[string]any)["last_minute"].(map[string]any)
		require.Equal(t, float64(2), tp["completed"])
		require.Equal(t, float64(1), tp["failed"])
	})
}
