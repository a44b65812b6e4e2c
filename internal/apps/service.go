// Package apps owns apps and what they are made of: manifests (parsing,
// validation, import in one transaction, upgrade in place, export), the
// marketplace and installs, and agents, the system agents every user sees
// included. Other domains reach an app or agent only through OwnedApp and
// VisibleAgent, which apply user isolation and the audited admin bypass.
package apps

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/quota"
	"github.com/agentplatform/agentplatform/internal/secret"
	"github.com/agentplatform/agentplatform/internal/store"
)

// The public errors of the domain.
var (
	ErrAppNotFound   = apperr.NotFoundf("App not found")
	ErrAgentNotFound = apperr.NotFoundf("Agent not found")
	ErrAppDisabled   = apperr.New(apperr.Conflict, "App is disabled")
	ErrAgentDisabled = apperr.New(apperr.Conflict, "Agent is disabled")
)

// App and marketplace status values.
const (
	StatusActive      = "active"
	StatusDisabled    = "disabled"
	MarketPrivate     = "private"
	MarketPublished   = "published"
	resourceApp       = "app"
	resourceAgent     = "agent"
	actionRead        = "read"
	actionManage      = "manage"
	actionUse         = "use"
	maxAppNameLength  = 200
	maxAgentNameChars = 100
)

// Service is the apps domain over the store.
type Service struct {
	store   *store.Store
	auth    *auth.Service
	secrets *secret.Box
	egress  *egress.Guard
	opts    Options
	now     func() time.Time
}

// Options are what the domain needs to know of the instance.
type Options struct {
	// PublicURL is AP_PUBLIC_URL: an authenticator's redirect_uri is the
	// OAuth callback on it.
	PublicURL string
	// Production is AP_ENV=production: authorize URLs must be HTTPS.
	Production bool
	// Quotas bound what a manifest declares (models, fields, pipeline
	// steps); zero means the defaults.
	Quotas quota.Limits
}

// New returns the service; secrets seals webhook agents' secrets, and eg
// refuses the URLs of agents and authenticators on private addresses (nil
// allows none).
func New(st *store.Store, a *auth.Service, secrets *secret.Box, eg *egress.Guard, opts Options) *Service {
	if eg == nil {
		eg = egress.New(nil)
	}
	if opts.Quotas == (quota.Limits{}) {
		opts.Quotas = quota.Defaults()
	}
	return &Service{store: st, auth: a, secrets: secrets, egress: eg, opts: opts, now: store.Now}
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// OwnedApp returns the caller's app appID. Another user's app is
// ErrAppNotFound, except for an admin stating X-Admin-Reason (audited); a
// key bound to another app does not see it either.
func (s *Service) OwnedApp(ctx context.Context, c *auth.Caller, appID string) (*store.App, error) {
	return s.ownedApp(ctx, c, appID, actionRead)
}

// ManagedApp is OwnedApp for changing what is in the app (its functions,
// pipelines): an admin's access is audited as such.
func (s *Service) ManagedApp(ctx context.Context, c *auth.Caller, appID string) (*store.App, error) {
	return s.ownedApp(ctx, c, appID, actionManage)
}

// ListApp is the app filter of one of c's lists given the asked app_id:
// an app asked for is checked as OwnedApp, so another user's app, one
// that does not exist and one a bound key does not see are ErrAppNotFound,
// as on the app's own routes (not an empty list); none asked is every app
// of the caller, or a bound key's own.
func (s *Service) ListApp(ctx context.Context, c *auth.Caller, appID string) (string, error) {
	if appID == "" {
		return c.AppID, nil
	}
	app, err := s.OwnedApp(ctx, c, appID)
	if err != nil {
		return "", err
	}
	return app.ID, nil
}

func (s *Service) ownedApp(ctx context.Context, c *auth.Caller, appID, action string) (*store.App, error) {
	if uuid.Validate(appID) != nil {
		return nil, ErrAppNotFound
	}
	app, err := s.store.AppGet(ctx, appID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrAppNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := s.auth.Reach(ctx, c, auth.Resource{Type: resourceApp, ID: app.ID, OwnerID: app.UserID, AppID: app.ID}, action, ErrAppNotFound); err != nil {
		return nil, err
	}
	return app, nil
}

// Apps returns a page of the caller's apps, newest first (only the bound
// app for a key bound to one).
func (s *Service) Apps(ctx context.Context, c *auth.Caller, limit, offset int) ([]store.App, int, error) {
	return s.store.AppListByUser(ctx, c.UserID, c.AppID, limit, offset)
}

// Marketplace returns a page of the published apps of every user.
func (s *Service) Marketplace(ctx context.Context, limit, offset int) ([]store.App, int, error) {
	return s.store.AppListPublished(ctx, limit, offset)
}

// AppPatch changes an app; nil fields stay.
type AppPatch struct {
	Name, Description, Status, MarketplaceStatus *string
}

// UpdateApp applies p to the caller's app.
func (s *Service) UpdateApp(ctx context.Context, c *auth.Caller, appID string, p AppPatch) (*store.App, error) {
	app, err := s.ownedApp(ctx, c, appID, actionManage)
	if err != nil {
		return nil, err
	}
	if p.Name != nil {
		if err := checkAppName("name", *p.Name); err != nil {
			return nil, err
		}
		app.Name = *p.Name
	}
	if p.Description != nil {
		app.Description = *p.Description
	}
	if p.Status != nil {
		if *p.Status != StatusActive && *p.Status != StatusDisabled {
			return nil, apperr.Invalid("status", "Invalid value for field status: must be one of active, disabled")
		}
		app.Status = *p.Status
	}
	if p.MarketplaceStatus != nil {
		if *p.MarketplaceStatus != MarketPrivate && *p.MarketplaceStatus != MarketPublished {
			return nil, apperr.Invalid("marketplace_status", "Invalid value for field marketplace_status: must be one of private, published")
		}
		app.MarketplaceStatus = *p.MarketplaceStatus
	}
	app.UpdatedAt = s.now()
	if err := s.store.AppUpdate(ctx, app); err != nil {
		return nil, err
	}
	return app, nil
}

func checkAppName(field, name string) error {
	d := &decoder{}
	o := d.asObject(map[string]any{field: name}, "", true)
	o.str(field, true)
	o.maxLen(field, name, maxAppNameLength)
	if d.err != nil {
		return d.err
	}
	return nil
}

// DeleteApp deletes the caller's app and everything in it.
func (s *Service) DeleteApp(ctx context.Context, c *auth.Caller, appID string) error {
	app, err := s.ownedApp(ctx, c, appID, actionManage)
	if err != nil {
		return err
	}
	if err := s.store.AppDelete(ctx, app.ID); err != nil {
		return err
	}
	s.auth.CredentialsChanged(ctx, app.UserID) // its bound keys went with it
	return nil
}

// manifestHeader is what apps.manifest keeps of an imported manifest
// beyond the app's own columns.
type manifestHeader struct {
	MinPlatformVersion string `json:"minPlatformVersion,omitempty"`
}

func headerOf(app *store.App) manifestHeader {
	var h manifestHeader
	_ = json.Unmarshal(app.Manifest, &h) // written by us; a bad one just loses the field
	return h
}

// Parts returns the agents, functions and pipelines of the caller's app
// appID, or of every app the caller reaches when appID is empty (a bound
// key's one app); with names, only the parts so named.
func (s *Service) Parts(ctx context.Context, c *auth.Caller, appID string, names ...string) ([]store.AppPart, error) {
	if appID == "" {
		return s.store.AppPartList(ctx, c.UserID, c.AppID, names...)
	}
	if uuid.Validate(appID) == nil && c.SeesApp(appID) {
		// Parts of the caller's own are the app's: it is the caller's, and
		// there is no need to read it (an MCP request asks on every call).
		if parts, err := s.store.AppPartList(ctx, c.UserID, appID, names...); err != nil || len(parts) > 0 {
			return parts, err
		}
	}
	app, err := s.OwnedApp(ctx, c, appID)
	if err != nil {
		return nil, err
	}
	if app.UserID == c.UserID {
		return nil, nil // read above: none
	}
	return s.store.AppPartList(ctx, app.UserID, app.ID, names...)
}
