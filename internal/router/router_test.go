package router_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/webtest"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, env *webtest.Env, path string, header ...string) (*http.Response, string) {
	t.Helper()
	a := env.Call(t, "GET", path, "", "", header...)
	return a.Response, a.Body
}

// TestOneIdentityForAPIAndPages: the credential is read once, the same way,
// for the API and the pages; what each route accepts is its own rule.
func TestOneIdentityForAPIAndPages(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, nil)
	form := url.Values{"email": {"ann@example.com"}, "password": {"password1"}, "confirm_password": {"password1"}}.Encode()
	for _, path := range []string{"/api/v1/auth/register", "/api/v1/auth/login"} {
		res, err := http.Post(env.URL+path, "application/x-www-form-urlencoded", strings.NewReader(form))
		require.NoError(t, err)
		res.Body.Close()
	}
	req, _ := http.NewRequest("POST", env.URL+"/api/v1/auth/login", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var login struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&login))
	res.Body.Close()
	session := login.AccessToken
	cookie := "ap_session=" + session

	// The cookie opens both the API and the pages.
	res, _ = get(t, env, "/api/v1/users/me", "Cookie", cookie)
	require.Equal(t, 200, res.StatusCode)
	res, _ = get(t, env, "/keys", "Cookie", cookie)
	require.Equal(t, 200, res.StatusCode)

	// The Bearer header opens the API, not the pages.
	res, _ = get(t, env, "/api/v1/users/me", "Authorization", "Bearer "+session)
	require.Equal(t, 200, res.StatusCode)
	res, _ = get(t, env, "/keys", "Authorization", "Bearer "+session)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)

	// A malformed or wrong header is the credential, and fails: it does
	// not fall back to the cookie.
	for _, h := range []string{"Basic abc", "Bearer st_wrong"} {
		res, _ = get(t, env, "/api/v1/users/me", "Authorization", h, "Cookie", cookie)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode, h)
	}

	// ?token= is read on the routes that take it (the SSE stream, the
	// WebSocket) and nowhere else.
	res, _ = get(t, env, "/api/v1/users/me?token="+session)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	res, _ = get(t, env, "/keys?token="+session)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	res, body := get(t, env, "/api/v1/activations/00000000-0000-7000-8000-000000000000/stream?token="+session)
	require.Equal(t, http.StatusNotFound, res.StatusCode, "authenticated, then not found: %s", body)
	res, _ = get(t, env, "/api/v1/ws?token="+session)
	require.Equal(t, http.StatusBadRequest, res.StatusCode, "authenticated, then not a WebSocket handshake")
	res, _ = get(t, env, "/api/v1/ws")
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)

	// Logs and metrics name the route the mux chose, API or page, though
	// the identity middleware hands a copy of the request on.
	_, metrics := get(t, env, "/metrics")
	for _, route := range []string{`route="GET /api/v1/users/me"`, `route="GET /keys"`, `route="GET /api/v1/ws"`} {
		require.Contains(t, metrics, route)
	}
}

// TestProductionHeaders: HSTS on every answer in production, pages and API.
func TestProductionHeaders(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, map[string]string{"AP_ENV": "production", "AP_PUBLIC_URL": "https://ap.example.com"})
	for _, path := range []string{"/login", "/healthz", "/nowhere"} {
		res, _ := get(t, env, path)
		require.Equal(t, "max-age=63072000; includeSubDomains", res.Header.Get("Strict-Transport-Security"), path)
		require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"), path)
	}
}

// do sends method path with body (form-encoded when not empty) and the
// header pairs, and returns the answer with its body read.
func do(t *testing.T, env *webtest.Env, method, path, body string, header ...string) (*http.Response, string) {
	t.Helper()
	contentType := ""
	if body != "" {
		contentType = "application/x-www-form-urlencoded"
	}
	a := env.Call(t, method, path, contentType, body, header...)
	return a.Response, a.Body
}

// requirePage checks an HTML error page: its status, the page's layout and
// headers, and its text.
func requirePage(t *testing.T, res *http.Response, body string, status int, text string) {
	t.Helper()
	require.Equal(t, status, res.StatusCode, body)
	require.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
	require.Contains(t, res.Header.Get("Content-Security-Policy"), "default-src 'none'")
	require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	require.NotEmpty(t, res.Header.Get("X-Request-ID"))
	require.Contains(t, body, "<!doctype html>")
	require.Contains(t, body, "/static/app.css")
	require.Contains(t, body, text)
}

// requireJSON checks the API's error body.
func requireJSON(t *testing.T, res *http.Response, body string, status int, errorType string) {
	t.Helper()
	require.Equal(t, status, res.StatusCode, body)
	require.Equal(t, "application/json", res.Header.Get("Content-Type"))
	var e struct {
		Detail     string `json:"detail"`
		StatusCode int    `json:"status_code"`
		ErrorType  string `json:"error_type"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	require.Equal(t, status, e.StatusCode)
	require.Equal(t, errorType, e.ErrorType)
	require.NotEmpty(t, e.Detail)
}

// TestRefusalsSpeakTheAskersLanguage: what the front door refuses, or a
// path no route has, is an HTML page for a browser outside /api/, and the
// API's JSON error body under /api/ or for a client that accepts JSON.
func TestRefusalsSpeakTheAskersLanguage(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, nil)

	// An unknown page.
	res, body := do(t, env, "GET", "/no/such/page", "")
	requirePage(t, res, body, http.StatusNotFound, "There is nothing here")
	res, body = do(t, env, "GET", "/no/such/page", "", "Accept", "application/json")
	requireJSON(t, res, body, http.StatusNotFound, "NotFoundError")
	// An unknown API path, as before.
	res, body = do(t, env, "GET", "/api/v1/nope", "")
	requireJSON(t, res, body, http.StatusNotFound, "NotFoundError")
	res, body = do(t, env, "GET", "/api/v1/nope", "", "Accept", "text/html")
	requireJSON(t, res, body, http.StatusNotFound, "NotFoundError")

	// A cross-origin form post rides on the cookie: refused, the page
	// saying so for a page path, the error body for the API.
	form := url.Values{"email": {"ann@example.com"}}.Encode()
	res, body = do(t, env, "POST", "/login", form, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	requirePage(t, res, body, http.StatusForbidden, "Cross-origin request refused")
	res, body = do(t, env, "POST", "/api/v1/auth/login", form, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	requireJSON(t, res, body, http.StatusForbidden, "PermissionError")

	// An oversized body.
	big := "x=" + strings.Repeat("a", 1<<20)
	res, body = do(t, env, "POST", "/keys", big)
	requirePage(t, res, body, http.StatusRequestEntityTooLarge, "Request body too large")
	res, body = do(t, env, "POST", "/api/v1/auth/login", big)
	requireJSON(t, res, body, http.StatusRequestEntityTooLarge, "PayloadTooLargeError")

	// A wrong method on a page.
	res, body = do(t, env, "DELETE", "/login", "")
	requirePage(t, res, body, http.StatusMethodNotAllowed, "Method not allowed")
	require.Contains(t, res.Header.Get("Allow"), "GET")
}

// TestErrorPageKnowsTheSession: a signed-in browser's 404 page has the
// header of every page (the user's email, the navigation).
func TestErrorPageKnowsTheSession(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, nil)
	form := url.Values{"email": {"ann@example.com"}, "password": {"password1"}, "confirm_password": {"password1"}}.Encode()
	do(t, env, "POST", "/api/v1/auth/register", form, "Accept", "application/json")
	res, body := do(t, env, "POST", "/api/v1/auth/login", form, "Accept", "application/json")
	require.Equal(t, 200, res.StatusCode, body)
	var login struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &login))

	res, body = do(t, env, "GET", "/no/such/page", "", "Cookie", "ap_session="+login.AccessToken)
	requirePage(t, res, body, http.StatusNotFound, "ann@example.com")
	// A Bearer header is not a page's credential: no email shown.
	res, body = do(t, env, "GET", "/no/such/page", "", "Authorization", "Bearer "+login.AccessToken)
	requirePage(t, res, body, http.StatusNotFound, "There is nothing here")
	require.NotContains(t, body, "ann@example.com")
}
