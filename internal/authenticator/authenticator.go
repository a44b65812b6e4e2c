// Package authenticator owns apps' OAuth client registrations: the
// authenticators through which an app's users connect their accounts at
// third-party services. It validates them (the manifest's rules and the
// instance's, both the apps domain's), keeps each client secret sealed and
// never hands it out, and lets the credential service act before one is
// deleted (OnDelete). Running the flows is the oauth package's; the
// connections and their tokens are the credential service's.
package authenticator

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/secret"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Apps resolves the caller's apps and holds the authenticator rules that
// manifests share (apps.Service).
type Apps interface {
	OwnedApp(ctx context.Context, c *auth.Caller, appID string) (*store.App, error)
	ManagedApp(ctx context.Context, c *auth.Caller, appID string) (*store.App, error)
	PrepareAuthenticator(prefix string, a *apps.Authenticator) error
	AuthenticatorSpec(r *store.Authenticator) apps.Authenticator
}

// Service is the authenticators domain.
type Service struct {
	store   *store.Store
	auth    *auth.Service
	apps    Apps
	secrets *secret.Box
	now     func() time.Time

	// OnDelete, when set, runs before an authenticator is deleted: the
	// credential service revokes the authenticator's connections there.
	// Its error stops the deletion.
	OnDelete func(ctx context.Context, a *store.Authenticator) error
}

// New returns the service; secrets seals the client secrets.
func New(st *store.Store, a *auth.Service, ap Apps, secrets *secret.Box) *Service {
	return &Service{store: st, auth: a, apps: ap, secrets: secrets, now: store.Now}
}

// ErrNotFound is another user's authenticator, or none.
var ErrNotFound = apperr.NotFoundf("Authenticator not found")

// Get returns the caller's authenticator id.
func (s *Service) Get(ctx context.Context, c *auth.Caller, id string) (*store.Authenticator, error) {
	return auth.Find(ctx, s.auth, c, id, s.store.AuthenticatorGet, func(a *store.Authenticator) auth.Resource {
		return auth.Resource{Type: "authenticator", ID: a.ID, OwnerID: a.UserID, AppID: a.AppID}
	}, "authenticator.read", ErrNotFound)
}

// List returns a page of the authenticators of the caller's app appID.
func (s *Service) List(ctx context.Context, c *auth.Caller, appID string, limit, offset int) ([]store.Authenticator, int, error) {
	if appID == "" {
		return nil, 0, apperr.Invalid("app_id", "Missing required field: app_id")
	}
	app, err := s.apps.OwnedApp(ctx, c, appID)
	if err != nil {
		return nil, 0, err
	}
	return s.store.AuthenticatorPage(ctx, app.ID, limit, offset)
}

// Create registers an OAuth client in the caller's app appID. The body
// has every field of the manifest's authenticators, and client_id and
// client_secret are required; is_active is optional (true).
func (s *Service) Create(ctx context.Context, c *auth.Caller, appID string, body map[string]any) (*store.Authenticator, error) {
	var a *store.Authenticator
	err := apps.CreatePart(ctx, s.apps, c, appID, "authenticator", func(app *store.App) (string, error) {
		w, err := writable(body, true)
		if err != nil {
			return "", err
		}
		spec, err := s.decode(body)
		if err != nil {
			return "", err
		}
		if spec.ClientID == "" {
			return "", apperr.Invalid("client_id", "Missing required field: client_id")
		}
		now := s.now()
		a = &store.Authenticator{ID: uuid.Must(uuid.NewV7()).String(), AppID: app.ID, UserID: app.UserID, IsActive: true, CreatedAt: now, UpdatedAt: now}
		spec.SetOn(a)
		if err := s.apply(w, a); err != nil {
			return "", err
		}
		return a.Name, s.store.AuthenticatorCreate(ctx, a)
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Update changes any of an authenticator's fields, is_active, and its
// client secret (a manifest's authenticator gets its first one so); the
// result is validated whole, as a create is.
func (s *Service) Update(ctx context.Context, c *auth.Caller, id string, patch map[string]any) (*store.Authenticator, error) {
	a, err := s.Get(ctx, c, id)
	if err != nil {
		return nil, err
	}
	cur := s.apps.AuthenticatorSpec(a)
	fields := map[string]any{"name": cur.Name, "authenticator_type": cur.AuthenticatorType,
		"client_id": cur.ClientID, "scopes": cur.Scopes, "authorize_url": cur.AuthorizeURL, "token_url": cur.TokenURL,
		"refresh_url": cur.RefreshURL, "revoke_url": cur.RevokeURL, "redirect_uri": cur.RedirectURI,
		"configuration": cur.Configuration}
	// writable takes client_secret and is_active out of the patch before it
	// is merged: they are not fields of the spec.
	w, werr := writable(patch, false)
	err = apps.UpdatePart(ctx, s.apps, c, a.AppID, "authenticator", fields, patch, func(merged map[string]any) (string, error) {
		if werr != nil {
			return "", werr
		}
		spec, err := s.decode(merged)
		if err != nil {
			return "", err
		}
		spec.SetOn(a)
		if err := s.apply(w, a); err != nil {
			return "", err
		}
		a.UpdatedAt = s.now()
		return a.Name, s.store.AuthenticatorUpdate(ctx, a)
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Delete deletes an authenticator, after OnDelete.
func (s *Service) Delete(ctx context.Context, c *auth.Caller, id string) error {
	a, err := s.Get(ctx, c, id)
	if err != nil {
		return err
	}
	return apps.DeletePart(ctx, s.apps, c, a.AppID, func() error {
		if s.OnDelete != nil {
			if err := s.OnDelete(ctx, a); err != nil {
				return err
			}
		}
		return s.store.AuthenticatorDelete(ctx, a.ID)
	})
}

// decode validates an authenticator body by the manifest's rules and the
// instance's, which fill in its defaults.
func (s *Service) decode(body map[string]any) (*apps.Authenticator, error) {
	spec, err := apps.DecodeAuthenticator(body)
	if err != nil {
		return nil, err
	}
	if err := s.apps.PrepareAuthenticator("", spec); err != nil {
		return nil, err
	}
	return spec, nil
}

// write is what a body sets beyond the manifest's fields.
type write struct {
	secret *string
	active *bool
}

// writable takes client_secret and is_active out of body (no manifest has
// them), checked; create requires the secret.
func writable(body map[string]any, create bool) (write, error) {
	var w write
	if v, ok := body["client_secret"]; ok || create {
		s, isString := v.(string)
		switch {
		case v == nil || (isString && strings.TrimSpace(s) == ""):
			return w, apperr.Invalid("client_secret", "Missing required field: client_secret")
		case !isString:
			return w, apperr.Invalid("client_secret", "Invalid value for field client_secret: expected a string")
		}
		w.secret = &s
	}
	if v, ok := body["is_active"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return w, apperr.Invalid("is_active", "Invalid value for field is_active: expected a boolean")
		}
		w.active = &b
	}
	delete(body, "client_secret")
	delete(body, "is_active")
	return w, nil
}

// apply sets w on a, the secret sealed.
func (s *Service) apply(w write, a *store.Authenticator) error {
	if w.active != nil {
		a.IsActive = *w.active
	}
	if w.secret != nil {
		sealed, err := s.secrets.Seal(*w.secret)
		if err != nil {
			return err
		}
		a.ClientSecretEnc = sealed
	}
	return nil
}
