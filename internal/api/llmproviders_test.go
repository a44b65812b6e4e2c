package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

const providersPath = "/api/v1/llm-providers"

// providerIDs lists the ids of a provider list answer, in order.
func providerIDs(r *resp) []string {
	var ids []string
	for _, p := range r.JSON["providers"].([]any) {
		ids = append(ids, p.(map[string]any)["id"].(string))
	}
	return ids
}

func TestLLMProvidersCRUD(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		system := llmtest.NewOpenAI(t)
		e := newEnv(t, d, map[string]string{"AP_OPENAI_API_KEY": "sk-system", "AP_OPENAI_BASE_URL": system.URL})
		alice, bob := e.signup("alice@example.com"), e.signup("bob@example.com")
		fake := llmtest.NewOpenAI(t)

		// The system providers come first, always there for everyone.
		r := e.do("GET", providersPath, nil, bearer(alice)).expect(t, 200)
		require.Equal(t, []string{"echo", "openai"}, providerIDs(r))
		require.Equal(t, float64(2), r.JSON["total_count"])
		echo := r.JSON["providers"].([]any)[0].(map[string]any)
		require.Equal(t, true, echo["is_system"])
		require.Equal(t, "echo", echo["provider_type"])

		r = e.do("POST", providersPath, map[string]any{"name": "ollama", "provider_type": "openai_compatible", "base_url": fake.URL,
			"api_key": "sk-user-secret", "models": []string{"m1", "m2"}, "default_model": "m2"}, bearer(alice)).expect(t, 201)
		id := r.str("id")
		require.NotContains(t, string(r.Body), "sk-user-secret")
		require.NotContains(t, r.JSON, "api_key")
		require.Equal(t, true, r.JSON["has_api_key"])
		require.Equal(t, false, r.JSON["is_system"])
		require.Equal(t, false, r.JSON["is_default"])
		require.Equal(t, "m2", r.str("default_model"))
		require.Equal(t, []any{"m1", "m2"}, r.JSON["models"])
		for _, k := range []string{"created_at", "updated_at", "base_url"} {
			require.NotEmpty(t, r.str(k), k)
		}

		// The key is sealed at rest.
		var enc string
		require.NoError(t, e.srv.Store.DB().QueryRowContext(context.Background(), `SELECT api_key_enc FROM llm_providers`).Scan(&enc))
		require.NotContains(t, enc, "sk-user-secret")
		require.True(t, strings.HasPrefix(enc, "v1:"))

		// Lists page over system providers and own ones together.
		r = e.do("GET", providersPath+"?limit=1&offset=1", nil, bearer(alice)).expect(t, 200)
		require.Equal(t, []string{"openai"}, providerIDs(r))
		require.Equal(t, true, r.JSON["has_more"])
		require.Equal(t, float64(3), r.JSON["total_count"])
		r = e.do("GET", providersPath+"?offset=2", nil, bearer(alice)).expect(t, 200)
		require.Equal(t, []string{id}, providerIDs(r))
		require.Equal(t, false, r.JSON["has_more"])
		r = e.do("GET", providersPath, nil, bearer(bob)).expect(t, 200)
		require.Equal(t, []string{"echo", "openai"}, providerIDs(r), "not alice's")

		e.do("GET", providersPath+"/"+id, nil, bearer(alice)).expect(t, 200)
		e.do("GET", providersPath+"/openai", nil, bearer(alice)).expect(t, 200)
		e.do("GET", providersPath+"/anthropic", nil, bearer(alice)).expectError(t, 404, "NotFoundError", "LLM provider not found")
		e.do("GET", providersPath+"/not-a-uuid", nil, bearer(alice)).expect(t, 404)

		// Another user's provider does not exist for them.
		e.do("GET", providersPath+"/"+id, nil, bearer(bob)).expect(t, 404)
		e.do("PATCH", providersPath+"/"+id, map[string]any{"name": "mine"}, bearer(bob)).expect(t, 404)
		e.do("POST", providersPath+"/"+id+"/test", nil, bearer(bob)).expect(t, 404)
		e.do("DELETE", providersPath+"/"+id, nil, bearer(bob)).expect(t, 404)

		// Patch: only what is given changes; the key stays write-only.
		r = e.do("PATCH", providersPath+"/"+id, map[string]any{"name": "local"}, bearer(alice)).expect(t, 200)
		require.Equal(t, "local", r.str("name"))
		require.Equal(t, "m2", r.str("default_model"))
		require.Equal(t, true, r.JSON["has_api_key"])

		// Test: a tiny completion on the default model, with the stored key.
		r = e.do("POST", providersPath+"/"+id+"/test", nil, bearer(alice)).expect(t, 200)
		require.Equal(t, true, r.JSON["ok"], "body: %s", r.Body)
		require.Equal(t, "m2", r.str("model"))
		require.Contains(t, r.JSON, "latency_ms")
		require.Empty(t, r.str("error"))
		rec := fake.Requests()[0]
		require.Equal(t, "m2", rec.Model)
		require.Equal(t, "Bearer sk-user-secret", rec.Auth)
		fake.FailNext(1, 401)
		r = e.do("POST", providersPath+"/"+id+"/test", nil, bearer(alice)).expect(t, 200)
		require.Equal(t, false, r.JSON["ok"])
		require.Contains(t, r.str("error"), "401")
		r = e.do("POST", providersPath+"/echo/test", nil, bearer(alice)).expect(t, 200)
		require.Equal(t, true, r.JSON["ok"])
		require.Equal(t, "echo", r.str("model"))
		r = e.do("POST", providersPath+"/openai/test", nil, bearer(alice)).expect(t, 200)
		require.Equal(t, true, r.JSON["ok"], "body: %s", r.Body)
		require.Equal(t, "Bearer sk-system", system.Requests()[0].Auth)

		// An empty api_key removes the key.
		r = e.do("PATCH", providersPath+"/"+id, map[string]any{"api_key": ""}, bearer(alice)).expect(t, 200)
		require.Equal(t, false, r.JSON["has_api_key"])

		// System providers are read-only.
		e.do("PATCH", providersPath+"/echo", map[string]any{"name": "x"}, bearer(alice)).expectError(t, 403, "PermissionError", "System LLM provider echo")
		e.do("DELETE", providersPath+"/openai", nil, bearer(alice)).expectError(t, 403, "PermissionError", "cannot be changed or deleted")

		e.do("DELETE", providersPath+"/"+id, nil, bearer(alice)).expect(t, 204)
		e.do("GET", providersPath+"/"+id, nil, bearer(alice)).expect(t, 404)
		e.do("DELETE", providersPath+"/"+id, nil, bearer(alice)).expect(t, 404)
	})
}

func TestLLMProviderDefaultIsExclusive(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		alice := e.signup("alice@example.com")
		create := func(name string, isDefault bool) string {
			return e.do("POST", providersPath, map[string]any{"name": name, "provider_type": "echo", "is_default": isDefault},
				bearer(alice)).expect(t, 201).str("id")
		}
		isDefault := func(id string) bool {
			return e.do("GET", providersPath+"/"+id, nil, bearer(alice)).expect(t, 200).JSON["is_default"].(bool)
		}
		a := create("a", true)
		b := create("b", true)
		require.False(t, isDefault(a), "marking b unmarked a")
		require.True(t, isDefault(b))
		e.do("PATCH", providersPath+"/"+a, map[string]any{"is_default": true}, bearer(alice)).expect(t, 200)
		require.True(t, isDefault(a))
		require.False(t, isDefault(b))
	})
}

func TestLLMProviderValidation(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		alice := e.signup("alice@example.com")
		ok := map[string]any{"name": "dup", "provider_type": "openai_compatible", "base_url": "https://llm.example.com/v1"}
		e.do("POST", providersPath, ok, bearer(alice)).expect(t, 201)
		with := func(k string, v any) map[string]any {
			m := map[string]any{"name": "n", "provider_type": "openai", "models": []string{"a", "b"}}
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
			return m
		}
		cases := []struct {
			body   map[string]any
			status int
			field  string
		}{
			{with("name", nil), 400, "name"},
			{with("name", ""), 400, "name"},
			{with("name", "   "), 400, "name"},
			{with("name", strings.Repeat("x", 101)), 400, "name"},
			{with("name", 5), 400, "name"},
			{with("provider_type", nil), 400, "provider_type"},
			{with("provider_type", "gemini"), 400, "provider_type"},
			{with("provider_type", "openai_compatible"), 400, "base_url"},
			{with("base_url", "ftp://example.com"), 400, "base_url"},
			{with("base_url", "localhost:11434"), 400, "base_url"},
			{with("base_url", "/v1"), 400, "base_url"},
			{with("base_url", "http://localhost:11434/v1"), 400, "base_url"},
			{with("default_model", "c"), 400, "default_model"},
			{with("models", "a"), 400, "models"},
			{with("models", []string{"a", ""}), 400, "models[1]"},
			{with("is_default", "yes"), 400, "is_default"},
			{with("prices", map[string]any{"gpt-4o": map[string]any{"input": -1, "output": 2}}), 400, "prices.gpt-4o.input"},
			{with("prices", map[string]any{"gpt-4o": map[string]any{"input": 1, "output": "2"}}), 400, "prices.gpt-4o.output"},
			{with("prices", map[string]any{"m": map[string]any{"input": 1, "output": 2, "cache_read": -0.5}}), 400, "prices.m.cache_read"},
			{with("prices", map[string]any{"m": map[string]any{"output": 2}}), 400, "prices.m.input"},
			{with("prices", []any{1}), 400, "prices"},
			{ok, 409, "dup"},
		}
		for _, tc := range cases {
			r := e.do("POST", providersPath, tc.body, bearer(alice)).expect(t, tc.status)
			require.Contains(t, r.str("detail"), tc.field, "body %v", tc.body)
		}

		id := e.do("POST", providersPath, with("name", "other"), bearer(alice)).expect(t, 201).str("id")
		for _, tc := range []struct {
			body   map[string]any
			status int
			field  string
		}{
			{map[string]any{"name": ""}, 400, "name"},
			{map[string]any{"name": "dup"}, 409, "dup"},
			{map[string]any{"provider_type": "x"}, 400, "provider_type"},
			{map[string]any{"provider_type": "openai_compatible"}, 400, "base_url"},
			{map[string]any{"default_model": "zz"}, 400, "default_model"},
			{map[string]any{"base_url": "mailto:x@y"}, 400, "base_url"},
		} {
			r := e.do("PATCH", providersPath+"/"+id, tc.body, bearer(alice)).expect(t, tc.status)
			require.Contains(t, r.str("detail"), tc.field, "body %v", tc.body)
		}
		// New models without a new default: the first becomes the default.
		r := e.do("PATCH", providersPath+"/"+id, map[string]any{"models": []string{"x", "y"}}, bearer(alice)).expect(t, 200)
		require.Equal(t, "x", r.str("default_model"))
	})
}

func TestAppModelProviders(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		alice, bob := e.signup("alice@example.com"), e.signup("bob@example.com")
		f := e.llmAgent(alice, nil, 0)
		mine := e.do("POST", providersPath, map[string]any{"name": "p", "provider_type": "echo"}, bearer(alice)).expect(t, 201).str("id")
		e.do("POST", providersPath, map[string]any{"name": "q", "provider_type": "echo"}, bearer(bob)).expect(t, 201)

		path := "/api/v1/apps/" + f.appID + "/model-providers"
		r := e.do("GET", path, nil, bearer(alice)).expect(t, 200)
		require.Equal(t, []string{"echo", mine}, providerIDs(r))
		require.Equal(t, float64(2), r.JSON["total_count"])
		// An app:access key may read it; a key bound to another app may not.
		r = e.do("GET", path, nil, bearer(e.keyWith(alice, "app:access"))).expect(t, 200)
		require.Equal(t, []string{"echo", mine}, providerIDs(r))
		// ...but not manage providers.
		e.do("GET", providersPath, nil, bearer(e.keyWith(alice, "app:access"))).expect(t, 403)

		e.do("GET", path, nil, bearer(bob)).expectError(t, 404, "NotFoundError", "App not found")
		e.do("GET", "/api/v1/apps/not-a-uuid/model-providers", nil, bearer(alice)).expect(t, 404)
		e.do("GET", path, nil).expect(t, 401)
	})
}

// TestActivationUsesUserProvider proves the wiring end to end: an agent that
// names a user's provider calls that provider's server with the agent's
// model, temperature, system prompt and max_tokens and the stored key.
// TestLLMProviderPrices: a provider's prices are kept and shown as given,
// and a patch replaces them.
func TestLLMProviderPrices(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		alice := e.signup("alice@example.com")
		prices := map[string]any{"gpt-4o": map[string]any{"input": 2.5, "output": 10, "cache_read": 1.25}, "local": map[string]any{"input": 0, "output": 0}}
		r := e.do("POST", providersPath, map[string]any{"name": "p", "provider_type": "openai", "prices": prices}, bearer(alice)).expect(t, 201)
		require.Equal(t, map[string]any{"input": 0.0, "output": 0.0}, r.JSON["prices"].(map[string]any)["local"])
		id := r.str("id")
		got := e.do("GET", providersPath+"/"+id, nil, bearer(alice)).expect(t, 200).JSON["prices"].(map[string]any)
		require.Equal(t, map[string]any{"input": 2.5, "output": 10.0, "cache_read": 1.25}, got["gpt-4o"])
		// A patch without prices keeps them; with prices replaces them.
		e.do("PATCH", providersPath+"/"+id, map[string]any{"name": "q"}, bearer(alice)).expect(t, 200)
		require.Len(t, e.do("GET", providersPath+"/"+id, nil, bearer(alice)).JSON["prices"], 2)
		r = e.do("PATCH", providersPath+"/"+id, map[string]any{"prices": map[string]any{}}, bearer(alice)).expect(t, 200)
		require.Empty(t, r.JSON["prices"])
		// The system providers have none of their own.
		require.Empty(t, e.do("GET", providersPath+"/echo", nil, bearer(alice)).expect(t, 200).JSON["prices"])
	})
}

func TestActivationUsesUserProvider(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		alice, bob := e.signup("alice@example.com"), e.signup("bob@example.com")
		fake := llmtest.NewAnthropic(t)
		pid := e.do("POST", providersPath, map[string]any{"name": "claude", "provider_type": "anthropic", "base_url": fake.URL,
			"api_key": "sk-ant", "models": []string{"claude-t"}}, bearer(alice)).expect(t, 201).str("id")

		f := e.llmAgent(alice, map[string]any{"model": "claude-t", "provider_id": pid, "temperature": 0.2,
			"system_message": "Be brief.", "max_tokens": 64}, 30)
		id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "hello"}},
			bearer(alice)).expect(t, 201).str("activation_id")
		done := e.await(alice, id)
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		out := done.JSON["output_data"].(map[string]any)
		require.Equal(t, "reply to: hello", out["response"])
		require.Equal(t, pid, out["provider"])
		require.Equal(t, "claude-t", out["model"])

		rec := fake.Requests()[0]
		require.Equal(t, "claude-t", rec.Model)
		require.Equal(t, "Be brief.", rec.System)
		require.Equal(t, 64, rec.MaxTokens)
		require.InDelta(t, 0.2, *rec.Temperature, 1e-9)
		require.Equal(t, "sk-ant", rec.Auth)

		// The provider is alice's: bob cannot name it.
		g := e.llmAgent(bob, nil, 0)
		e.do("POST", "/api/v1/agents/"+g.agentID+"/activate", map[string]any{"input_data": map[string]any{},
			"metadata": map[string]any{"provider_id": pid}}, bearer(bob)).expectError(t, 400, "ValidationError", "Unknown LLM provider")
	})
}

// An admin reaches another user's provider only with a stated reason, and
// that access is audited.
func TestLLMProviderAdminBypass(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	admin := e.signup("admin@example.com") // the first account is the admin
	bob := e.signup("bob@example.com")
	id := e.do("POST", providersPath, map[string]any{"name": "b", "provider_type": "echo"}, bearer(bob)).expect(t, 201).str("id")

	e.do("GET", providersPath+"/"+id, nil, bearer(admin)).expect(t, 404)
	r := e.do("GET", providersPath+"/"+id, nil, bearer(admin), header("X-Admin-Reason", "support ticket 7")).expect(t, 200)
	require.Equal(t, "b", r.str("name"))
	r = e.do("POST", providersPath+"/"+id+"/test", nil, bearer(admin), header("X-Admin-Reason", "support ticket 7")).expect(t, 200)
	require.Equal(t, true, r.JSON["ok"], "body: %s", r.Body)
	require.Equal(t, "echo", r.str("model"), "an echo provider without models tests model echo")
	audit := e.do("GET", "/api/v1/users/audit-log", nil, bearer(admin)).expect(t, 200)
	require.Contains(t, string(audit.Body), "support ticket 7")
	require.Contains(t, string(audit.Body), id)
}

func TestLLMProviderRoutesDocumented(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					WriteOnly bool `json:"writeOnly"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(e.do("GET", "/api/v1/openapi.json", nil).expect(t, 200).Body, &doc))
	for _, route := range []string{
		"GET /api/v1/llm-providers", "POST /api/v1/llm-providers", "GET /api/v1/llm-providers/{id}",
		"PATCH /api/v1/llm-providers/{id}", "DELETE /api/v1/llm-providers/{id}", "POST /api/v1/llm-providers/{id}/test",
		"GET /api/v1/apps/{app_id}/model-providers",
	} {
		method, path, _ := strings.Cut(route, " ")
		require.Contains(t, doc.Paths[path], strings.ToLower(method), route)
	}
	// api_key is documented write-only, and no answer schema carries it.
	writeOnly := false
	for name, schema := range doc.Components.Schemas {
		if key, ok := schema.Properties["api_key"]; ok {
			require.True(t, key.WriteOnly, name)
			writeOnly = true
		}
	}
	require.True(t, writeOnly)
}
