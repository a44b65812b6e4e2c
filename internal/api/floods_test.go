package api_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/api"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// loginBurst sends n logins at once and counts the answers by status.
func (e *env) loginBurst(n int, email, password string, opts ...opt) map[int]int {
	e.t.Helper()
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			r := e.do("POST", "/api/v1/auth/login", form("email", email, "password", password), append(opts, acceptJSON)...)
			mu.Lock()
			counts[r.Status]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return counts
}

// A burst of concurrent guesses gets no more tries than a sequence would:
// the failure limit is taken before the password is checked.
func TestConcurrentFailedLoginsGetNoMoreTries(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, map[string]string{"AP_LOGIN_FAILURE_LIMIT": "10"})
		e.signup("u@example.com")
		counts := e.loginBurst(60, "u@example.com", "guess-guess")
		require.Equal(t, 60, counts[http.StatusUnauthorized]+counts[http.StatusTooManyRequests], "%v", counts)
		require.LessOrEqual(t, counts[http.StatusUnauthorized], 10, "401s (tries) of 60 concurrent failed logins: %v", counts)
		// The limit is spent: even the right password waits for the minute.
		e.do("POST", "/api/v1/auth/login", form("email", "u@example.com", "password", "password1"), acceptJSON).
			expectError(t, 429, "RateLimitError", "Rate limit exceeded. Try again in 60 seconds.")
	})
}

// Without AP_TRUSTED_PROXIES, X-Forwarded-For is anyone's to write: it
// neither dodges the login limit nor changes the logged address.
func TestForgedForwardedForChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, map[string]string{"AP_LOGIN_FAILURE_LIMIT": "3"})
	e.signup("u@example.com")
	for i := range 3 {
		e.do("POST", "/api/v1/auth/login", form("email", "u@example.com", "password", "guess-guess"), acceptJSON,
			header("X-Forwarded-For", "198.51.100."+itoa(int64(i)))).expect(t, 401)
	}
	e.do("POST", "/api/v1/auth/login", form("email", "u@example.com", "password", "password1"), acceptJSON,
		header("X-Forwarded-For", "198.51.100.99")).expect(t, 429)
	require.NotContains(t, e.logs.String(), "198.51.100.")
	require.Contains(t, e.logs.String(), "ip=127.0.0.1")
}

// Behind a trusted load balancer every client keeps its own login limit
// (it must not become one limit for everyone), and a client cannot dodge
// its own by prepending addresses to the header.
func TestLoginLimitPerClientBehindTrustedProxy(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		// The test's HTTP client is the load balancer: its peer address is
		// 127.0.0.1.
		e := newEnv(t, d, map[string]string{"AP_LOGIN_FAILURE_LIMIT": "3", "AP_TRUSTED_PROXIES": "127.0.0.1/32,10.0.0.0/8"})
		e.signup("u@example.com")
		via := func(xff string) opt { return header("X-Forwarded-For", xff) }
		guess := func(xff string) *resp {
			return e.do("POST", "/api/v1/auth/login", form("email", "u@example.com", "password", "guess-guess"), acceptJSON, via(xff))
		}
		for range 3 {
			guess("198.51.100.1").expect(t, 401)
		}
		guess("198.51.100.1").expect(t, 429)
		// The guesser's forged entries sit left of the one the proxy added.
		guess("203.0.113.9, 198.51.100.1").expect(t, 429)
		guess("10.0.0.5, 198.51.100.1, 10.0.0.7").expect(t, 429)
		// Another client behind the same proxy is untouched.
		guess("198.51.100.2").expect(t, 401)
		r := e.do("POST", "/api/v1/auth/login", form("email", "u@example.com", "password", "password1"), acceptJSON, via("198.51.100.2")).expect(t, 200)
		require.Contains(t, e.logs.String(), "ip=198.51.100.2")
		require.NotEmpty(t, r.str("access_token"))
	})
}

// The WebSocket handshake spends the rate like any request, refusals too.
func TestWebSocketHandshakeSpendsTheRate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, map[string]string{"AP_RATE_LIMIT": "4"})
	token := e.signup("u@example.com") // 2 of the address's 4
	e.do("GET", "/api/v1/ws?token=st_guess", nil).expect(t, 401)
	e.do("GET", "/api/v1/ws", nil, bearer("ak_guess")).expect(t, 401)
	e.do("GET", "/api/v1/ws", nil, bearer("ak_guess")).expect(t, 429)
	for range 4 {
		e.do("GET", "/api/v1/ws", nil, bearer(token)).expect(t, 400) // not an upgrade: refused after the rate
	}
	e.do("GET", "/api/v1/ws", nil, bearer(token)).expect(t, 429)
}

// Every answer carries nosniff (e.do checks it on every request of every
// test); these are the answers that are not huma's.
func TestNosniffOnEveryKindOfAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	token := e.signup("u@example.com")
	e.do("GET", "/api/v1/nothing-here", nil).expect(t, 404)
	e.do("DELETE", "/api/v1/version", nil).expect(t, 405)
	e.do("GET", "/metrics", nil).expect(t, 200)
	e.do("GET", "/docs", nil).expect(t, 200)
	e.do("GET", "/docs/init.js", nil).expect(t, 200)
	e.do("GET", "/api/v1/openapi.json", nil).expect(t, 200)
	e.do("GET", "/api/v1/users/me", nil).expect(t, 401)
	// Failed WebSocket handshakes: ours, and the library's.
	e.do("GET", "/api/v1/ws", nil).expect(t, 401)
	e.do("GET", "/api/v1/ws", nil, bearer(token)).expect(t, 400)
	r := e.do("GET", "/api/v1/ws", nil, bearer(token), header("Upgrade", "websocket"), header("Connection", "Upgrade"))
	require.GreaterOrEqual(t, r.Status, 400, "a handshake without a key fails: %s", r.Body)
	r = e.do("GET", "/api/v1/ws", nil, cookie(token), header("Origin", "https://evil.example"),
		header("Upgrade", "websocket"), header("Connection", "Upgrade"),
		header("Sec-WebSocket-Version", "13"), header("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="))
	require.Equal(t, 403, r.Status, "a cross-origin cookie handshake is refused: %s", r.Body)
}

// An oversized request head answers the JSON error body, not net/http's
// plain text (internal/cli checks it on the real binary's http.Server).
func TestOversizedHeadersAnswerJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	big := strings.Repeat("a", api.MaxHeaderBytes)
	e.do("GET", "/api/v1/version", nil, header("X-Big", big)).
		expectError(t, 431, "PayloadTooLargeError", "Request headers too large")
	e.do("GET", "/api/v1/version", nil, cookie("st_"+big)).expect(t, 431)
	e.do("GET", "/api/v1/version?q="+big, nil).expect(t, 431)
	e.do("GET", "/api/v1/version", nil, header("X-Fine", big[:api.MaxHeaderBytes-1024])).expect(t, 200)
}

func TestCORS(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, map[string]string{"AP_CORS_ORIGINS": "https://app.example.com,http://localhost:5173"})
	token := e.signup("u@example.com")
	listed := header("Origin", "https://app.example.com")
	preflight := func(origin string) *resp {
		return e.do("OPTIONS", "/api/v1/users/me", nil, header("Origin", origin),
			header("Access-Control-Request-Method", "PATCH"), header("Access-Control-Request-Headers", "authorization, content-type"))
	}

	// A listed origin's preflight is answered (it was 405), for Bearer
	// requests: Authorization may be sent, credentials are not allowed.
	r := preflight("https://app.example.com").expect(t, 204)
	require.Equal(t, "https://app.example.com", r.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, r.Header.Get("Access-Control-Allow-Methods"), "PATCH")
	require.Contains(t, r.Header.Get("Access-Control-Allow-Headers"), "Authorization")
	require.Contains(t, r.Header.Get("Access-Control-Allow-Headers"), "Content-Type")
	require.Empty(t, r.Header.Get("Access-Control-Allow-Credentials"))
	require.Contains(t, r.Header.Values("Vary"), "Origin")
	preflight("http://localhost:5173").expect(t, 204)

	// The request itself: readable by the script, with the headers it needs.
	r = e.do("PATCH", "/api/v1/users/me", map[string]any{"first_name": "Ada"}, listed, bearer(token)).expect(t, 200)
	require.Equal(t, "https://app.example.com", r.Header.Get("Access-Control-Allow-Origin"))
	for _, h := range []string{"X-Request-ID", "Location", "Retry-After", "Preference-Applied", "Idempotent-Replayed"} {
		require.Contains(t, r.Header.Get("Access-Control-Expose-Headers"), h)
	}
	require.Empty(t, r.Header.Get("Access-Control-Allow-Credentials"))
	// Errors are readable too.
	r = e.do("GET", "/api/v1/users/me", nil, listed).expect(t, 401)
	require.Equal(t, "https://app.example.com", r.Header.Get("Access-Control-Allow-Origin"))

	// A cookie is never accepted cross-origin, not even for a read.
	e.do("GET", "/api/v1/users/me", nil, listed, cookie(token)).expectError(t, 401, "AuthenticationError", "Authentication required")
	e.do("GET", "/api/v1/users/me", nil, cookie(token)).expect(t, 200)

	// Unlisted origins get no CORS header at all.
	for _, origin := range []string{"https://evil.example", "https://app.example.com.evil.example", "null"} {
		r = preflight(origin)
		require.NotEqual(t, 204, r.Status)
		require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"), origin)
		r = e.do("GET", "/api/v1/users/me", nil, header("Origin", origin), bearer(token)).expect(t, 200)
		require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"), origin)
		require.Empty(t, r.Header.Get("Access-Control-Expose-Headers"), origin)
	}
}

func TestNoCORSByDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	r := e.do("OPTIONS", "/api/v1/users/me", nil, header("Origin", "https://app.example.com"), header("Access-Control-Request-Method", "GET"))
	require.NotEqual(t, 204, r.Status)
	require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"))
}
