package authenticator_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/authenticator"
	"github.com/agentplatform/agentplatform/internal/secret"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type bundle struct {
	svc    *authenticator.Service
	st     *store.Store
	box    *secret.Box
	caller *auth.Caller
	appID  string
}

// setup is the domain on dialect d of a production instance at
// https://ap.example.org, with one user and one app.
func setup(t *testing.T, d store.Dialect) *bundle {
	t.Helper()
	ctx := context.Background()
	st := testdb.Open(t, d)
	as, err := auth.New(st, testdb.Logger(), auth.Options{Password: auth.PasswordParams{Memory: 64, Time: 1, Threads: 1}})
	require.NoError(t, err)
	box, err := secret.New([][]byte{bytes.Repeat([]byte{7}, 32)})
	require.NoError(t, err)
	ap := apps.New(st, as, box, nil, apps.Options{PublicURL: "https://ap.example.org", Production: true})
	now := store.Now()
	u := &store.User{ID: uuid.NewString(), Email: "u@example.com", PasswordHash: "x", IsActive: true, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.UserCreate(ctx, u, false))
	app := &store.App{ID: uuid.NewString(), UserID: u.ID, Name: "a", Slug: "a", Status: "active", MarketplaceStatus: "private", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.AppCreate(ctx, app))
	return &bundle{svc: authenticator.New(st, as, ap, box), st: st, box: box, appID: app.ID,
		caller: &auth.Caller{UserID: u.ID, Email: u.Email, Kind: auth.KindSession}}
}

func body() map[string]any {
	return map[string]any{"name": "crm", "authenticator_type": "custom", "client_id": "c", "client_secret": "cs-sealed",
		"scopes": []any{"read"}, "authorize_url": "https://crm.example.com/authorize", "token_url": "https://crm.example.com/token"}
}

func requireInvalid(t *testing.T, err error, field, detail string) {
	t.Helper()
	ae, ok := apperr.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apperr.Validation, ae.Kind, "%v", err)
	require.Equal(t, field, ae.Field)
	require.Contains(t, ae.Detail, detail)
}

// TestProductionRules: in production the authorize URL is HTTPS, and
// redirect_uri defaults to the public URL's callback.
func TestProductionRules(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d)
		ctx := context.Background()
		plain := body()
		plain["authorize_url"] = "http://crm.example.com/authorize"
		_, err := b.svc.Create(ctx, b.caller, b.appID, plain)
		requireInvalid(t, err, "authorize_url", "https URL in production")

		a, err := b.svc.Create(ctx, b.caller, b.appID, body())
		require.NoError(t, err)
		require.Equal(t, "https://ap.example.org/api/v1/oauth/callback", a.RedirectURI)
		opened, err := b.box.Open(a.ClientSecretEnc)
		require.NoError(t, err)
		require.Equal(t, "cs-sealed", opened)
		require.NotContains(t, a.ClientSecretEnc, "cs-sealed")

		_, err = b.svc.Update(ctx, b.caller, a.ID, map[string]any{"authorize_url": "http://crm.example.com/authorize"})
		requireInvalid(t, err, "authorize_url", "https URL in production")
		_, err = b.svc.Update(ctx, b.caller, a.ID, map[string]any{"redirect_uri": "https://ap.example.org:8443/api/v1/oauth/callback"})
		requireInvalid(t, err, "redirect_uri", "https://ap.example.org")
	})
}

// TestOnDeleteRunsFirst: the hook sees the authenticator before it goes,
// and its error keeps it.
func TestOnDeleteRunsFirst(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d)
		ctx := context.Background()
		a, err := b.svc.Create(ctx, b.caller, b.appID, body())
		require.NoError(t, err)

		refuse := errors.New("provider unreachable")
		b.svc.OnDelete = func(_ context.Context, got *store.Authenticator) error {
			require.Equal(t, a.ID, got.ID)
			_, err := b.st.AuthenticatorGet(ctx, got.ID)
			require.NoError(t, err, "still there when the hook runs")
			return refuse
		}
		require.ErrorIs(t, b.svc.Delete(ctx, b.caller, a.ID), refuse)
		_, err = b.st.AuthenticatorGet(ctx, a.ID)
		require.NoError(t, err, "a failing hook keeps the authenticator")

		var called int
		b.svc.OnDelete = func(context.Context, *store.Authenticator) error { called++; return nil }
		require.NoError(t, b.svc.Delete(ctx, b.caller, a.ID))
		require.Equal(t, 1, called)
		_, err = b.st.AuthenticatorGet(ctx, a.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorIs(t, b.svc.Delete(ctx, b.caller, a.ID), authenticator.ErrNotFound)
		require.Equal(t, 1, called, "nothing to revoke for an absent one")
	})
}
