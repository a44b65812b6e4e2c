package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/api"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func TestBodyLimitsAndMalformedJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	token := e.signup("u@example.com")

	big := []byte(`{"first_name": "` + strings.Repeat("x", 1<<20) + `"}`)
	e.do("PATCH", "/api/v1/users/me", big, bearer(token)).expectError(t, 413, "PayloadTooLargeError", "1 MiB")
	e.do("POST", "/api/v1/auth/register", "email=a@b.co&password="+strings.Repeat("x", 1<<20)).expect(t, 413)

	e.do("PATCH", "/api/v1/users/me", []byte(`{"first_name": `), bearer(token)).expectError(t, 400, "ValidationError", "Malformed JSON body")
	e.do("PATCH", "/api/v1/users/me", []byte(`[1,2]`), bearer(token)).expect(t, 400)
	r := e.do("PATCH", "/api/v1/users/me", []byte(`{"first_name": "secret-value-1", "last_name": 7}`), bearer(token)).
		expectError(t, 400, "ValidationError", "Invalid value for field last_name: expected string")
	require.NotContains(t, string(r.Body), "secret-value-1", "the request is not echoed back")
}

func TestNotFoundAndMethodNotAllowedAreJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	e.do("GET", "/api/v1/nothing-here", nil).expectError(t, 404, "NotFoundError", "Not found")
	r := e.do("DELETE", "/api/v1/version", nil).expect(t, 405)
	require.Contains(t, r.Header.Get("Allow"), "GET")
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, map[string]string{"AP_RATE_LIMIT": "5"})
	a := e.signup("a@example.com") // 2 calls from this address: register and login
	c := e.signup("c@example.com") // 2 more
	b := e.keyWith(a, "read:all")  // 1 call of user a

	for range 4 {
		e.do("GET", "/api/v1/users/me", nil, bearer(a)).expect(t, 200)
	}
	r := e.do("GET", "/api/v1/users/me", nil, bearer(a)).
		expectError(t, 429, "RateLimitError", "Rate limit exceeded. Try again in 60 seconds.")
	require.Equal(t, "60", r.Header.Get("Retry-After"))
	// All of a user's keys and sessions share one budget: more keys are
	// not more rate.
	e.do("GET", "/api/v1/users/me", nil, bearer(b)).expect(t, 429)
	e.do("GET", "/api/v1/users/me", nil, cookie(a)).expect(t, 429)

	// A 401 spends the address's budget (one call left of five).
	e.do("GET", "/api/v1/users/me", nil, bearer("ak_guess")).expect(t, 401)
	e.do("GET", "/api/v1/users/me", nil, bearer("ak_guess")).expect(t, 429)
	e.do("GET", "/api/v1/users/me", nil).expect(t, 429)
	e.do("POST", "/api/v1/auth/login", form("email", "a@example.com", "password", "password1"), acceptJSON).expect(t, 429)

	// A 403 spends the user's budget.
	for range 5 {
		e.do("GET", "/api/v1/users", nil, bearer(c)).expect(t, 403)
	}
	e.do("GET", "/api/v1/users/me", nil, bearer(c)).expect(t, 429)

	// Health probes and metrics are not API calls: a load balancer polling
	// from one IP is never limited.
	for range 20 {
		e.do("GET", "/healthz", nil).expect(t, 200)
		e.do("GET", "/readyz", nil).expect(t, 200)
		e.do("GET", "/metrics", nil).expect(t, 200)
	}
}

func TestPanicsAndInternalErrorsDoNotLeak(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	type out struct{ Body struct{} }
	api.Register(e.srv.API.Huma(), huma.Operation{OperationID: "boom", Method: http.MethodGet, Path: "/api/v1/test-panic"}, auth.Public,
		func(context.Context, *struct{}) (*out, error) { panic("the database password is hunter2") })
	api.Register(e.srv.API.Huma(), huma.Operation{OperationID: "fail", Method: http.MethodGet, Path: "/api/v1/test-error"}, auth.Public,
		func(context.Context, *struct{}) (*out, error) {
			return nil, errors.New("pq: connection to 10.0.0.5 failed for user admin")
		})

	for _, path := range []string{"/api/v1/test-panic", "/api/v1/test-error"} {
		r := e.do("GET", path, nil).expectError(t, 500, "InternalError", "Internal server error")
		require.NotContains(t, string(r.Body), "hunter2")
		require.NotContains(t, string(r.Body), "10.0.0.5")
		id := r.Header.Get("X-Request-ID")
		require.Contains(t, e.logs.String(), "request_id="+id, "the log has the cause under the request id")
	}
	require.Contains(t, e.logs.String(), "hunter2")
	require.Contains(t, e.logs.String(), "10.0.0.5")
	e.do("GET", "/healthz", nil).expect(t, 200) // the server lives on
}

func TestOperationsEndpoints(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		require.Equal(t, "ok", e.do("GET", "/healthz", nil).expect(t, 200).str("status"))
		require.Equal(t, "ok", e.do("GET", "/readyz", nil).expect(t, 200).str("status"))
		v := e.do("GET", "/api/v1/version", nil).expect(t, 200)
		require.Equal(t, "v1", v.str("api_version"))
		require.NotEmpty(t, v.str("version"))

		e.signup("u@example.com")
		m := e.do("GET", "/metrics", nil).expect(t, 200)
		require.Contains(t, string(m.Body), `agentplatform_http_requests_total{method="POST",route="POST /api/v1/auth/login",status="200"} 1`)
		require.Contains(t, string(m.Body), "agentplatform_http_request_duration_seconds_bucket")
		require.Contains(t, string(m.Body), "go_goroutines")
		require.Contains(t, string(m.Body), `agentplatform_queue_depth{state="queued"}`)
		require.Contains(t, string(m.Body), "agentplatform_activation_duration_seconds")
	})
}

func TestReadyzFailsWhenTheDatabaseIsGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	require.NoError(t, e.srv.Store.Close())
	e.do("GET", "/readyz", nil).expect(t, 503)
	e.do("GET", "/healthz", nil).expect(t, 200)
}

func TestDocsWorkOffline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	for _, path := range []string{"/docs", "/api/v1/docs"} {
		r := e.do("GET", path, nil).expect(t, 200)
		page := string(r.Body)
		require.Contains(t, page, "/docs/assets/swagger-ui-bundle.js")
		require.NotContains(t, page, "https://", "no CDN: every asset comes from the binary")
		require.NotContains(t, page, "//cdn")
	}
	for _, asset := range []string{"/docs/assets/swagger-ui-bundle.js", "/docs/assets/swagger-ui-standalone-preset.js", "/docs/assets/swagger-ui.css", "/docs/init.js"} {
		r := e.do("GET", asset, nil).expect(t, 200)
		require.Greater(t, len(r.Body), 100, asset)
	}
	require.Contains(t, string(e.do("GET", "/docs/init.js", nil).Body), "/api/v1/openapi.json")
}

// TestOpenAPIDocumentsEveryRoute checks the document against the routes the
// server really answers.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	r := e.do("GET", "/api/v1/openapi.json", nil).expect(t, 200)
	var doc struct {
		OpenAPI    string                                `json:"openapi"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas         map[string]json.RawMessage `json:"schemas"`
			SecuritySchemes map[string]json.RawMessage `json:"securitySchemes"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.Contains(t, doc.Components.SecuritySchemes, "bearer")
	require.Contains(t, doc.Components.SecuritySchemes, "cookie")
	require.Contains(t, doc.Components.Schemas, "ErrorBody")

	for _, route := range []string{
		"POST /api/v1/auth/register", "POST /api/v1/auth/login", "POST /api/v1/auth/logout",
		"GET /api/v1/users/me", "PATCH /api/v1/users/me", "POST /api/v1/users/me/password",
		"GET /api/v1/users", "GET /api/v1/users/{id}", "PATCH /api/v1/users/{id}", "GET /api/v1/users/audit-log",
		"POST /api/v1/user/api-keys", "GET /api/v1/user/api-keys", "DELETE /api/v1/user/api-keys/{key_id}",
		"GET /api/v1/version", "GET /healthz", "GET /readyz",
	} {
		method, path, _ := strings.Cut(route, " ")
		require.Contains(t, doc.Paths, path, route)
		require.Contains(t, doc.Paths[path], strings.ToLower(method), route)
	}
	register := string(doc.Paths["/api/v1/auth/register"]["post"])
	require.Contains(t, register, "application/x-www-form-urlencoded")
	require.Contains(t, register, "confirm_password")
}
