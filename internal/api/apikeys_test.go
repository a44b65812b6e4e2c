package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/api"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func TestAPIKeyLifecycle(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		session := e.signup("u@example.com")
		keys := "/api/v1/user/api-keys"

		expires := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
		r := e.do("POST", keys, map[string]any{"name": "ci", "scopes": []string{"read:all", "write:all"}, "expires_at": expires}, bearer(session)).expect(t, 201)
		key := r.str("key")
		require.True(t, strings.HasPrefix(key, "ak_"), key)
		require.Equal(t, key[:11], r.str("key_prefix"))
		require.Equal(t, []any{"read:all", "write:all"}, r.JSON["scopes"])
		require.Equal(t, expires.Format(time.RFC3339), r.str("expires_at"))
		require.Nil(t, r.JSON["app_id"])
		require.NotEmpty(t, r.str("created_at"))
		id := int64(r.JSON["id"].(float64))

		// The key works; its use is recorded.
		e.do("GET", "/api/v1/users/me", nil, bearer(key)).expect(t, 200)

		// The list never shows the key, and shows last_used_at.
		r = e.do("GET", keys, nil, bearer(session)).expect(t, 200)
		require.NotContains(t, string(r.Body), key)
		require.NotContains(t, string(r.Body), `"key"`)
		list := r.JSON["api_keys"].([]any)
		require.Len(t, list, 1)
		item := list[0].(map[string]any)
		require.Equal(t, key[:11], item["key_prefix"])
		require.NotNil(t, item["last_used_at"])
		require.Equal(t, float64(1), r.JSON["total_count"])
		require.Equal(t, false, r.JSON["has_more"])

		// Key management needs a session: an API key gets 403.
		e.do("GET", keys, nil, bearer(key)).expectError(t, 403, "PermissionError", "Insufficient permissions for this operation")
		e.do("POST", keys, map[string]any{"name": "x", "scopes": []string{"read:all"}}, bearer(key)).expect(t, 403)

		// Revoke: 204, then the key is refused.
		e.do("DELETE", keys+"/"+itoa(id), nil, bearer(session)).expect(t, 204)
		e.do("GET", "/api/v1/users/me", nil, bearer(key)).expectError(t, 401, "AuthenticationError", "Invalid API key")
		e.do("DELETE", keys+"/"+itoa(id), nil, bearer(session)).expectError(t, 404, "NotFoundError", "API key not found")
		e.do("DELETE", keys+"/abc", nil, bearer(session)).expectError(t, 400, "ValidationError", "key_id")
	})
}

func TestAPIKeyValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	admin := e.signup("admin@example.com")
	user := e.signup("u@example.com")
	keys := "/api/v1/user/api-keys"
	for _, tc := range []struct {
		name   string
		body   any
		status int
		detail string
	}{
		{"no name", map[string]any{"scopes": []string{"read:all"}}, 400, "Missing required field: name"},
		{"blank name", map[string]any{"name": " ", "scopes": []string{"read:all"}}, 400, "Missing required field: name"},
		{"no scopes", map[string]any{"name": "k"}, 400, "Missing required field: scopes"},
		{"empty scopes", map[string]any{"name": "k", "scopes": []string{}}, 400, "Missing required field: scopes"},
		{"unknown scope", map[string]any{"name": "k", "scopes": []string{"read:all", "root"}}, 400, `Invalid value for field scopes[1]: expected value to be one of "read:all, write:all, admin, app:access"`},
		{"scopes not an array", map[string]any{"name": "k", "scopes": "read:all"}, 400, "Invalid value for field scopes"},
		{"name not a string", map[string]any{"name": 5, "scopes": []string{"read:all"}}, 400, "Invalid value for field name"},
		{"expiry in the past", map[string]any{"name": "k", "scopes": []string{"read:all"}, "expires_at": time.Now().Add(-time.Hour)}, 400, "expires_at must be in the future"},
		{"expiry not a time", map[string]any{"name": "k", "scopes": []string{"read:all"}, "expires_at": "tomorrow"}, 400, "expires_at"},
		{"unknown app", map[string]any{"name": "k", "scopes": []string{"read:all"}, "app_id": uuid.NewString()}, 404, "App not found"},
		// The document says format uuid (DESIGN §4): a malformed id is a bad field.
		{"app id not a uuid", map[string]any{"name": "k", "scopes": []string{"read:all"}, "app_id": "nope"}, 400, "Invalid value for field app_id"},
		{"admin scope for a non-admin", map[string]any{"name": "k", "scopes": []string{"admin"}}, 403, "Insufficient permissions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", keys, tc.body, bearer(user)).expect(t, tc.status)
			require.Contains(t, r.str("detail"), tc.detail)
		})
	}
	// Unknown fields are ignored; an admin may hold the admin scope.
	e.do("POST", keys, map[string]any{"name": "k", "scopes": []string{"admin"}, "color": "blue"}, bearer(admin)).expect(t, 201)
}

func TestExpiredKeyIsRefused(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		e.signup("u@example.com")
		u, err := e.srv.Store.UserGetByEmail(context.Background(), "u@example.com")
		require.NoError(t, err)
		key, hash := auth.NewToken(auth.PrefixAPIKey)
		past := store.Now().Add(-time.Second)
		require.NoError(t, e.srv.Store.APIKeyCreate(context.Background(), &store.APIKey{
			UserID: u.ID, Name: "old", KeyHash: hash, KeyPrefix: key[:11], Scopes: []string{"read:all"}, ExpiresAt: &past, CreatedAt: past.Add(-time.Hour)}))
		e.do("GET", "/api/v1/users/me", nil, bearer(key)).expectError(t, 401, "AuthenticationError", "Invalid API key")
	})
}

func TestScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	admin := e.signup("admin@example.com")
	user := e.signup("u@example.com")
	read := e.keyWith(user, "read:all")
	write := e.keyWith(user, "write:all")
	appAccess := e.keyWith(user, "app:access")
	adminWrite := e.keyWith(admin, "write:all")
	adminKey := e.keyWith(admin, "admin")
	patch := map[string]any{"first_name": "X"}
	forbidden := "Insufficient permissions for this operation"

	// read:all reads, never writes.
	e.do("GET", "/api/v1/users/me", nil, bearer(read)).expect(t, 200)
	e.do("PATCH", "/api/v1/users/me", patch, bearer(read)).expectError(t, 403, "PermissionError", forbidden)
	// write:all reads and writes.
	e.do("GET", "/api/v1/users/me", nil, bearer(write)).expect(t, 200)
	e.do("PATCH", "/api/v1/users/me", patch, bearer(write)).expect(t, 200)
	// app:access uses apps but manages nothing else.
	e.do("GET", "/api/v1/users/me", nil, bearer(appAccess)).expect(t, 200)
	e.do("PATCH", "/api/v1/users/me", patch, bearer(appAccess)).expect(t, 403)
	// Admin endpoints: an admin's session or admin-scoped key only.
	e.do("GET", "/api/v1/users", nil, bearer(admin)).expect(t, 200)
	e.do("GET", "/api/v1/users", nil, bearer(adminKey)).expect(t, 200)
	e.do("GET", "/api/v1/users", nil, bearer(adminWrite)).expectError(t, 403, "PermissionError", forbidden)
	e.do("GET", "/api/v1/users", nil, bearer(user)).expect(t, 403)
	e.do("GET", "/api/v1/users", nil, bearer(write)).expect(t, 403)
	// Password changes need a session.
	e.do("POST", "/api/v1/users/me/password", map[string]any{"current_password": "password1", "new_password": "password2"}, bearer(write)).expect(t, 403)
}

func TestKeyBoundToAnApp(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	session := e.signup("u@example.com")
	other := e.signup("other@example.com")
	ctx := context.Background()
	u, err := e.srv.Store.UserGetByEmail(ctx, "u@example.com")
	require.NoError(t, err)
	o, err := e.srv.Store.UserGetByEmail(ctx, "other@example.com")
	require.NoError(t, err)
	mkApp := func(owner, slug string) string {
		now := store.Now()
		a := &store.App{ID: uuid.NewString(), UserID: owner, Name: slug, Slug: slug, Version: "1.0.0", Status: "active", CreatedAt: now, UpdatedAt: now}
		require.NoError(t, e.srv.Store.AppCreate(ctx, a))
		return a.ID
	}
	appA, appB, foreign := mkApp(u.ID, "a"), mkApp(u.ID, "b"), mkApp(o.ID, "c")

	// An app route, as the app routes of the platform declare theirs.
	type appInput struct {
		AppID string `path:"app_id"`
	}
	type appOutput struct{ Body struct{ AppID string } }
	api.Register(e.srv.API.Huma(), huma.Operation{OperationID: "probe-app", Method: http.MethodGet, Path: "/api/v1/test-apps/{app_id}"}, auth.AppUse,
		func(_ context.Context, in *appInput) (*appOutput, error) {
			out := &appOutput{}
			out.Body.AppID = in.AppID
			return out, nil
		})

	r := e.do("POST", "/api/v1/user/api-keys", map[string]any{"name": "a-only", "scopes": []string{"app:access"}, "app_id": appA}, bearer(session)).expect(t, 201)
	require.Equal(t, appA, r.str("app_id"))
	bound := r.str("key")
	list := e.do("GET", "/api/v1/user/api-keys", nil, bearer(session)).expect(t, 200)
	require.Equal(t, appA, list.JSON["api_keys"].([]any)[0].(map[string]any)["app_id"])

	e.do("GET", "/api/v1/test-apps/"+appA, nil, bearer(bound)).expect(t, 200)
	e.do("GET", "/api/v1/test-apps/"+appB, nil, bearer(bound)).expectError(t, 404, "NotFoundError", "App not found")
	// Binding a key to someone else's app is refused as if it did not exist.
	e.do("POST", "/api/v1/user/api-keys", map[string]any{"name": "x", "scopes": []string{"read:all"}, "app_id": foreign}, bearer(session)).
		expectError(t, 404, "NotFoundError", "App not found")
	_ = other
}

func TestAnotherUsersKeyIsNotFoundUnlessAnAdminStatesAReason(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		admin := e.signup("admin@example.com")
		alice := e.signup("alice@example.com")
		bob := e.signup("bob@example.com")
		aliceKey, aliceKeyID := e.key(alice, map[string]any{"name": "a", "scopes": []string{"read:all"}})
		path := "/api/v1/user/api-keys/" + itoa(aliceKeyID)

		// Bob cannot see or revoke it: 404, even with a reason.
		e.do("DELETE", path, nil, bearer(bob)).expectError(t, 404, "NotFoundError", "API key not found")
		e.do("DELETE", path, nil, bearer(bob), header("X-Admin-Reason", "please")).expect(t, 404)
		r := e.do("GET", "/api/v1/user/api-keys", nil, bearer(bob)).expect(t, 200)
		require.Equal(t, float64(0), r.JSON["total_count"])
		// An admin without a reason is isolated like anyone.
		e.do("DELETE", path, nil, bearer(admin)).expect(t, 404)
		e.do("GET", "/api/v1/users/me", nil, bearer(aliceKey)).expect(t, 200)

		// With a reason: allowed, and audited.
		e.do("DELETE", path, nil, bearer(admin), header("X-Admin-Reason", "leaked in a public repo, ticket 42")).expect(t, 204)
		e.do("GET", "/api/v1/users/me", nil, bearer(aliceKey)).expect(t, 401)

		log := e.do("GET", "/api/v1/users/audit-log", nil, bearer(admin)).expect(t, 200)
		require.Equal(t, float64(1), log.JSON["total_count"])
		entry := log.JSON["entries"].([]any)[0].(map[string]any)
		adminUser := e.do("GET", "/api/v1/users/me", nil, bearer(admin)).expect(t, 200)
		aliceUser := e.do("GET", "/api/v1/users/me", nil, bearer(alice)).expect(t, 200)
		require.Equal(t, adminUser.str("id"), entry["actor_id"])
		require.Equal(t, aliceUser.str("id"), entry["owner_id"])
		require.Equal(t, "api_key.revoke", entry["action"])
		require.Equal(t, "api_key", entry["resource_type"])
		require.Equal(t, itoa(aliceKeyID), entry["resource_id"])
		require.Equal(t, "leaked in a public repo, ticket 42", entry["reason"])
		require.NotEmpty(t, entry["created_at"])
		e.do("GET", "/api/v1/users/audit-log", nil, bearer(alice)).expect(t, 403)
	})
}

// A key's answer is cached (auth/keycache.go), but what changes its user
// applies to the next request.
func TestKeyFollowsItsUserAtOnce(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		admin := e.signup("admin@example.com")
		session := e.signup("u@example.com")
		key := e.do("POST", "/api/v1/user/api-keys", map[string]any{"name": "k", "scopes": []string{"read:all"}}, bearer(session)).expect(t, 201).str("key")
		me := e.do("GET", "/api/v1/users/me", nil, bearer(key)).expect(t, 200)
		require.Equal(t, false, me.JSON["is_admin"])
		userID := me.str("id")

		e.do("PATCH", "/api/v1/users/"+userID, map[string]any{"is_active": false}, bearer(admin)).expect(t, 200)
		e.do("GET", "/api/v1/users/me", nil, bearer(key)).expect(t, 401)
		e.do("PATCH", "/api/v1/users/"+userID, map[string]any{"is_active": true, "is_admin": true}, bearer(admin)).expect(t, 200)
		require.Equal(t, true, e.do("GET", "/api/v1/users/me", nil, bearer(key)).expect(t, 200).JSON["is_admin"])
		session = e.login("u@example.com", "password1") // disabling signed it out
		e.do("PATCH", "/api/v1/users/me", map[string]any{"email": "v@example.com", "current_password": "password1"}, bearer(session)).expect(t, 200)
		require.Equal(t, "v@example.com", e.do("GET", "/api/v1/users/me", nil, bearer(key)).expect(t, 200).str("email"))
	})
}
