package apps

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentplatform/agentplatform/internal/store"
)

// partWriter makes an app's stored parts match a manifest inside one
// transaction.
type partWriter struct {
	tx      *store.Store
	app     *store.App
	now     time.Time
	secrets map[string]string // sealed webhook secrets by agent name
	// fresh are generated secrets by agent name, for webhook agents that
	// have none; issued lists those used.
	fresh  map[string]freshSecret
	issued []IssuedSecret
}

// freshSecret is a generated signing secret, sealed and not.
type freshSecret struct{ plain, sealed string }

// sync writes every kind of part. For a new app existing is false and
// everything is created; an upgrade first reads what the app has.
func (w *partWriter) sync(ctx context.Context, m *Manifest, existing bool) error {
	var (
		models    []store.AppModel
		agents    []store.Agent
		functions []store.Function
		pipelines []store.Pipeline
		auths     []store.Authenticator
		servers   []store.MCPServer
		err       error
	)
	if existing {
		if models, err = w.tx.AppModelListByApp(ctx, w.app.ID); err != nil {
			return err
		}
		if agents, err = w.tx.AgentListByApp(ctx, w.app.ID); err != nil {
			return err
		}
		if functions, err = w.tx.FunctionListByApp(ctx, w.app.ID); err != nil {
			return err
		}
		if pipelines, err = w.tx.PipelineListByApp(ctx, w.app.ID); err != nil {
			return err
		}
		if auths, err = w.tx.AuthenticatorListByApp(ctx, w.app.ID); err != nil {
			return err
		}
		if servers, err = w.tx.MCPServerListByApp(ctx, w.app.ID); err != nil {
			return err
		}
	}
	if err := syncParts(models, m.Models, func(r *store.AppModel) string { return r.Slug }, func(s *Model) string { return s.Slug },
		func(s *Model) error { r := w.model(s, nil); return w.tx.AppModelCreate(ctx, r, 0) },
		func(old *store.AppModel, s *Model) error {
			if err := CheckRetype(ctx, w.tx, old, s.Fields); err != nil {
				return err
			}
			return w.tx.AppModelUpdate(ctx, w.model(s, old))
		},
		func(r *store.AppModel) error { return w.tx.AppModelDelete(ctx, r.ID) }); err != nil {
		return err
	}
	if err := syncParts(agents, m.Agents, func(r *store.Agent) string { return r.Name }, func(s *AgentSpec) string { return s.Name },
		func(s *AgentSpec) error { return w.tx.AgentCreate(ctx, w.agent(s, nil)) },
		func(old *store.Agent, s *AgentSpec) error { return w.tx.AgentUpdate(ctx, w.agent(s, old)) },
		func(r *store.Agent) error { return w.tx.AgentDelete(ctx, r.ID) }); err != nil {
		return err
	}
	if err := syncParts(functions, m.Functions, func(r *store.Function) string { return r.Name }, func(s *FunctionSpec) string { return s.Name },
		func(s *FunctionSpec) error { return w.tx.FunctionCreate(ctx, w.function(s, nil)) },
		func(old *store.Function, s *FunctionSpec) error { return w.tx.FunctionUpdate(ctx, w.function(s, old)) },
		func(r *store.Function) error { return w.tx.FunctionDelete(ctx, r.ID) }); err != nil {
		return err
	}
	if err := syncParts(pipelines, m.Pipelines, func(r *store.Pipeline) string { return r.Name }, func(s *PipelineSpec) string { return s.Name },
		func(s *PipelineSpec) error { return w.tx.PipelineCreate(ctx, w.pipeline(s, nil)) },
		func(old *store.Pipeline, s *PipelineSpec) error { return w.tx.PipelineUpdate(ctx, w.pipeline(s, old)) },
		func(r *store.Pipeline) error { return w.tx.PipelineDelete(ctx, r.ID) }); err != nil {
		return err
	}
	if err := syncParts(auths, m.Authenticators, func(r *store.Authenticator) string { return r.Name }, func(s *Authenticator) string { return s.Name },
		func(s *Authenticator) error { return w.tx.AuthenticatorCreate(ctx, w.authenticator(s, nil)) },
		func(old *store.Authenticator, s *Authenticator) error {
			return w.tx.AuthenticatorUpdate(ctx, w.authenticator(s, old))
		},
		func(r *store.Authenticator) error { return w.tx.AuthenticatorDelete(ctx, r.ID) }); err != nil {
		return err
	}
	return syncParts(servers, m.MCPServers, func(r *store.MCPServer) string { return r.Name }, func(s *MCPServerSpec) string { return s.Name },
		func(s *MCPServerSpec) error { return w.tx.MCPServerCreate(ctx, w.mcpServer(s, nil)) },
		func(old *store.MCPServer, s *MCPServerSpec) error {
			return w.tx.MCPServerUpdate(ctx, w.mcpServer(s, old))
		},
		func(r *store.MCPServer) error { return w.tx.MCPServerDelete(ctx, r.ID) })
}

// syncParts matches stored parts to wanted ones by key: matches are
// updated, new ones created (in manifest order), the rest deleted.
func syncParts[R, S any](have []R, want []S, haveKey func(*R) string, wantKey func(*S) string,
	create func(*S) error, update func(*R, *S) error, remove func(*R) error) error {
	byKey := make(map[string]*R, len(have))
	for i := range have {
		byKey[haveKey(&have[i])] = &have[i]
	}
	for i := range want {
		k := wantKey(&want[i])
		old, ok := byKey[k]
		var err error
		if ok {
			delete(byKey, k)
			err = update(old, &want[i])
		} else {
			err = create(&want[i])
		}
		if err != nil {
			return err
		}
	}
	for i := range have {
		if _, gone := byKey[haveKey(&have[i])]; gone {
			if err := remove(&have[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// stamp gives a new row its id and creation time, or keeps an old row's.
func (w *partWriter) stamp(oldID string, oldCreated time.Time) (string, time.Time) {
	if oldID == "" {
		return newID(), w.now
	}
	return oldID, oldCreated
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs and validated JSON come here
	}
	return b
}

func (w *partWriter) model(s *Model, old *store.AppModel) *store.AppModel {
	r := &store.AppModel{AppID: w.app.ID, Slug: s.Slug, Name: s.Name, Fields: mustJSON(s.Fields), UpdatedAt: w.now}
	if old == nil {
		old = &store.AppModel{}
	}
	r.ID, r.CreatedAt = w.stamp(old.ID, old.CreatedAt)
	return r
}

func modelSpec(r *store.AppModel) Model {
	m := Model{Slug: r.Slug, Name: r.Name, Fields: []Field{}}
	_ = json.Unmarshal(r.Fields, &m.Fields)
	return m
}

// agent is the row of s. An upgrade that names no webhook secret keeps
// the agent's sealed one; a webhook agent that has none gets a fresh one.
func (w *partWriter) agent(s *AgentSpec, old *store.Agent) *store.Agent {
	if old == nil {
		old = &store.Agent{Status: StatusActive}
	}
	r := agentRow(s, old)
	r.AppID, r.UserID, r.UpdatedAt = w.app.ID, w.app.UserID, w.now
	r.ID, r.CreatedAt = w.stamp(old.ID, old.CreatedAt)
	if sealed, ok := w.secrets[s.Name]; ok {
		r.SecretEnc = sealed
	} else if f, ok := w.fresh[s.Name]; ok && r.SecretEnc == "" {
		r.SecretEnc = f.sealed
		w.issued = append(w.issued, IssuedSecret{AgentID: r.ID, Name: r.Name, WebhookSecret: f.plain})
	}
	return r
}

// agentRow is old with the fields of s; the secret stays old's unless s
// stops being a webhook agent.
func agentRow(s *AgentSpec, old *store.Agent) *store.Agent {
	r := *old
	r.Name, r.Description, r.AgentTypeID, r.Version = s.Name, s.Description, s.AgentTypeID, s.Version
	r.Capabilities, r.TimeoutSeconds, r.WebhookURL = orEmpty(s.Capabilities), s.TimeoutSeconds, s.WebhookURL
	cfg := s.AgentConfig
	cfg.Secret = ""
	r.Config = mustJSON(cfg)
	r.InputSchema = s.InputSchema
	if cfg.Runtime != "webhook" {
		r.SecretEnc = ""
	}
	return &r
}

func agentSpec(r *store.Agent) AgentSpec {
	s := AgentSpec{Name: r.Name, Description: r.Description, AgentTypeID: r.AgentTypeID, Version: r.Version,
		Capabilities: orEmpty(r.Capabilities), TimeoutSeconds: r.TimeoutSeconds, WebhookURL: r.WebhookURL, InputSchema: r.InputSchema}
	_ = json.Unmarshal(r.Config, &s.AgentConfig)
	return s
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (w *partWriter) function(s *FunctionSpec, old *store.Function) *store.Function {
	r := &store.Function{AppID: w.app.ID, UserID: w.app.UserID, Name: s.Name, Description: s.Description, Code: s.Code,
		InputSchema: s.InputSchema, TimeoutSeconds: s.TimeoutSeconds, UpdatedAt: w.now}
	if old == nil {
		old = &store.Function{}
	}
	r.ID, r.CreatedAt = w.stamp(old.ID, old.CreatedAt)
	return r
}

func functionSpec(r *store.Function) FunctionSpec {
	return FunctionSpec{Name: r.Name, Description: r.Description, Code: r.Code, InputSchema: r.InputSchema, TimeoutSeconds: r.TimeoutSeconds}
}

func (w *partWriter) pipeline(s *PipelineSpec, old *store.Pipeline) *store.Pipeline {
	r := &store.Pipeline{AppID: w.app.ID, UserID: w.app.UserID, Name: s.Name, Description: s.Description,
		Steps: mustJSON(s.Steps), UpdatedAt: w.now}
	if old == nil {
		old = &store.Pipeline{}
	}
	r.ID, r.CreatedAt = w.stamp(old.ID, old.CreatedAt)
	return r
}

func pipelineSpec(r *store.Pipeline) PipelineSpec {
	p := PipelineSpec{Name: r.Name, Description: r.Description, Steps: []Step{}}
	_ = json.Unmarshal(r.Steps, &p.Steps)
	return p
}

// authenticator is the row of s. The user's client secret and the
// is_active switch survive an upgrade.
func (w *partWriter) authenticator(s *Authenticator, old *store.Authenticator) *store.Authenticator {
	if old == nil {
		old = &store.Authenticator{IsActive: true}
	}
	r := &store.Authenticator{AppID: w.app.ID, ClientSecretEnc: old.ClientSecretEnc, IsActive: old.IsActive, UpdatedAt: w.now}
	s.SetOn(r)
	r.ID, r.CreatedAt = w.stamp(old.ID, old.CreatedAt)
	return r
}

func (w *partWriter) mcpServer(s *MCPServerSpec, old *store.MCPServer) *store.MCPServer {
	r := &store.MCPServer{AppID: w.app.ID, UserID: w.app.UserID, UpdatedAt: w.now}
	s.SetOn(r)
	if old == nil {
		old = &store.MCPServer{}
	}
	r.ID, r.CreatedAt = w.stamp(old.ID, old.CreatedAt)
	return r
}
