package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func TestWebhookSecretAndDeliveries(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		alice := e.signup("alice@example.com") // the first user: an admin
		bob := e.signup("bob@example.com")
		bobID := e.do("GET", "/api/v1/users/me", nil, bearer(bob)).expect(t, 200).str("id")
		now := store.Now()
		app := &store.App{ID: uuid.NewString(), UserID: bobID, Name: "B", Slug: "b", Version: "1.0.0", Status: "active", CreatedAt: now, UpdatedAt: now}
		require.NoError(t, e.srv.Store.AppCreate(context.Background(), app))
		path := "/api/v1/apps/" + app.ID + "/webhook-secret"

		first := e.do("GET", path, nil, bearer(bob)).expect(t, 200).str("secret")
		require.True(t, strings.HasPrefix(first, "whsec_"), first)
		require.Equal(t, first, e.do("GET", path, nil, bearer(bob)).expect(t, 200).str("secret"))
		rotated := e.do("POST", path, nil, bearer(bob)).expect(t, 200).str("secret")
		require.NotEqual(t, first, rotated)
		require.Equal(t, rotated, e.do("GET", path, nil, cookie(bob)).expect(t, 200).str("secret"))

		// Another user's app does not exist for them, even for an admin
		// without a reason; with one, the access is audited.
		e.do("GET", path, nil, bearer(alice)).expectError(t, 404, "NotFoundError", "App not found")
		e.do("POST", path, nil, bearer(alice)).expectError(t, 404, "NotFoundError", "App not found")
		require.Equal(t, rotated, e.do("GET", path, nil, bearer(alice), header("X-Admin-Reason", "ticket 9")).expect(t, 200).str("secret"))
		e.do("GET", "/api/v1/apps/"+uuid.NewString()+"/webhook-secret", nil, bearer(bob)).expectError(t, 404, "NotFoundError", "App not found")
		e.do("GET", "/api/v1/apps/nope/webhook-secret", nil, bearer(bob)).expectError(t, 404, "NotFoundError", "App not found")
		e.do("GET", path, nil).expect(t, 401)
		// Managing an app is not using it: an app:access key may not read
		// the secret, a read key may read but not rotate.
		e.do("GET", path, nil, bearer(e.keyWith(bob, "app:access"))).expect(t, 403)
		reader := e.keyWith(bob, "read:all")
		e.do("GET", path, nil, bearer(reader)).expect(t, 200)
		e.do("POST", path, nil, bearer(reader)).expect(t, 403)

		// Deliveries of an unknown activation, or of a bad id: 404; a bad
		// page size: 400 naming it.
		e.do("GET", "/api/v1/activations/"+uuid.NewString()+"/deliveries", nil, bearer(bob)).expectError(t, 404, "NotFoundError", "Activation not found")
		e.do("GET", "/api/v1/activations/x/deliveries", nil, bearer(bob)).expectError(t, 404, "NotFoundError", "Activation not found")
		e.do("GET", "/api/v1/activations/"+uuid.NewString()+"/deliveries?limit=0", nil, bearer(bob)).expectError(t, 400, "ValidationError", "limit")
	})
}
