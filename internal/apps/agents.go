package apps

import (
	"context"
	"encoding/json"
	"errors"
	"maps"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/tool"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

// AssistantID is the fixed id of the system agent "assistant".
const AssistantID = "00000000-0000-7000-8000-000000000001"

// systemAgents are visible to every user and changed only by a release.
var systemAgents = []store.Agent{{
	ID: AssistantID, Name: "assistant", Description: "A general-purpose helpful assistant.",
	AgentTypeID: "llm", Version: defaultVersion, Status: StatusActive, IsSystem: true,
	Capabilities: []string{"chat"}, TimeoutSeconds: DefaultAgentTimeout,
	Config: json.RawMessage(`{"model":"echo","provider_id":"echo","temperature":0.7,"system_message":"You are a helpful assistant."}`),
}}

// SeedSystemAgents creates the system agents, or updates them to this
// release's definition; every start calls it.
func (s *Service) SeedSystemAgents(ctx context.Context) error {
	for _, a := range systemAgents {
		a.CreatedAt, a.UpdatedAt = s.now(), s.now()
		if err := s.store.AgentUpsertSystem(ctx, &a); err != nil {
			return err
		}
	}
	return nil
}

// Agents returns a page of the agents the caller sees: those of the
// caller's apps and the system agents; a key bound to an app sees only
// that app's agents.
func (s *Service) Agents(ctx context.Context, c *auth.Caller, search string, limit, offset int) ([]store.Agent, int, error) {
	return s.store.AgentList(ctx, store.AgentFilter{UserID: c.UserID, AppID: c.AppID, System: true, Search: search}, limit, offset)
}

// AppAgents returns a page of the agents of the caller's app.
func (s *Service) AppAgents(ctx context.Context, c *auth.Caller, appID, search string, limit, offset int) ([]store.Agent, int, error) {
	app, err := s.OwnedApp(ctx, c, appID)
	if err != nil {
		return nil, 0, err
	}
	return s.store.AgentList(ctx, store.AgentFilter{UserID: app.UserID, AppID: app.ID, Search: search}, limit, offset)
}

// Agent returns an agent the caller sees, for reading.
func (s *Service) Agent(ctx context.Context, c *auth.Caller, agentID string) (*store.Agent, error) {
	a, _, err := s.visibleAgent(ctx, c, agentID, actionRead)
	return a, err
}

// VisibleAgent returns an agent the caller may use: one of the caller's
// apps' (the bound app's, for a bound key) or, unless the key is bound, a
// system agent; anything else is ErrAgentNotFound. An agent of a disabled
// app is ErrAppDisabled, a disabled agent ErrAgentDisabled (both 409).
func (s *Service) VisibleAgent(ctx context.Context, c *auth.Caller, agentID string) (*store.Agent, error) {
	a, appStatus, err := s.visibleAgent(ctx, c, agentID, actionUse)
	if err != nil {
		return nil, err
	}
	return usable(a, appStatus)
}

// VisibleAgentInApp is VisibleAgent for the agent named name of one of
// the caller's own apps (by id, or by slug when appID is empty), read
// with its app in one statement: the OpenAI endpoint and MCP name the
// agents they activate. shared reports whether a function or a pipeline
// of the app has the name too.
func (s *Service) VisibleAgentInApp(ctx context.Context, c *auth.Caller, appID, slug, name string) (a *store.Agent, shared bool, err error) {
	if appID != "" && uuid.Validate(appID) != nil {
		return nil, false, ErrAgentNotFound
	}
	a, appStatus, shared, err := s.store.AgentToActivateInApp(ctx, c.UserID, appID, slug, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, ErrAgentNotFound
	}
	if err == nil {
		err = s.reach(ctx, c, a, actionUse)
	}
	if err != nil {
		return nil, false, err
	}
	a, err = usable(a, appStatus)
	return a, shared, err
}

// usable is a, read with its app's status, if it may run now.
func usable(a *store.Agent, appStatus string) (*store.Agent, error) {
	if !a.IsSystem {
		switch appStatus {
		case "":
			return nil, ErrAgentNotFound // the app was deleted meanwhile
		case StatusDisabled:
			return nil, ErrAppDisabled
		}
	}
	if a.Status == StatusDisabled {
		return nil, ErrAgentDisabled
	}
	return a, nil
}

// visibleAgent reads the agent, with its app's status in the same
// statement (activate needs both), if the caller may act on it.
func (s *Service) visibleAgent(ctx context.Context, c *auth.Caller, agentID, action string) (*store.Agent, string, error) {
	if uuid.Validate(agentID) != nil {
		return nil, "", ErrAgentNotFound
	}
	read := s.store.AgentGetWithApp
	if action == actionUse {
		read = s.store.AgentToActivate // on every activation: may be cached
	}
	a, appStatus, err := read(ctx, agentID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", ErrAgentNotFound
	}
	if err != nil {
		return nil, "", err
	}
	if err := s.reach(ctx, c, a, action); err != nil {
		return nil, "", err
	}
	return a, appStatus, nil
}

// reach is nil if the caller may act on agent a: a system agent is
// everyone's, and in no app (a key bound to one does not see them).
func (s *Service) reach(ctx context.Context, c *auth.Caller, a *store.Agent, action string) error {
	if a.IsSystem {
		if !c.SeesApp("") {
			return ErrAgentNotFound
		}
		return nil
	}
	return s.auth.Reach(ctx, c, auth.Resource{Type: resourceAgent, ID: a.ID, OwnerID: a.UserID, AppID: a.AppID}, action, ErrAgentNotFound)
}

// AppAgent returns an agent of the caller's app.
func (s *Service) AppAgent(ctx context.Context, c *auth.Caller, appID, agentID string) (*store.Agent, error) {
	return s.appAgent(ctx, c, appID, agentID, actionRead)
}

func (s *Service) appAgent(ctx context.Context, c *auth.Caller, appID, agentID, action string) (*store.Agent, error) {
	app, err := s.ownedApp(ctx, c, appID, action)
	if err != nil {
		return nil, err
	}
	if uuid.Validate(agentID) != nil {
		return nil, ErrAgentNotFound
	}
	a, err := s.store.AgentGet(ctx, agentID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.AppID != app.ID) {
		return nil, ErrAgentNotFound
	}
	return a, err
}

// CreateAgent adds an agent to the caller's app. body is the decoded JSON
// request ({name, description, agent_type_id, version, capabilities,
// timeout_seconds, webhook_url, agent_config}); errors name its fields.
// The string is the signing secret the platform generated for a webhook
// agent created without one: shown this once, never again.
func (s *Service) CreateAgent(ctx context.Context, c *auth.Caller, appID string, body map[string]any) (*store.Agent, string, error) {
	app, err := s.ownedApp(ctx, c, appID, actionManage)
	if err != nil {
		return nil, "", err
	}
	spec, err := decodeAgentBody(body)
	if err != nil {
		return nil, "", err
	}
	if err := s.checkAgent(ctx, app, spec, "", ""); err != nil {
		return nil, "", err
	}
	now := s.now()
	r := agentRow(spec, &store.Agent{ID: newID(), AppID: app.ID, UserID: app.UserID, Status: StatusActive, CreatedAt: now})
	r.UpdatedAt = now
	generated, err := s.setSecret(r, spec, false)
	if err != nil {
		return nil, "", err
	}
	if err := s.store.AgentCreate(ctx, r); err != nil {
		return nil, "", agentConflict(err, spec.Name)
	}
	return r, generated, nil
}

// RotateSecretField is the agent PATCH field that asks for a new generated
// signing secret.
const RotateSecretField = "rotate_secret"

// UpdateAgent changes an agent of the caller's app. patch holds the fields
// to change (agent_config keys are merged into the current config); the
// result is validated as a whole. "status" is active or disabled;
// "rotate_secret": true gives a webhook agent a new generated signing
// secret (agent_config.secret sets one of the caller's). The string is a
// secret the platform generated in this call, shown this once.
func (s *Service) UpdateAgent(ctx context.Context, c *auth.Caller, appID, agentID string, patch map[string]any) (*store.Agent, string, error) {
	a, err := s.appAgent(ctx, c, appID, agentID, actionManage)
	if err != nil {
		return nil, "", err
	}
	var merged map[string]any
	if err := json.Unmarshal(mustJSON(agentSpec(a)), &merged); err != nil {
		return nil, "", err
	}
	rotate := false
	for k, v := range patch {
		switch k {
		case RotateSecretField:
			b, ok := v.(bool)
			if !ok {
				return nil, "", apperr.Invalid(k, "Invalid value for field "+k+": expected a boolean")
			}
			rotate = b
			continue
		case "agent_config":
			if cfg, ok := v.(map[string]any); ok {
				base, _ := merged[k].(map[string]any)
				if base == nil {
					base = map[string]any{}
				}
				maps.Copy(base, cfg)
				merged[k] = base
				continue
			}
		}
		merged[k] = v
	}
	status := a.Status
	if v, ok := patch["status"]; ok {
		if status, _ = v.(string); status != StatusActive && status != StatusDisabled {
			return nil, "", apperr.Invalid("status", "Invalid value for field status: must be one of active, disabled")
		}
	}
	spec, err := decodeAgentBody(merged)
	if err != nil {
		return nil, "", err
	}
	if rotate && spec.AgentConfig.Runtime != "webhook" {
		return nil, "", apperr.Invalid(RotateSecretField, "Invalid value for field "+RotateSecretField+": only a webhook agent (agent_config.runtime webhook) has a signing secret")
	}
	app, err := s.store.AppGet(ctx, a.AppID)
	if err != nil {
		return nil, "", err
	}
	if err := s.checkAgent(ctx, app, spec, a.ID, a.Name); err != nil {
		return nil, "", err
	}
	r := agentRow(spec, a)
	r.Status, r.UpdatedAt = status, s.now()
	generated, err := s.setSecret(r, spec, rotate)
	if err != nil {
		return nil, "", err
	}
	if err := s.store.AgentUpdate(ctx, r); err != nil {
		return nil, "", agentConflict(err, spec.Name)
	}
	return r, generated, nil
}

// DeleteAgent deletes an agent of the caller's app with its activations.
func (s *Service) DeleteAgent(ctx context.Context, c *auth.Caller, appID, agentID string) error {
	a, err := s.appAgent(ctx, c, appID, agentID, actionManage)
	if err != nil {
		return err
	}
	return s.store.AgentDelete(ctx, a.ID)
}

func decodeAgentBody(body map[string]any) (*AgentSpec, error) {
	v, err := normalize(body)
	if err != nil {
		return nil, apperr.Invalid("body", "Malformed JSON body: "+err.Error())
	}
	d := &decoder{}
	spec := decodeAgent(d, d.asObject(v, "", true))
	if d.err != nil {
		return nil, d.err
	}
	return &spec, nil
}

// checkAgent makes the checks of agent spec, saved over the API in app,
// that need more than its body: its URLs, its tools' refs and provider;
// selfID and oldName are the stored agent's ("" for a new one).
func (s *Service) checkAgent(ctx context.Context, app *store.App, spec *AgentSpec, selfID, oldName string) error {
	if err := s.checkAgentURLs("", spec); err != nil {
		return err
	}
	if err := s.checkAgentTools(ctx, app, spec, selfID, oldName); err != nil {
		return err
	}
	return s.checkToolProvider(ctx, "", app.UserID, spec)
}

// checkAgentURLs refuses the URLs the platform will call for an agent (its
// webhook_url, a webhook agent's url, its http tools' urls) when they name
// a private address (egress.Guard.CheckURL); prefix is the agent's path in
// the request.
func (s *Service) checkAgentURLs(prefix string, a *AgentSpec) error {
	if a.WebhookURL != "" {
		if err := s.egress.CheckURL(prefix+"webhook_url", a.WebhookURL); err != nil {
			return err
		}
	}
	for i, t := range a.AgentConfig.Tools {
		if t.Type == tool.KindHTTP && t.URL != "" {
			if err := s.egress.CheckURL(index(prefix+"agent_config.tools", i)+".url", t.URL); err != nil {
				return err
			}
		}
	}
	if a.AgentConfig.Runtime == "webhook" && a.AgentConfig.URL != "" {
		return s.egress.CheckURL(prefix+"agent_config.url", a.AgentConfig.URL)
	}
	return nil
}

// setSecret gives webhook agent r (of spec) its signing secret, sealed:
// the one spec supplies, else, when r has none yet or rotate asks, a new
// one, which it returns ("" otherwise) to be shown once. Other agents have
// none (agentRow dropped it).
func (s *Service) setSecret(r *store.Agent, spec *AgentSpec, rotate bool) (string, error) {
	if spec.AgentConfig.Runtime != "webhook" {
		return "", nil
	}
	secret, generated := spec.AgentConfig.Secret, ""
	if secret == "" {
		if r.SecretEnc != "" && !rotate {
			return "", nil
		}
		secret = webhook.NewSecret()
		generated = secret
	}
	sealed, err := s.secrets.Seal(secret)
	if err != nil {
		return "", err
	}
	r.SecretEnc = sealed
	return generated, nil
}

// WebhookSecret opens the signing secret of webhook agent agentID, for its
// runs. An agent without one (made before secrets were generated) cannot
// sign: the error says how to give it one.
func (s *Service) WebhookSecret(ctx context.Context, agentID string) (string, error) {
	a, err := s.store.AgentGet(ctx, agentID)
	if err != nil {
		return "", err
	}
	if a.SecretEnc == "" {
		return "", errors.New("Webhook agent has no signing secret: give it one with PATCH (rotate_secret: true)")
	}
	return s.secrets.Open(a.SecretEnc)
}

func agentConflict(err error, name string) error {
	if errors.Is(err, store.ErrConflict) {
		return apperr.Newf(apperr.Conflict, "An agent named %q already exists in this app", name)
	}
	return err
}
