package api

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentplatform/agentplatform/internal/store"
)

// Agent is an agent as listed: the union of the spec's two summary shapes
// (agent_id and id carry the same value).
type Agent struct {
	AgentID      string    `json:"agent_id"`
	ID           string    `json:"id" doc:"Same as agent_id"`
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	AgentTypeID  string    `json:"agent_type_id" enum:"llm,custom"`
	Version      string    `json:"version"`
	Status       string    `json:"status" enum:"active,disabled"`
	IsSystem     bool      `json:"is_system"`
	Capabilities []string  `json:"capabilities"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// AgentDetail adds the configuration. A webhook agent's secret is never
// part of it.
type AgentDetail struct {
	Agent
	AppID          *string         `json:"app_id" doc:"null for system agents"`
	AgentConfig    json.RawMessage `json:"agent_config" doc:"LLM: {model, temperature, system_message, provider_id, max_tokens}; custom: {runtime: javascript, code} or {runtime: webhook, url}"`
	TimeoutSeconds int             `json:"timeout_seconds"`
	WebhookURL     string          `json:"webhook_url,omitempty" doc:"Where each finished activation is POSTed"`
	InputSchema    json.RawMessage `json:"input_schema,omitempty"`
}

func agentOut(a *store.Agent) Agent {
	caps := a.Capabilities
	if caps == nil {
		caps = []string{}
	}
	return Agent{AgentID: a.ID, ID: a.ID, Name: a.Name, Description: a.Description, AgentTypeID: a.AgentTypeID,
		Version: a.Version, Status: a.Status, IsSystem: a.IsSystem, Capabilities: caps, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
}

func agentDetailOut(a *store.Agent) AgentDetail {
	out := AgentDetail{Agent: agentOut(a), AgentConfig: a.Config, TimeoutSeconds: a.TimeoutSeconds, WebhookURL: a.WebhookURL,
		InputSchema: a.InputSchema}
	if a.AppID != "" {
		out.AppID = &a.AppID
	}
	return out
}

type agentOutput struct{ Body AgentDetail }

// SavedAgent is an agent as a create or a change left it, with the
// signing secret the platform generated for it in that call.
type SavedAgent struct {
	AgentDetail
	WebhookSecret string `json:"webhook_secret,omitempty" doc:"A webhook agent's signing secret (whsec_…), present only in the answer of the call that generated it (a create without agent_config.secret, or rotate_secret): verify the agent's requests with it (Standard Webhooks). It is shown this once and never again."`
}

type savedAgentOutput struct{ Body SavedAgent }

// AgentPageParams is PageParams with the agents' default of 100.
type AgentPageParams struct {
	Limit  int    `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"Page size, 1 to 1000"`
	Offset int    `query:"offset" minimum:"0" default:"0" doc:"Items to skip"`
	Search string `query:"search" doc:"Only agents whose name or description contains this (case-insensitive)"`
}

func (p AgentPageParams) page(total int) Page {
	return PageParams{Limit: p.Limit, Offset: p.Offset}.page(total)
}

type listAgentsOutput struct {
	Body struct {
		Agents []Agent `json:"agents"`
		Page
	}
}

func agentsPage(in AgentPageParams, list []store.Agent, total int) *listAgentsOutput {
	out := &listAgentsOutput{}
	out.Body.Agents, out.Body.Page = mapAll(list, agentOut), in.page(total)
	return out
}

func (a *API) listAgents(ctx context.Context, in *AgentPageParams) (*listAgentsOutput, error) {
	list, total, err := a.Apps.Agents(ctx, mustCaller(ctx), in.Search, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	return agentsPage(*in, list, total), nil
}

type agentIDInput struct {
	AgentID string `path:"agent_id" doc:"Agent id"`
}

func (a *API) getAgent(ctx context.Context, in *agentIDInput) (*agentOutput, error) {
	ag, err := a.Apps.Agent(ctx, mustCaller(ctx), in.AgentID)
	if err != nil {
		return nil, err
	}
	return &agentOutput{agentDetailOut(ag)}, nil
}

type listAppAgentsInput struct {
	AppID string `path:"app_id" doc:"App id"`
	AgentPageParams
}

func (a *API) listAppAgents(ctx context.Context, in *listAppAgentsInput) (*listAgentsOutput, error) {
	list, total, err := a.Apps.AppAgents(ctx, mustCaller(ctx), in.AppID, in.Search, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	return agentsPage(in.AgentPageParams, list, total), nil
}

type appAgentInput struct {
	AppID   string `path:"app_id" doc:"App id"`
	AgentID string `path:"agent_id" doc:"Agent id"`
}

func (a *API) getAppAgent(ctx context.Context, in *appAgentInput) (*agentOutput, error) {
	ag, err := a.Apps.AppAgent(ctx, mustCaller(ctx), in.AppID, in.AgentID)
	if err != nil {
		return nil, err
	}
	return &agentOutput{agentDetailOut(ag)}, nil
}

// The agent bodies are decoded by the apps domain, which names the exact
// field at fault (agent_config.model); the document shows apps.AgentSpec.
type createAgentInput struct {
	AppID   string `path:"app_id" doc:"App id"`
	RawBody []byte `contentType:"application/json"`
}

func (a *API) createAgent(ctx context.Context, in *createAgentInput) (*savedAgentOutput, error) {
	body, err := rawJSONObject(in.RawBody)
	if err != nil {
		return nil, err
	}
	ag, secret, err := a.Apps.CreateAgent(ctx, mustCaller(ctx), in.AppID, body)
	if err != nil {
		return nil, err
	}
	return &savedAgentOutput{SavedAgent{agentDetailOut(ag), secret}}, nil
}

// AgentPatch documents PATCH .../agents/{agent_id}: any subset of the
// agent's fields; agent_config keys are merged into the current config and
// the result is validated as a whole.
type AgentPatch struct {
	Name           *string        `json:"name,omitempty"`
	Description    *string        `json:"description,omitempty"`
	AgentTypeID    *string        `json:"agent_type_id,omitempty" enum:"llm,custom"`
	Version        *string        `json:"version,omitempty"`
	Capabilities   []string       `json:"capabilities,omitempty"`
	TimeoutSeconds *int           `json:"timeout_seconds,omitempty" minimum:"1" maximum:"3600"`
	WebhookURL     *string        `json:"webhook_url,omitempty"`
	AgentConfig    map[string]any `json:"agent_config,omitempty" doc:"Keys to change in the current config"`
	Status         *string        `json:"status,omitempty" enum:"active,disabled"`
	InputSchema    map[string]any `json:"input_schema,omitempty"`
	RotateSecret   *bool          `json:"rotate_secret,omitempty" doc:"true: a webhook agent gets a new generated signing secret, shown once in this answer (webhook_secret); the old one stops signing at once. To set one of your own, send agent_config.secret."`
}

type updateAgentInput struct {
	AppID   string `path:"app_id" doc:"App id"`
	AgentID string `path:"agent_id" doc:"Agent id"`
	RawBody []byte `contentType:"application/json"`
}

func (a *API) updateAgent(ctx context.Context, in *updateAgentInput) (*savedAgentOutput, error) {
	body, err := rawJSONObject(in.RawBody)
	if err != nil {
		return nil, err
	}
	ag, secret, err := a.Apps.UpdateAgent(ctx, mustCaller(ctx), in.AppID, in.AgentID, body)
	if err != nil {
		return nil, err
	}
	return &savedAgentOutput{SavedAgent{agentDetailOut(ag), secret}}, nil
}

func (a *API) deleteAgent(ctx context.Context, in *appAgentInput) (*struct{}, error) {
	return nil, a.Apps.DeleteAgent(ctx, mustCaller(ctx), in.AppID, in.AgentID)
}
