package api_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// Text PostgreSQL cannot store (U+0000, invalid UTF-8) is refused wherever
// it is in a request, with 400 naming the field, on both databases: the
// same answer everywhere, and never a 500.
func TestNULAndInvalidUTF8AreRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	const (
		nul     = "must not contain the NUL character (U+0000)"
		invalid = "must be valid UTF-8 text"
	)
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("u@example.com")
		f := e.llmAgent(token, nil, 0)
		raw := func(s string) []byte { return []byte(s) }
		form := func(s string) string { return s } // form-encoded as written
		yaml := header("Content-Type", "application/yaml")
		probes := []struct {
			name         string
			method, path string
			body         any
			opts         []opt
			field, what  string
		}{
			// Unauthenticated forms, form-encoded and as JSON.
			{"register form NUL", "POST", "/api/v1/auth/register", form("email=a%00b@example.com&password=password1&confirm_password=password1"), nil, "email", nul},
			{"register form UTF-8", "POST", "/api/v1/auth/register", form("email=c@example.com&password=password1&confirm_password=password1&first_name=%FF%FE"), nil, "first_name", invalid},
			{"register JSON escape", "POST", "/api/v1/auth/register", raw(`{"email":"d@example.com","password":"pass\u0000word1","confirm_password":"x"}`), nil, "password", nul},
			{"login form NUL", "POST", "/api/v1/auth/login", form("email=u@example.com&password=password1%00"), nil, "password", nul},
			{"login form UTF-8", "POST", "/api/v1/auth/login", form("email=%C3%28@example.com&password=x"), nil, "email", invalid},
			{"login JSON raw bytes", "POST", "/api/v1/auth/login", raw("{\"email\":\"u@example.com\",\"password\":\"\xff\"}"), nil, "password", invalid},
			// JSON bodies, nested fields, keys.
			{"activate nested NUL", "POST", "/api/v1/agents/" + f.agentID + "/activate", raw(`{"input_data":{"prompt":"hi","items":[{"x":"ok"},{"x":"a\u0000"}]}}`), []opt{bearer(token)}, "input_data.items[1].x", nul},
			{"activate lone surrogate", "POST", "/api/v1/agents/" + f.agentID + "/activate", raw(`{"input_data":{"prompt":"\ud800"}}`), []opt{bearer(token)}, "input_data.prompt", invalid},
			{"activate raw invalid", "POST", "/api/v1/activations", raw("{\"agent_id\":\"" + f.agentID + "\",\"input_data\":{},\"context\":{\"chat_id\":\"\xc3\"}}"), []opt{bearer(token)}, "context.chat_id", invalid},
			{"activate key NUL", "POST", "/api/v1/agents/" + f.agentID + "/activate", raw(`{"input_data":{"a\u0000b":1}}`), []opt{bearer(token)}, "input_data.a\uFFFDb", nul},
			{"metadata NUL", "POST", "/api/v1/agents/" + f.agentID + "/activate", raw(`{"input_data":{},"metadata":{"webhook_url":"http://x/\u0000"}}`), []opt{bearer(token)}, "metadata.webhook_url", nul},
			{"create app", "POST", "/api/v1/apps", raw(`{"name":"app\u0000","slug":"app"}`), []opt{bearer(token)}, "name", nul},
			{"update me", "PATCH", "/api/v1/users/me", raw(`{"first_name":"\udfff"}`), []opt{bearer(token)}, "first_name", invalid},
			{"provider models", "POST", "/api/v1/llm-providers", raw(`{"name":"p","provider_type":"echo","models":["a","b\u0000"]}`), []opt{bearer(token)}, "models[1]", nul},
			{"api key name", "POST", "/api/v1/user/api-keys", raw(`{"name":"k\u0000","scopes":["app:access"]}`), []opt{bearer(token)}, "name", nul},
			{"manifest YAML escape", "POST", "/api/v1/apps/import-manifest", raw("name: \"x\\0y\"\nslug: x\nversion: 1.0.0\n"), []opt{bearer(token), yaml}, "name", nul},
			{"manifest YAML raw", "POST", "/api/v1/apps/import-manifest", raw("name: x\xffy\nslug: x\nversion: 1.0.0\n"), []opt{bearer(token), yaml}, "body", invalid},
			// Query parameters, a JSON one included.
			{"query NUL", "GET", "/api/v1/activations?status=%00", nil, []opt{bearer(token)}, "status", nul},
			{"query UTF-8", "GET", "/api/v1/activations?agent_id=%FF", nil, []opt{bearer(token)}, "agent_id", invalid},
			{"query JSON escape", "GET", "/api/v1/agents/" + f.agentID + "/activations?context=" + url.QueryEscape(`{"chat_id":"\u0000"}`), nil, []opt{bearer(token)}, "context", nul},
			{"socket token", "GET", "/api/v1/ws?token=%00", nil, nil, "token", nul},
			// Path parameters.
			{"path NUL", "GET", "/api/v1/agents/%00", nil, []opt{bearer(token)}, "agent_id", nul},
			{"path UTF-8", "GET", "/api/v1/apps/%FF/agents", nil, []opt{bearer(token)}, "app_id", invalid},
			{"path provider", "DELETE", "/api/v1/llm-providers/x%00", nil, []opt{bearer(token)}, "id", nul},
			{"path activation", "GET", "/api/v1/activations/%C0%AF/stream", nil, []opt{bearer(token)}, "activation_id", invalid},
			// Headers the platform stores.
			{"idempotency key", "POST", "/api/v1/agents/" + f.agentID + "/activate", raw(`{"input_data":{}}`), []opt{bearer(token), header("Idempotency-Key", "k\xff")}, "Idempotency-Key", invalid},
		}
		for _, p := range probes {
			t.Run(p.name, func(t *testing.T) {
				r := e.do(p.method, p.path, p.body, append(p.opts, acceptJSON)...)
				require.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
				require.Equal(t, "ValidationError", r.str("error_type"))
				require.Contains(t, r.str("detail"), p.field+": "+p.what, "%s", r.Body)
			})
		}
		// Clean text still passes: non-ASCII, escapes, surrogate pairs.
		r := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate",
			raw(`{"input_data":{"prompt":"caf\u00e9 \ud83d\ude00 \\u0000 ok","x":"日本"}}`), bearer(token)).expect(t, 201)
		done := e.await(token, r.str("activation_id"))
		require.Equal(t, "echo: café 😀 \\u0000 ok", done.JSON["output_data"].(map[string]any)["response"])
		e.do("GET", "/api/v1/activations?status=completed&agent_id="+f.agentID, nil, bearer(token)).expect(t, 200)
		require.NotContains(t, e.logs.String(), "level=ERROR", "no probe reached the database")
	})
}
