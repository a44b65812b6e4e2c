package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/config"
	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/server"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/testlog"
)

// cheapPasswords keeps argon2id real but fast under -race.
var cheapPasswords = auth.PasswordParams{Memory: 64, Time: 1, Threads: 1}

// env is a running platform on a real database behind a real HTTP server.
type env struct {
	t    testing.TB
	srv  *server.Server
	url  string
	logs *testlog.Buffer
}

// newEnv starts a server on dialect d; vars are AP_* settings. The outside
// world (webhook receivers, users' LLM providers) is on 127.0.0.2, the one
// private address the egress guard allows (egresstest).
func newEnv(t testing.TB, d store.Dialect, vars map[string]string) *env {
	t.Helper()
	return newEnvWith(t, d, vars, server.Options{})
}

// newEnvWith is newEnv with the server's options (the API served, cheap
// passwords, whatever opts sets besides).
func newEnvWith(t testing.TB, d store.Dialect, vars map[string]string, opts server.Options) *env {
	t.Helper()
	all := map[string]string{"AP_DATA_DIR": t.TempDir(), "AP_DATABASE_URL": testdb.Migrated(t, d), "AP_RATE_LIMIT": "100000",
		"AP_EGRESS_ALLOW": egresstest.Allow}
	for k, v := range vars {
		all[k] = v
	}
	cfg, err := config.FromEnv(func(k string) string { return all[k] })
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	opts.HTTP, opts.Password = true, cheapPasswords
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := server.New(context.Background(), cfg, log, opts)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Stop(ctx)
	})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &env{t: t, srv: srv, url: hs.URL, logs: logs}
}

// stopAtOnce stops the server without a drain when the test ends, for a
// test that leaves runs spinning: draining them would burn every core of
// the machine until their timeouts, under the other packages' tests.
func (e *env) stopAtOnce() {
	e.t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		e.srv.Stop(ctx)
	})
}

// opt shapes a request.
type opt func(*http.Request)

func bearer(token string) opt {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

func cookie(token string) opt {
	return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "ap_session", Value: token}) }
}

func header(k, v string) opt { return func(r *http.Request) { r.Header.Set(k, v) } }

var acceptJSON = header("Accept", "application/json")

// resp is an answer, its body kept and decoded when it is JSON.
type resp struct {
	Status int
	Header http.Header
	Body   []byte
	JSON   map[string]any
}

func (r *resp) str(key string) string { s, _ := r.JSON[key].(string); return s }

// do sends a request; body is a string (form-encoded), []byte (raw) or any
// value (JSON). Redirects are not followed.
func (e *env) do(method, path string, body any, opts ...opt) *resp {
	e.t.Helper()
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd, ct = strings.NewReader(b), "application/x-www-form-urlencoded"
	case []byte:
		rd, ct = bytes.NewReader(b), "application/json"
	default:
		j, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd, ct = bytes.NewReader(j), "application/json"
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	require.NoError(e.t, err)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for _, o := range opts {
		o(req)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	out := &resp{Status: res.StatusCode, Header: res.Header}
	out.Body, err = io.ReadAll(res.Body)
	require.NoError(e.t, err)
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") && len(out.Body) > 0 {
		_ = json.Unmarshal(out.Body, &out.JSON)
	}
	require.NotEmpty(e.t, res.Header.Get("X-Request-ID"), "every response carries a request id")
	require.Equal(e.t, "nosniff", res.Header.Get("X-Content-Type-Options"), "every response forbids sniffing")
	return out
}

// expect asserts a status and, for errors, the contract's body shape.
func (r *resp) expect(t testing.TB, status int) *resp {
	t.Helper()
	require.Equal(t, status, r.Status, "body: %s", r.Body)
	if status >= 400 {
		require.Equal(t, float64(status), r.JSON["status_code"], "body: %s", r.Body)
		require.NotEmpty(t, r.str("detail"))
		require.NotEmpty(t, r.str("error_type"))
	}
	return r
}

// expectError asserts an error status, its error_type and its detail.
func (r *resp) expectError(t testing.TB, status int, errorType, detail string) *resp {
	t.Helper()
	r.expect(t, status)
	require.Equal(t, errorType, r.str("error_type"), "body: %s", r.Body)
	require.Contains(t, r.str("detail"), detail, "body: %s", r.Body)
	return r
}

func form(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(kv[i] + "=" + strings.ReplaceAll(kv[i+1], "+", "%2B"))
	}
	return b.String()
}

// signup registers and logs in, returning a session token.
func (e *env) signup(email string) string {
	e.t.Helper()
	e.do("POST", "/api/v1/auth/register", form("email", email, "password", "password1", "confirm_password", "password1"), acceptJSON).expect(e.t, 201)
	return e.login(email, "password1")
}

func (e *env) login(email, password string) string {
	e.t.Helper()
	r := e.do("POST", "/api/v1/auth/login", form("email", email, "password", password), acceptJSON).expect(e.t, 200)
	return r.str("access_token")
}

// key creates an API key with the session token and returns it.
func (e *env) key(session string, body map[string]any) (string, int64) {
	e.t.Helper()
	r := e.do("POST", "/api/v1/user/api-keys", body, bearer(session)).expect(e.t, 201)
	return r.str("key"), int64(r.JSON["id"].(float64))
}

func (e *env) keyWith(session string, scopes ...string) string {
	k, _ := e.key(session, map[string]any{"name": "k", "scopes": scopes})
	return k
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
