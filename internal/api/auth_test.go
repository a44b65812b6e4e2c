package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func TestRegister(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		reg := "/api/v1/auth/register"

		// A browser form: 303 to /login, no body.
		r := e.do("POST", reg, form("email", "First@Example.com", "password", "password1", "confirm_password", "password1", "first_name", "Ada", "last_name", "L")).expect(t, 303)
		require.Equal(t, "/login", r.Header.Get("Location"))
		require.Empty(t, r.Body)

		// JSON variant: 201 with the user; the first user was the admin.
		r = e.do("POST", reg, form("email", "second@example.com", "password", "password1", "confirm_password", "password1"), acceptJSON).expect(t, 201)
		require.Equal(t, "second@example.com", r.str("email"))
		require.Equal(t, false, r.JSON["is_admin"])
		require.NotContains(t, string(r.Body), "password")
		first := e.login("first@example.com", "password1")
		me := e.do("GET", "/api/v1/users/me", nil, bearer(first)).expect(t, 200)
		require.Equal(t, true, me.JSON["is_admin"], "the first user of an empty instance is an admin")
		require.Equal(t, "first@example.com", me.str("email"), "emails are stored lower-case")

		// A JSON body is accepted too.
		e.do("POST", reg, map[string]any{"email": "json@example.com", "password": "password1", "confirm_password": "password1"}, acceptJSON).expect(t, 201)

		for _, tc := range []struct {
			name, body string
			status     int
			errType    string
			detail     string
		}{
			{"duplicate email", form("email", "FIRST@example.com", "password", "password1", "confirm_password", "password1"), 409, "ConflictError", "Email already registered"},
			{"password mismatch", form("email", "m@example.com", "password", "password1", "confirm_password", "password2"), 400, "ValidationError", "Passwords do not match"},
			{"short password", form("email", "s@example.com", "password", "short", "confirm_password", "short"), 400, "ValidationError", "at least 8 characters"},
			{"bad email", form("email", "not-an-email", "password", "password1", "confirm_password", "password1"), 400, "ValidationError", "Invalid email"},
			{"missing email", form("password", "password1", "confirm_password", "password1"), 400, "ValidationError", "Missing required field: email"},
			{"missing password", form("email", "p@example.com"), 400, "ValidationError", "Missing required field: password"},
			{"malformed form", "email=%zz&password=x", 400, "ValidationError", "Malformed form body"},
		} {
			e.do("POST", reg, tc.body, acceptJSON).expectError(t, tc.status, tc.errType, tc.detail)
		}
		e.do("POST", reg, []byte(`{"email": 5}`), acceptJSON).expectError(t, 400, "ValidationError", "email")
		e.do("POST", reg, []byte(`{"email": `), acceptJSON).expectError(t, 400, "ValidationError", "Malformed JSON body")
	})
}

func TestRegistrationClosed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, map[string]string{"AP_REGISTRATION": "closed"})
	e.do("POST", "/api/v1/auth/register", form("email", "a@example.com", "password", "password1", "confirm_password", "password1")).
		expectError(t, 403, "PermissionError", "Registration is closed")
}

func TestLoginAndSessions(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		e.signup("u@example.com")
		login := "/api/v1/auth/login"

		// Browser login: 303 to / and the session cookie.
		r := e.do("POST", login, form("email", "u@example.com", "password", "password1")).expect(t, 303)
		require.Equal(t, "/", r.Header.Get("Location"))
		setCookie := r.Header.Get("Set-Cookie")
		require.Contains(t, setCookie, "ap_session=st_")
		require.Contains(t, setCookie, "HttpOnly")
		require.Contains(t, setCookie, "SameSite=Lax")
		require.Contains(t, setCookie, "Path=/")
		require.NotContains(t, setCookie, "Secure", "not in development")
		cookieToken := strings.TrimPrefix(strings.Split(setCookie, ";")[0], "ap_session=")
		e.do("GET", "/api/v1/users/me", nil, cookie(cookieToken)).expect(t, 200)

		// JSON login: the access token is the session token, also the cookie.
		r = e.do("POST", login, form("email", "u@example.com", "password", "password1"), acceptJSON).expect(t, 200)
		token := r.str("access_token")
		require.True(t, strings.HasPrefix(token, "st_"))
		require.Equal(t, "bearer", r.str("token_type"))
		expires, err := time.Parse(time.RFC3339, r.str("expires_at"))
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(30*24*time.Hour), expires, time.Minute)
		require.Contains(t, r.Header.Get("Set-Cookie"), "ap_session="+token)
		e.do("GET", "/api/v1/users/me", nil, bearer(token)).expect(t, 200)

		// Wrong credentials.
		e.do("POST", login, form("email", "u@example.com", "password", "wrong-password"), acceptJSON).expectError(t, 401, "AuthenticationError", "Invalid email or password")
		e.do("POST", login, form("email", "nobody@example.com", "password", "password1"), acceptJSON).expectError(t, 401, "AuthenticationError", "Invalid email or password")
		e.do("POST", login, form("email", "u@example.com"), acceptJSON).expectError(t, 400, "ValidationError", "Missing required field: password")

		// Logout deletes the session server-side and clears the cookie.
		r = e.do("POST", "/api/v1/auth/logout", nil, bearer(token)).expect(t, 303)
		require.Equal(t, "/login", r.Header.Get("Location"))
		require.Contains(t, r.Header.Get("Set-Cookie"), "Max-Age=0")
		e.do("GET", "/api/v1/users/me", nil, bearer(token)).expectError(t, 401, "AuthenticationError", "Invalid or expired session")
		e.do("POST", "/api/v1/auth/logout", nil, cookie(cookieToken), acceptJSON).expect(t, 204)
		e.do("GET", "/api/v1/users/me", nil, cookie(cookieToken)).expect(t, 401)

		// An expired session is refused.
		u, err := e.srv.Store.UserGetByEmail(context.Background(), "u@example.com")
		require.NoError(t, err)
		old, hash := auth.NewToken(auth.PrefixSession)
		past := store.Now().Add(-time.Hour)
		require.NoError(t, e.srv.Store.SessionCreate(context.Background(), &store.Session{ID: uuid.NewString(), UserID: u.ID, TokenHash: hash, CreatedAt: past, ExpiresAt: past.Add(time.Minute)}))
		e.do("GET", "/api/v1/users/me", nil, bearer(old)).expectError(t, 401, "AuthenticationError", "Invalid or expired session")
	})
}

func TestProductionCookieIsSecure(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, map[string]string{"AP_ENV": "production", "AP_PUBLIC_URL": "https://ap.example.com"})
	e.signup("u@example.com")
	r := e.do("POST", "/api/v1/auth/login", form("email", "u@example.com", "password", "password1")).expect(t, 303)
	require.Contains(t, r.Header.Get("Set-Cookie"), "Secure")
}

func TestFailedLoginsAreLimitedPerIP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, map[string]string{"AP_LOGIN_FAILURE_LIMIT": "3"})
	e.signup("u@example.com")
	for range 3 {
		e.do("POST", "/api/v1/auth/login", form("email", "u@example.com", "password", "guess-guess"), acceptJSON).expect(t, 401)
	}
	// Even the right password is refused now: the guesser must wait.
	r := e.do("POST", "/api/v1/auth/login", form("email", "u@example.com", "password", "password1"), acceptJSON).
		expectError(t, 429, "RateLimitError", "Rate limit exceeded. Try again in 60 seconds.")
	require.Equal(t, "60", r.Header.Get("Retry-After"))
}

func TestSuccessfulLoginsAreNotCountedAsFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, map[string]string{"AP_LOGIN_FAILURE_LIMIT": "2"})
	e.signup("u@example.com")
	for range 5 {
		e.login("u@example.com", "password1")
	}
}

func TestCrossOriginCookieRequestsAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	token := e.signup("u@example.com")
	crossSite := []opt{header("Origin", "https://evil.example"), header("Sec-Fetch-Site", "cross-site")}

	// A cross-site form riding on the cookie is refused, and nothing happens.
	e.do("PATCH", "/api/v1/users/me", map[string]any{"first_name": "Mallory"}, append(crossSite, cookie(token))...).
		expectError(t, 403, "PermissionError", "Cross-origin request refused")
	e.do("POST", "/api/v1/auth/logout", nil, append(crossSite, cookie(token))...).expect(t, 403)
	me := e.do("GET", "/api/v1/users/me", nil, cookie(token)).expect(t, 200)
	require.Empty(t, me.str("first_name"))

	// Safe methods pass; so do same-origin requests and Bearer requests.
	e.do("GET", "/api/v1/users/me", nil, append(crossSite, cookie(token))...).expect(t, 200)
	e.do("PATCH", "/api/v1/users/me", map[string]any{"first_name": "Ada"}, cookie(token), header("Sec-Fetch-Site", "same-origin")).expect(t, 200)
	e.do("PATCH", "/api/v1/users/me", map[string]any{"first_name": "Bob"}, append(crossSite, bearer(token))...).expect(t, 200)
	// A cross-site login form is refused too (login CSRF).
	e.do("POST", "/api/v1/auth/login", form("email", "u@example.com", "password", "password1"), crossSite...).expect(t, 403)
}

func TestUnauthenticated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	for _, path := range []string{"/api/v1/users/me", "/api/v1/user/api-keys", "/api/v1/users", "/api/v1/users/audit-log"} {
		e.do("GET", path, nil).expectError(t, 401, "AuthenticationError", "Authentication required")
	}
	e.do("GET", "/api/v1/users/me", nil, header("Authorization", "Basic abc")).expectError(t, 401, "AuthenticationError", "Authentication required")
	e.do("GET", "/api/v1/users/me", nil, bearer("garbage")).expectError(t, 401, "AuthenticationError", "Invalid API key")
	e.do("GET", "/api/v1/users/me", nil, bearer("ak_unknown")).expectError(t, 401, "AuthenticationError", "Invalid API key")
	e.do("GET", "/api/v1/users/me", nil, bearer("st_unknown")).expectError(t, 401, "AuthenticationError", "Invalid or expired session")
	require.NotEqual(t, http.StatusOK, e.do("GET", "/api/v1/users/me", nil, cookie("st_unknown")).Status)
}
