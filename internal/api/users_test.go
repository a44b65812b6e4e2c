package api_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func TestMe(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("u@example.com")
		e.signup("taken@example.com")

		r := e.do("GET", "/api/v1/users/me", nil, bearer(token)).expect(t, 200)
		for _, k := range []string{"id", "email", "first_name", "last_name", "is_active", "is_admin", "created_at", "updated_at"} {
			require.Contains(t, r.JSON, k)
		}
		require.NotContains(t, string(r.Body), "argon2")

		r = e.do("PATCH", "/api/v1/users/me", map[string]any{"first_name": " Ada ", "last_name": "Lovelace", "unknown": 1}, bearer(token)).expect(t, 200)
		require.Equal(t, "Ada", r.str("first_name"))
		require.Equal(t, "Lovelace", r.str("last_name"))
		require.Equal(t, "u@example.com", r.str("email"), "fields not sent are kept")

		e.do("PATCH", "/api/v1/users/me", map[string]any{"email": "Taken@example.com", "current_password": "password1"}, bearer(token)).expectError(t, 409, "ConflictError", "Email already registered")
		e.do("PATCH", "/api/v1/users/me", map[string]any{"email": "nope"}, bearer(token)).expectError(t, 400, "ValidationError", "Invalid email")
		e.do("PATCH", "/api/v1/users/me", map[string]any{"first_name": 123}, bearer(token)).expectError(t, 400, "ValidationError", "Invalid value for field first_name")
		r = e.do("PATCH", "/api/v1/users/me", map[string]any{"email": "New@Example.com", "current_password": "password1"}, bearer(token)).expect(t, 200)
		require.Equal(t, "new@example.com", r.str("email"))
		e.login("new@example.com", "password1")
	})
}

func TestChangePasswordEndsOtherSessions(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		current := e.signup("u@example.com")
		other := e.login("u@example.com", "password1")
		key := e.keyWith(current, "read:all")
		path := "/api/v1/users/me/password"

		e.do("POST", path, map[string]any{"current_password": "wrong-one", "new_password": "password2"}, bearer(current)).
			expectError(t, 400, "ValidationError", "Current password is incorrect")
		e.do("POST", path, map[string]any{"current_password": "password1", "new_password": "short"}, bearer(current)).
			expectError(t, 400, "ValidationError", "at least 8 characters")
		e.do("POST", path, map[string]any{"new_password": "password2"}, bearer(current)).
			expectError(t, 400, "ValidationError", "current_password")

		e.do("POST", path, map[string]any{"current_password": "password1", "new_password": "password2"}, bearer(current)).expect(t, 204)
		e.do("GET", "/api/v1/users/me", nil, bearer(current)).expect(t, 200)
		e.do("GET", "/api/v1/users/me", nil, bearer(other)).expect(t, 401)
		e.do("GET", "/api/v1/users/me", nil, bearer(key)).expect(t, 200) // keys are not sessions
		e.do("POST", "/api/v1/auth/login", form("email", "u@example.com", "password", "password1"), acceptJSON).expect(t, 401)
		e.login("u@example.com", "password2")
	})
}

// TestChangeEmailNeedsPassword: the email is the login, so changing it
// asks for the current password, as a password change does, whatever the
// credential (a write:all key included), and ends the other sessions and
// their sockets.
func TestChangeEmailNeedsPassword(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		current := e.signup("u@example.com")
		other := e.login("u@example.com", "password1")
		key := e.keyWith(current, "write:all")
		path := "/api/v1/users/me"

		e.do("PATCH", path, map[string]any{"email": "thief@example.com"}, bearer(key)).
			expectError(t, 400, "ValidationError", "current_password")
		e.do("PATCH", path, map[string]any{"email": "thief@example.com", "current_password": "wrong-one"}, bearer(key)).
			expectError(t, 400, "ValidationError", "Current password is incorrect")
		// The same email (case aside) and the names change nothing that logs in.
		e.do("PATCH", path, map[string]any{"email": "U@example.com", "first_name": "Ada"}, bearer(key)).expect(t, 200)
		require.Equal(t, "u@example.com", e.do("GET", path, nil, bearer(current)).expect(t, 200).str("email"))
		e.do("GET", path, nil, bearer(other)).expect(t, 200)

		socket := e.openSocket(other)
		r := e.do("PATCH", path, map[string]any{"email": "v@example.com", "current_password": "password1"}, bearer(current)).expect(t, 200)
		require.Equal(t, "v@example.com", r.str("email"))
		at := time.Now()
		e.do("GET", path, nil, bearer(other)).expect(t, 401)
		requireCredentialClose(t, socket, at)
		e.do("GET", path, nil, bearer(current)).expect(t, 200)
		e.do("GET", path, nil, bearer(key)).expect(t, 200) // keys are not sessions
		e.do("POST", "/api/v1/auth/login", form("email", "u@example.com", "password", "password1"), acceptJSON).expect(t, 401)

		// A key with the password may change it; every session ends then.
		e.do("PATCH", path, map[string]any{"email": "w@example.com", "current_password": "password1"}, bearer(key)).expect(t, 200)
		e.do("GET", path, nil, bearer(current)).expect(t, 401)
		e.login("w@example.com", "password1")
	})
}

func TestAdminUsers(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		admin := e.signup("admin@example.com")
		for _, email := range []string{"a@example.com", "b@example.com", "c@example.com"} {
			e.signup(email)
		}
		userToken := e.login("a@example.com", "password1")
		userID := e.do("GET", "/api/v1/users/me", nil, bearer(userToken)).expect(t, 200).str("id")
		adminID := e.do("GET", "/api/v1/users/me", nil, bearer(admin)).expect(t, 200).str("id")

		r := e.do("GET", "/api/v1/users?limit=2", nil, bearer(admin)).expect(t, 200)
		require.Len(t, r.JSON["users"].([]any), 2)
		require.Equal(t, float64(4), r.JSON["total_count"])
		require.Equal(t, true, r.JSON["has_more"])
		r = e.do("GET", "/api/v1/users?limit=2&offset=2", nil, bearer(admin)).expect(t, 200)
		require.Len(t, r.JSON["users"].([]any), 2)
		require.Equal(t, false, r.JSON["has_more"])
		for query, field := range map[string]string{"limit=0": "limit", "limit=1001": "limit", "offset=-1": "offset", "limit=abc": "limit"} {
			e.do("GET", "/api/v1/users?"+query, nil, bearer(admin)).expectError(t, 400, "ValidationError", "field "+field)
		}

		r = e.do("GET", "/api/v1/users/"+userID, nil, bearer(admin)).expect(t, 200)
		require.Equal(t, "a@example.com", r.str("email"))
		e.do("GET", "/api/v1/users/"+uuid.NewString(), nil, bearer(admin)).expectError(t, 404, "NotFoundError", "User not found")
		e.do("GET", "/api/v1/users/"+userID, nil, bearer(userToken)).expect(t, 403)

		// Disabling signs the user out everywhere and refuses new logins.
		r = e.do("PATCH", "/api/v1/users/"+userID, map[string]any{"is_active": false}, bearer(admin)).expect(t, 200)
		require.Equal(t, false, r.JSON["is_active"])
		e.do("GET", "/api/v1/users/me", nil, bearer(userToken)).expect(t, 401)
		// The answer is a wrong password's, whatever the password: a
		// distinct one for the right password would confirm a guess.
		right := e.do("POST", "/api/v1/auth/login", form("email", "a@example.com", "password", "password1"), acceptJSON).
			expectError(t, 401, "AuthenticationError", "Invalid email or password")
		wrong := e.do("POST", "/api/v1/auth/login", form("email", "a@example.com", "password", "password2"), acceptJSON).
			expectError(t, 401, "AuthenticationError", "Invalid email or password")
		require.Equal(t, string(wrong.Body), string(right.Body))
		e.do("PATCH", "/api/v1/users/"+userID, map[string]any{"is_active": true, "is_admin": true}, bearer(admin)).expect(t, 200)
		e.do("GET", "/api/v1/users", nil, bearer(e.login("a@example.com", "password1"))).expect(t, 200)

		// The last active admin cannot be removed.
		e.do("PATCH", "/api/v1/users/"+userID, map[string]any{"is_admin": false}, bearer(admin)).expect(t, 200)
		e.do("PATCH", "/api/v1/users/"+adminID, map[string]any{"is_admin": false}, bearer(admin)).
			expectError(t, 409, "ConflictError", "last active admin")
		e.do("PATCH", "/api/v1/users/"+adminID, map[string]any{"is_active": false}, bearer(admin)).expect(t, 409)
		e.do("PATCH", "/api/v1/users/"+userID, map[string]any{"is_admin": "yes"}, bearer(admin)).
			expectError(t, 400, "ValidationError", "Invalid value for field is_admin")
	})
}
