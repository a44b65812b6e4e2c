package apps

import (
	"context"
	"encoding/json"
	"errors"
	"maps"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/quota"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

// Counts are how many parts of each kind an import left the app with.
type Counts struct {
	Agents         int `json:"agents"`
	Models         int `json:"models"`
	Functions      int `json:"functions"`
	Pipelines      int `json:"pipelines"`
	Authenticators int `json:"authenticators"`
}

// Imported is the outcome of creating, importing or installing an app.
type Imported struct {
	App     *store.App
	Created Counts
	// Upgraded: an existing app was brought to a higher version in place.
	Upgraded bool
	// WebhookSecrets are the signing secrets the platform generated for
	// webhook agents that had none (never nil): shown this once.
	WebhookSecrets []IssuedSecret
}

// IssuedSecret is a webhook agent's signing secret that the platform
// generated, in the one answer that shows it.
type IssuedSecret struct {
	AgentID       string `json:"agent_id"`
	Name          string `json:"name" doc:"The agent's name"`
	WebhookSecret string `json:"webhook_secret" doc:"whsec_…: verify the agent's requests with it (Standard Webhooks). Shown this once; rotate it with PATCH rotate_secret."`
}

// CreateInput is POST /apps: an app, from a manifest or empty.
type CreateInput struct {
	Name, Slug, Description string
	// ManifestData is the manifest as decoded JSON, or nil.
	ManifestData any
}

// Create makes a new app; with ManifestData everything it declares is
// created too, in one transaction. The body's name, slug and description
// win over the manifest's. A slug the caller already has is a conflict.
func (s *Service) Create(ctx context.Context, c *auth.Caller, in CreateInput) (*Imported, error) {
	m := &Manifest{Name: in.Name, Slug: in.Slug, Description: in.Description, Version: defaultVersion}
	if data, ok := in.ManifestData.(map[string]any); ok {
		// The body's fields fill (and win over) the manifest's header.
		data = maps.Clone(data)
		for k, v := range map[string]string{"name": in.Name, "slug": in.Slug, "description": in.Description} {
			if v != "" {
				data[k] = v
			}
		}
		if data["version"] == nil {
			data["version"] = defaultVersion
		}
		var err error
		if m, err = DecodeManifest(data, "manifest_data"); err != nil {
			return nil, err
		}
	} else if in.ManifestData != nil {
		return nil, apperr.Invalid("manifest_data", "Invalid value for field manifest_data: expected an object")
	}
	if err := checkHeader(m); err != nil {
		return nil, err
	}
	return s.write(ctx, c, m, writeOpts{root: "manifest_data"})
}

// Import creates the app of a parsed manifest or, when the caller has its
// slug at a lower version, upgrades that app in place.
func (s *Service) Import(ctx context.Context, c *auth.Caller, m *Manifest) (*Imported, error) {
	return s.write(ctx, c, m, writeOpts{upgrade: true})
}

// ExternalEndpoint is an installed webhook-runtime agent: its url is its
// code, so the installer's inputs go there.
type ExternalEndpoint struct {
	AgentID string `json:"agent_id" doc:"The agent in the installed copy"`
	Name    string `json:"name"`
	URL     string `json:"url" doc:"Where the agent's inputs are POSTed"`
}

// Installed is the outcome of an install.
type Installed struct {
	Imported
	// ExternalEndpoints lists the copy's webhook-runtime agents (never nil).
	ExternalEndpoints []ExternalEndpoint
}

// Install copies a published app (or one of the caller's own) into the
// caller's account: new ids, no data, no secrets (each webhook-runtime
// agent gets a new signing secret of its own, in WebhookSecrets), and no
// agent webhook_url, since the installer's results must never go to the
// publisher's endpoint. slug and name, when not empty, replace the
// source's (installing next to an app of the same slug).
func (s *Service) Install(ctx context.Context, c *auth.Caller, appID, slug, name string) (*Installed, error) {
	src, err := s.installable(ctx, c, appID)
	if err != nil {
		return nil, err
	}
	m, err := s.manifestOf(ctx, src)
	if err != nil {
		return nil, err
	}
	for i := range m.Agents {
		m.Agents[i].WebhookURL = ""
		m.Agents[i].AgentConfig.Secret = "" // manifestOf has none; the copy must not either
	}
	override(&m.Name, name)
	override(&m.Slug, slug)
	if err := checkHeader(m); err != nil {
		return nil, err
	}
	r, err := s.write(ctx, c, m, writeOpts{installedFrom: src.ID})
	if err != nil {
		return nil, err
	}
	out := &Installed{Imported: *r, ExternalEndpoints: []ExternalEndpoint{}}
	// Read back what was stored: that is what will be called.
	agents, err := s.store.AgentListByApp(ctx, r.App.ID)
	if err != nil {
		return nil, err
	}
	for _, a := range agents {
		var cfg AgentConfig
		if json.Unmarshal(a.Config, &cfg) == nil && cfg.Runtime == "webhook" {
			out.ExternalEndpoints = append(out.ExternalEndpoints, ExternalEndpoint{AgentID: a.ID, Name: a.Name, URL: cfg.URL})
		}
	}
	return out, nil
}

func override(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

// checkHeader validates the name, slug and version of m after a request
// replaced them; errors name the request's fields.
func checkHeader(m *Manifest) error {
	d := &decoder{}
	decodeHeader(d, d.asObject(map[string]any{"name": m.Name, "slug": m.Slug, "version": m.Version}, "", true), &Manifest{})
	if d.err != nil {
		return d.err
	}
	return nil
}

func (s *Service) installable(ctx context.Context, c *auth.Caller, appID string) (*store.App, error) {
	// Anyone may install a published app; anything else only its owner.
	if uuid.Validate(appID) == nil {
		if probe, err := s.store.AppGet(ctx, appID); err == nil && probe.MarketplaceStatus == MarketPublished {
			return probe, nil
		}
	}
	return s.ownedApp(ctx, c, appID, actionRead)
}

// Export returns the manifest of the caller's app: it imports back to the
// same app. Secrets are never part of it.
func (s *Service) Export(ctx context.Context, c *auth.Caller, appID string) (*Manifest, error) {
	app, err := s.OwnedApp(ctx, c, appID)
	if err != nil {
		return nil, err
	}
	return s.manifestOf(ctx, app)
}

func (s *Service) manifestOf(ctx context.Context, app *store.App) (*Manifest, error) {
	m := &Manifest{Name: app.Name, Slug: app.Slug, Version: app.Version, Description: app.Description,
		MinPlatformVersion: headerOf(app).MinPlatformVersion}
	models, err := s.store.AppModelListByApp(ctx, app.ID)
	if err != nil {
		return nil, err
	}
	agents, err := s.store.AgentListByApp(ctx, app.ID)
	if err != nil {
		return nil, err
	}
	functions, err := s.store.FunctionListByApp(ctx, app.ID)
	if err != nil {
		return nil, err
	}
	pipelines, err := s.store.PipelineListByApp(ctx, app.ID)
	if err != nil {
		return nil, err
	}
	auths, err := s.store.AuthenticatorListByApp(ctx, app.ID)
	if err != nil {
		return nil, err
	}
	servers, err := s.store.MCPServerListByApp(ctx, app.ID)
	if err != nil {
		return nil, err
	}
	m.Models = mapAll(models, modelSpec)
	m.Agents = mapAll(agents, agentSpec)
	m.Functions = mapAll(functions, functionSpec)
	m.Pipelines = mapAll(pipelines, pipelineSpec)
	namesByID(m, agents, functions)
	m.Authenticators = mapAll(auths, s.AuthenticatorSpec)
	m.MCPServers = mapAll(servers, MCPServerSpecOf)
	return m, nil
}

// namesByID makes the pipeline steps and agent tools of m that name a
// part by id (made over the API) name it by name, as a manifest's do: the
// ids are this app's, an installed copy's parts get others.
func namesByID(m *Manifest, agents []store.Agent, functions []store.Function) {
	names := map[string]map[string]string{"agent": {}, "function": {}}
	for _, a := range agents {
		names["agent"][a.ID] = a.Name
	}
	for _, f := range functions {
		names["function"][f.ID] = f.Name
	}
	for _, p := range m.Pipelines {
		for i, st := range p.Steps {
			if name, ok := names[st.Type][st.Ref]; ok {
				p.Steps[i].Ref = name
			}
		}
	}
	toolNamesByID(m.Agents, names)
}

func mapAll[S, T any](items []S, fn func(*S) T) []T {
	out := make([]T, len(items))
	for i := range items {
		out[i] = fn(&items[i])
	}
	return out
}

type writeOpts struct {
	upgrade       bool   // an existing slug at a lower version is upgraded
	installedFrom string // the source of an install
	root          string // the manifest's path in the request, for errors
}

// write stores m as a new app of the caller, or as the upgrade of the
// caller's app with its slug: all of it in one transaction, so a failure
// leaves nothing behind.
func (s *Service) write(ctx context.Context, c *auth.Caller, m *Manifest, opts writeOpts) (*Imported, error) {
	if err := s.checkQuotas(m, opts.root); err != nil {
		return nil, err
	}
	for i := range m.Authenticators {
		if err := s.PrepareAuthenticator(index(join(opts.root, "authenticators"), i)+".", &m.Authenticators[i]); err != nil {
			return nil, err
		}
	}
	for i := range m.MCPServers {
		if err := s.egress.CheckURL(index(join(opts.root, "mcp_servers"), i)+".url", m.MCPServers[i].URL); err != nil {
			return nil, err
		}
	}
	// Sealing is CPU only, but it is done before the transaction all the
	// same: nothing slow belongs inside SQLite's one writer. A webhook
	// agent without a secret gets one ready, used if the agent has none
	// (a new agent; an upgrade keeps the agent's own).
	secrets := map[string]string{}
	fresh := map[string]freshSecret{}
	for i, a := range m.Agents {
		prefix := index(join(opts.root, "agents"), i) + "."
		if err := s.checkAgentURLs(prefix, &a); err != nil {
			return nil, err
		}
		if err := s.checkToolProvider(ctx, prefix, c.UserID, &a); err != nil {
			return nil, err
		}
		if a.AgentConfig.Runtime != "webhook" {
			continue
		}
		if a.AgentConfig.Secret != "" {
			sealed, err := s.secrets.Seal(a.AgentConfig.Secret)
			if err != nil {
				return nil, err
			}
			secrets[a.Name] = sealed
			continue
		}
		plain := webhook.NewSecret()
		sealed, err := s.secrets.Seal(plain)
		if err != nil {
			return nil, err
		}
		fresh[a.Name] = freshSecret{plain: plain, sealed: sealed}
	}
	header, err := json.Marshal(manifestHeader{MinPlatformVersion: m.MinPlatformVersion})
	if err != nil {
		return nil, err
	}
	out := &Imported{}
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		now := s.now()
		app, err := tx.AppGetBySlug(ctx, c.UserID, m.Slug)
		if err == nil && !c.SeesApp(app.ID) {
			err = store.ErrNotFound // another app is absent to a key bound to one
		}
		switch {
		case errors.Is(err, store.ErrNotFound):
			if c.AppID != "" {
				// A key bound to one app manages that app, not new ones.
				return auth.ErrForbidden
			}
			app = &store.App{ID: newID(), UserID: c.UserID, Status: StatusActive, MarketplaceStatus: MarketPrivate,
				InstalledFrom: opts.installedFrom, CreatedAt: now}
		case err != nil:
			return err
		case !opts.upgrade:
			return slugTaken(m.Slug)
		case compareSemver(m.Version, app.Version) <= 0:
			return apperr.Newf(apperr.Conflict, "App %q is already at version %s: import a higher version to upgrade it", m.Slug, app.Version)
		default:
			out.Upgraded = true
		}
		app.Name, app.Slug, app.Description, app.Version = m.Name, m.Slug, m.Description, m.Version
		app.Manifest, app.UpdatedAt = header, now
		if out.Upgraded {
			err = tx.AppUpdate(ctx, app)
		} else {
			err = tx.AppCreate(ctx, app)
			if errors.Is(err, store.ErrConflict) {
				return slugTaken(m.Slug) // a concurrent create won
			}
		}
		if err != nil {
			return err
		}
		out.App = app
		w := &partWriter{tx: tx, app: app, now: now, secrets: secrets, fresh: fresh}
		err = w.sync(ctx, m, out.Upgraded)
		out.WebhookSecrets = orEmpty(w.issued)
		return err
	})
	if err != nil {
		return nil, err
	}
	out.Created = Counts{Agents: len(m.Agents), Models: len(m.Models), Functions: len(m.Functions),
		Pipelines: len(m.Pipelines), Authenticators: len(m.Authenticators)}
	return out, nil
}

// checkQuotas refuses a manifest that declares more models, fields or
// pipeline steps than the quotas allow, naming the path at fault. An
// import leaves the app with the manifest's parts only, so the counts are
// the manifest's.
func (s *Service) checkQuotas(m *Manifest, root string) error {
	q := s.opts.Quotas
	models := join(root, "models")
	if err := q.Check(quota.Models, len(m.Models), models); err != nil {
		return err
	}
	for i := range m.Models {
		if err := q.Check(quota.Fields, len(m.Models[i].Fields), index(models, i)+".fields"); err != nil {
			return err
		}
	}
	for i := range m.Pipelines {
		if err := q.Check(quota.PipelineSteps, len(m.Pipelines[i].Steps), index(join(root, "pipelines"), i)+".steps"); err != nil {
			return err
		}
	}
	return nil
}

func slugTaken(slug string) error {
	return apperr.Newf(apperr.Conflict, "An app with slug %q already exists", slug)
}
