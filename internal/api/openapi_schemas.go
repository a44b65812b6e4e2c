package api

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/function"
	"github.com/agentplatform/agentplatform/internal/llm"
)

// docTags are the document's tags, in the order the docs page lists them.
var docTags = []*huma.Tag{
	{Name: "auth", Description: "Register, log in and log out. Form-encoded like an HTML form (JSON accepted too); " +
		"browsers get redirects, programs send `Accept: application/json` for JSON answers."},
	{Name: "users", Description: "Your account, and (admin) every account and the audit log of admin accesses."},
	{Name: "api-keys", Description: "API keys for programs, managed with a session only."},
	{Name: "apps", Description: "Apps and their manifests, import and export, the marketplace."},
	{Name: "agents", Description: "LLM and custom agents of your apps, and the system agents."},
	{Name: "activations", Description: "Run an agent and read the results: create, wait, stream, cancel, history."},
	{Name: "events", Description: "Your activation events, live over a WebSocket, resumable by `seq`."},
	{Name: "mcp", Description: "Every app as an MCP server (Streamable HTTP, stateless): its agents, functions and pipelines as tools."},
	{Name: "webhooks", Description: "Signed (Standard Webhooks) deliveries of finished activations, and the app's signing secret."},
	{Name: "functions", Description: "JavaScript functions of your apps, run on demand with an input checked against their JSON Schema; every run is recorded."},
	{Name: "pipelines", Description: "Sequences of agent and function steps whose inputs are templates over the run's input and earlier outputs; runs are asynchronous, step by step."},
	{Name: "credentials", Description: "The credential service: connect a user's account at an app's OAuth provider (authorize, callback), " +
		"and the connection's tokens, kept encrypted and refreshed ahead of expiry, with their health. " +
		"Tokens reach only agent keys and admin or app:access API keys, never a session."},
	{Name: "data", Description: "Apps' own data: models with typed fields and their records, filtered and sorted in the database; " +
		"the data explorer's paths under /api/apps answer the same. Open to app:access keys and to a running custom agent's agent key."},
	{Name: "authenticators", Description: "OAuth 2.0 providers an app's users connect their accounts to: custom (any RFC 6749 service), google, slack, microsoft and yahoo. " +
		"Client secrets are write-only and stored encrypted."},
	{Name: "mcp-servers", Description: "Remote MCP servers an app declares (Streamable HTTP, through the egress guard, optionally with the user's connected account's token): " +
		"an LLM agent's tool {type: mcp, server} offers their tools, named <server>_<tool>."},
	{Name: "llm-providers", Description: "The LLM providers agents call: the operator's system providers and your own."},
	{Name: "usage", Description: "What your LLM calls used and cost, summed by day, app, agent, model or API key; budgets that stop calls once spent (429 BudgetExceededError) and warn at 80 % (budget_warning)."},
	{Name: "worker", Description: "The activation queue and the worker processes that run it."},
	{Name: "operations", Description: "Liveness, readiness and version, for load balancers and monitors. No authentication."},
}

// docDescription is the document's introduction.
const docDescription = "Host apps and AI agents: accounts, API keys, apps, agents, activations, events.\n\n" +
	"**Authentication.** `Authorization: Bearer <token>` with an `ak_` API key or an `st_` session token (from login), " +
	"or the `ap_session` cookie. Each operation says which callers it accepts. Another user's resource answers 404, " +
	"as if absent; an admin reaches it only with an `X-Admin-Reason` header, and the access is audited.\n\n" +
	"**Errors.** Every error body is `{detail, status_code, error_type}`; a 400 names the field at fault. " +
	"Every answer carries `X-Request-ID`.\n\n" +
	"**Requests.** JSON bodies up to 1 MiB (413 beyond), request line and headers up to 64 KiB (431 beyond); " +
	"unknown fields are ignored. Lists take `limit` (1 to 1000) and `offset`, " +
	"and answer their items with `total_count` and `has_more`.\n\n" +
	"**Rate limit.** Requests per minute per user, all of a user's keys and sessions together (per address when anonymous); " +
	"refused requests (401, 403) count too. 429 with `Retry-After` beyond.\n\n" +
	"**Browsers on other origins.** Scripts on the origins listed in AP_CORS_ORIGINS may call the API with a Bearer token " +
	"(CORS, preflights included); a session cookie is never accepted cross-origin."

// anyObject is an explicit "any JSON object".
func anyObject(desc string) *huma.Schema {
	return &huma.Schema{Type: huma.TypeObject, Description: desc, AdditionalProperties: true}
}

// agentInputSchema describes a custom agent's input_schema wherever an
// agent is shown or written.
const agentInputSchema = "Custom agents only (absent when none is declared): a JSON Schema (an object) the activation's input_data must match, " +
	"and the arguments of the agent as a tool. LLM agents take {prompt, chat_id?} and refuse it"

// anyJSONOrNull is any JSON value, null included: `{}`, as anyJSON.
func anyJSONOrNull(_ huma.Registry, desc string) *huma.Schema {
	return &huma.Schema{Description: "Any JSON value, null included: " + desc}
}

// anyJSON is an explicit "any JSON value": `{}` with words. Never a
// recursive schema (DESIGN §4 Operations): generators cannot type one
// (openapi-fetch's request bodies fail strict TypeScript on it).
func anyJSON(_ huma.Registry) *huma.Schema {
	return &huma.Schema{Description: "Any JSON value"}
}

// knownShapes give the JSON fields the API passes through as stored
// (json.RawMessage: huma cannot see their shape) the shape they have:
// component name → property → schema. A field someone removed is skipped.
func knownShapes(registry huma.Registry) map[string]map[string]*huma.Schema {
	ref := func(t reflect.Type) *huma.Schema { return registry.Schema(t, true, "") }
	// An LLM agent's output has its shape; a custom agent's is whatever
	// its run() returned (any JSON, null for undefined).
	outputData := func(nullable bool) *huma.Schema {
		desc := "An LLM agent's output (LLMOutput), or what a custom agent returned: any JSON value, null when it returned nothing"
		if nullable {
			desc += "; null until completed"
		}
		// `{}` admits null too: no {type: null} branch, which OpenAPI 3.0
		// (the downgraded document) does not know.
		return &huma.Schema{Description: desc, AnyOf: []*huma.Schema{ref(reflect.TypeFor[LLMOutput]()), anyJSONOrNull(registry, "what a custom agent returned")}}
	}
	// A nullable object cannot be a $ref with nullable beside it (huma
	// refuses the tag; 3.0 has no null branch): the activation's waiting
	// is the Waiting schema inline, nullable.
	nullableCopy := func(t reflect.Type, desc string) *huma.Schema {
		c := *registry.SchemaFromRef(ref(t).Ref)
		c.Nullable, c.Description = true, desc
		return &c
	}
	executionStatus := &huma.Schema{Type: huma.TypeString, Enum: []any{function.StatusCompleted, function.StatusFailed},
		Description: "Executions run to their end before the answer: completed, or failed with error"}
	return map[string]map[string]*huma.Schema{
		"Activation": {
			"input_data":  anyObject("The agent's input as sent, e.g. {\"prompt\": \"…\"}"),
			"context":     ref(reflect.TypeFor[ActivationContext]()),
			"metadata":    ref(reflect.TypeFor[ActivationMetadata]()),
			"output_data": outputData(true),
			"waiting": nullableCopy(reflect.TypeFor[activation.Waiting](), "What the run waits for (a person's approval, or its caller's "+
				"client tool results); null when it waits for nothing. Answer it with POST /api/v1/activations/{activation_id}/waitpoints/{waitpoint_id}."),
		},
		"ActivationCompletedEvent": {"output_data": outputData(false)},
		"RunStep": {
			"input": anyJSONOrNull(registry, "an LLM step's: null; a tool step's: the call's arguments as the model wrote them; "+
				"a wait step's: the activation's waiting"),
			"output": anyJSONOrNull(registry, "an LLM step's: {text, tool_calls: [{id, name, arguments}], model, finish_reason}; "+
				"a tool step's: its result (capped at 256 KiB); a wait step's: its answer"),
			"usage": nullableCopy(reflect.TypeFor[llm.Usage](), "An LLM step's tokens; null for tool and wait steps"),
		},
		"WaitCall":     {"arguments": anyJSON(registry)},
		"WaitDecision": {"arguments": anyObject("edit: the arguments to run the call with instead")},
		"WaitResult":   {"output": anyJSON(registry)},
		"AgentDetail": {
			// The stored configuration has the manifest's shape, never the
			// webhook secret.
			"agent_config": ref(reflect.TypeFor[apps.AgentConfig]()),
			"input_schema": anyObject(agentInputSchema),
		},
		"SavedAgent":                {"agent_config": ref(reflect.TypeFor[apps.AgentConfig]()), "input_schema": anyObject(agentInputSchema)},
		"AgentSpec":                 {"input_schema": anyObject(agentInputSchema)},
		"AgentPatch":                {"input_schema": anyObject(agentInputSchema + "; null removes it")},
		"FunctionSpec":              {"input_schema": anyObject("A JSON Schema (an object) the input must match")},
		"Spec":                      {"parameters": anyObject("http and client tools: the JSON Schema (type object) of the arguments")},
		"Step":                      {"input": anyJSON(registry)},
		"Authenticator":             {"configuration": ref(reflect.TypeFor[AuthenticatorConfiguration]())},
		"OAuthAuthenticator":        {"configuration": ref(reflect.TypeFor[AuthenticatorConfiguration]())},
		"AuthenticatorCreate":       {"configuration": ref(reflect.TypeFor[AuthenticatorConfiguration]())},
		"AuthenticatorPatch":        {"configuration": ref(reflect.TypeFor[AuthenticatorConfiguration]())},
		"DataRecord":                {"data": anyObject("The record's fields, as the model's field types say")},
		"Function":                  {"input_schema": anyObject("A JSON Schema (an object) the input must match")},
		"FunctionCreate":            {"input_schema": anyObject("A JSON Schema (an object) the input must match")},
		"FunctionPatch":             {"input_schema": anyObject("A JSON Schema (an object) the input must match")},
		"ExecuteInput":              {"input": anyJSON(registry)},
		"RunInput":                  {"input": anyJSON(registry)},
		"Run":                       {"input": anyJSON(registry), "output": anyJSONOrNull(registry, "The last step's output once the run completed, else null")},
		"StepState":                 {"output": anyJSONOrNull(registry, "The step's output once it completed, else null")},
		"Execution":                 {"output": anyJSONOrNull(registry, "What run() returned; null when the execution failed"), "status": executionStatus},
		"PipelineRunCompletedEvent": {"output_data": anyJSONOrNull(registry, "The run's output: its last step's")},
		"WebhookAgentRequest": {
			"input_data": anyObject("The activation's input_data, as sent"),
			"context":    ref(reflect.TypeFor[ActivationContext]()),
		},
	}
}

// applyKnownShapes puts knownShapes into the registered schemas.
func applyKnownShapes(registry huma.Registry) {
	schemas := registry.Map()
	for name, props := range knownShapes(registry) {
		s := schemas[name]
		if s == nil {
			continue
		}
		for prop, shape := range props {
			old := s.Properties[prop]
			if old == nil {
				continue
			}
			if shape.Description == "" && shape.Ref == "" {
				shape.Description = old.Description
			}
			// A $ref keeps no words of its own: its target has them, and
			// 3.0 (the downgraded document) allows no siblings.
			s.Properties[prop] = shape
		}
		s.PrecomputeMessages()
	}
}

// LLMOutput is the output_data of an LLM agent's completed activation.
type LLMOutput struct {
	Response     string    `json:"response" doc:"The completion's text"`
	Model        string    `json:"model" doc:"The model that answered"`
	Provider     string    `json:"provider" doc:"The provider that answered"`
	Usage        llm.Usage `json:"usage"`
	FinishReason string    `json:"finish_reason" doc:"Why the model stopped, as the provider says it (e.g. stop, length)"`
}

// ActivationContext is an activation's context: the keys the platform
// reads, and anything else the caller put there.
type ActivationContext struct {
	ChatID    string `json:"chat_id,omitempty" doc:"Earlier completed turns of this chat with this agent are sent to the LLM as history"`
	SessionID string `json:"session_id,omitempty"`
	AppID     string `json:"app_id,omitempty" doc:"The agent's app (events carry it)"`
}

// TransformSchema keeps the context free-form.
func (ActivationContext) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	s.AdditionalProperties = &huma.Schema{}
	s.Description = "The activation's context: the keys the platform reads, and anything else the caller put there."
	return s
}

// ActivationMetadata is an activation's metadata: per-activation
// overrides, the webhook, and anything else the caller put there.
type ActivationMetadata struct {
	ProviderID   string   `json:"provider_id,omitempty" doc:"The LLM provider to use instead of the agent's"`
	Model        string   `json:"model,omitempty"`
	Temperature  *float64 `json:"temperature,omitempty"`
	MaxTokens    int      `json:"max_tokens,omitempty"`
	SystemPrompt string   `json:"system_prompt,omitempty"`
	WebhookURL   string   `json:"webhook_url,omitempty" doc:"Where the final event is POSTed, signed with the app's webhook secret"`
	Source       string   `json:"source,omitempty"`
}

// TransformSchema keeps the metadata free-form.
func (ActivationMetadata) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	s.AdditionalProperties = &huma.Schema{}
	s.Description = "The activation's metadata: per-activation overrides of the agent's LLM settings, the webhook, and anything else the caller put there."
	return s
}

// AuthenticatorConfiguration is the provider-specific configuration of an
// OAuth authenticator (spec: known configuration keys).
type AuthenticatorConfiguration struct {
	AccessType              string `json:"access_type,omitempty"`
	Prompt                  string `json:"prompt,omitempty"`
	IncludeGrantedScopes    bool   `json:"include_granted_scopes,omitempty"`
	ApprovalPrompt          string `json:"approval_prompt,omitempty"`
	UserScope               string `json:"user_scope,omitempty" doc:"Comma-separated"`
	Team                    string `json:"team,omitempty"`
	Tenant                  string `json:"tenant,omitempty"`
	ResponseMode            string `json:"response_mode,omitempty"`
	Resource                string `json:"resource,omitempty"`
	ResponseType            string `json:"response_type,omitempty"`
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	GrantType               string `json:"grant_type,omitempty"`
	PKCEEnabled             bool   `json:"pkce_enabled,omitempty"`
	ScopeSeparator          string `json:"scope_separator,omitempty"`
}

// TransformSchema keeps the configuration free-form: providers add keys.
func (AuthenticatorConfiguration) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	s.AdditionalProperties = &huma.Schema{}
	return s
}

// The WebSocket's messages, for the document only: events.Event is one Go
// type for every event; a client deserves one schema per type.

// EventFields are common to every activation event.
type EventFields struct {
	Seq          int64        `json:"seq" doc:"Per-user increasing number: reconnect with ?since=<the last seq received> to resume"`
	ActivationID string       `json:"activation_id"`
	AgentID      string       `json:"agent_id"`
	Context      EventContext `json:"context"`
	Timestamp    time.Time    `json:"timestamp"`
}

// EventContext is the activation's context, with app_id.
type EventContext struct {
	ChatID string `json:"chat_id,omitempty"`
	AppID  string `json:"app_id,omitempty" doc:"The agent's app; absent for system agents"`
}

// TransformSchema keeps the context free-form, as the caller wrote it.
func (EventContext) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	s.AdditionalProperties = &huma.Schema{}
	return s
}

// ActivationCreatedEvent announces a new activation.
type ActivationCreatedEvent struct {
	Type   string `json:"type" enum:"activation_created"`
	Status string `json:"status" enum:"queued"`
	EventFields
}

// ActivationStartedEvent announces that a worker started an activation.
type ActivationStartedEvent struct {
	Type   string `json:"type" enum:"activation_started"`
	Status string `json:"status" enum:"running"`
	EventFields
}

// ActivationCompletedEvent carries the result.
type ActivationCompletedEvent struct {
	Type       string          `json:"type" enum:"activation_completed"`
	Status     string          `json:"status" enum:"completed"`
	OutputData json.RawMessage `json:"output_data"`
	EventFields
}

// ActivationFailedEvent carries the reason.
type ActivationFailedEvent struct {
	Type   string `json:"type" enum:"activation_failed"`
	Status string `json:"status" enum:"failed"`
	Error  string `json:"error" doc:"Why it failed, e.g. Activation cancelled"`
	EventFields
}

// ActivationStepEvent announces an ended step of a run that calls tools.
type ActivationStepEvent struct {
	Type   string             `json:"type" enum:"activation_step"`
	Status string             `json:"status" enum:"running"`
	Step   activation.RunStep `json:"step" doc:"The step as GET /api/v1/activations/{activation_id}/steps lists it"`
	EventFields
}

// ActivationWaitingEvent announces that a run waits for an answer.
type ActivationWaitingEvent struct {
	Type    string             `json:"type" enum:"activation_waiting"`
	Status  string             `json:"status" enum:"running"`
	Waiting activation.Waiting `json:"waiting" doc:"What it waits for; answer with POST /api/v1/activations/{activation_id}/waitpoints/{waitpoint_id}"`
	EventFields
}

// PipelineRunFields are common to every pipeline run event.
type PipelineRunFields struct {
	Seq        int64        `json:"seq" doc:"Per-user increasing number, shared with activation events"`
	RunID      string       `json:"run_id" format:"uuid"`
	PipelineID string       `json:"pipeline_id" format:"uuid"`
	Context    EventContext `json:"context"`
	Timestamp  time.Time    `json:"timestamp"`
}

// PipelineRunStartedEvent announces that a run's first step started.
type PipelineRunStartedEvent struct {
	Type   string `json:"type" enum:"pipeline_run_started"`
	Status string `json:"status" enum:"running"`
	PipelineRunFields
}

// PipelineRunCompletedEvent carries a run's output.
type PipelineRunCompletedEvent struct {
	Type       string          `json:"type" enum:"pipeline_run_completed"`
	Status     string          `json:"status" enum:"completed"`
	OutputData json.RawMessage `json:"output_data"`
	PipelineRunFields
}

// PipelineRunFailedEvent carries the failed step's reason.
type PipelineRunFailedEvent struct {
	Type   string `json:"type" enum:"pipeline_run_failed"`
	Status string `json:"status" enum:"failed"`
	Error  string `json:"error" doc:"Step <id> failed: <the step's error>"`
	PipelineRunFields
}

// CredentialContext says which connection a credential event is about.
type CredentialContext struct {
	AppID           string `json:"app_id" format:"uuid"`
	Provider        string `json:"provider" doc:"The authenticator's name"`
	AuthenticatorID string `json:"authenticator_id" format:"uuid"`
	PreviousStatus  string `json:"previous_status" enum:",connected,refresh_failing,disconnected" doc:"\"\" for a new connection"`
}

// CredentialStatusChangedEvent announces a change of a connection's
// health, so an app can ask its user to reconnect before an agent fails.
type CredentialStatusChangedEvent struct {
	Type      string            `json:"type" enum:"credential_status_changed"`
	Seq       int64             `json:"seq" doc:"Per-user increasing number, shared with activation events"`
	Status    string            `json:"status" enum:"connected,refresh_failing,disconnected"`
	Error     string            `json:"error,omitempty" doc:"The connection's last_error, when it has one"`
	Context   CredentialContext `json:"context"`
	Timestamp time.Time         `json:"timestamp"`
}

// CredentialDisconnectedEvent follows the status change of a connection
// that ended disconnected (the provider refused its refresh token, or it
// was revoked).
type CredentialDisconnectedEvent struct {
	Type      string            `json:"type" enum:"credential_disconnected"`
	Seq       int64             `json:"seq" doc:"Per-user increasing number, shared with activation events"`
	Status    string            `json:"status" enum:"disconnected"`
	Error     string            `json:"error,omitempty" doc:"Why: e.g. the provider refused: invalid_grant, or revoked"`
	Context   CredentialContext `json:"context"`
	Timestamp time.Time         `json:"timestamp"`
}

// BudgetContext says which budget a budget_warning is about.
type BudgetContext struct {
	BudgetID string  `json:"budget_id" format:"uuid"`
	Scope    string  `json:"scope" enum:"user,app,key"`
	ScopeID  string  `json:"scope_id"`
	Period   string  `json:"period" enum:"day,month"`
	LimitUSD float64 `json:"limit_usd"`
	SpentUSD float64 `json:"spent_usd" doc:"Spent in the current period when the warning was made"`
	AppID    string  `json:"app_id,omitempty" doc:"An app's budget: the app (its subscribers hear of it)"`
}

// BudgetWarningEvent announces, once per period, that a budget is 80 %
// spent.
type BudgetWarningEvent struct {
	Type      string        `json:"type" enum:"budget_warning"`
	Seq       int64         `json:"seq" doc:"Per-user increasing number, shared with activation events"`
	Status    string        `json:"status" enum:"warning"`
	Context   BudgetContext `json:"context"`
	Timestamp time.Time     `json:"timestamp"`
}

// SubscribedMessage answers a subscribe message with the filter in effect.
type SubscribedMessage struct {
	Type         string `json:"type" enum:"subscribed"`
	AppID        string `json:"app_id,omitempty"`
	ChatID       string `json:"chat_id,omitempty"`
	ActivationID string `json:"activation_id,omitempty"`
}

// ErrorMessage answers a client message the server could not use; a
// refused filter carries the HTTP API's error body as well.
type ErrorMessage struct {
	Type       string `json:"type" enum:"error"`
	Error      string `json:"error"`
	Detail     string `json:"detail,omitempty" doc:"A refused subscribe: the HTTP API's error body for the same refusal (e.g. App not found)"`
	StatusCode int    `json:"status_code,omitempty" doc:"A refused subscribe: the status the HTTP API answers (404 for an app_id that is not the caller's)"`
	ErrorType  string `json:"error_type,omitempty" doc:"A refused subscribe: the HTTP API's error_type (NotFoundError)"`
}

// webSocketMessage registers the union of what the server sends on
// /api/v1/ws and returns a reference to it.
func webSocketMessage(registry huma.Registry) *huma.Schema {
	return union(registry, "WebSocketMessage",
		"One text message: an activation, pipeline run, credential or budget event, or the answer to a client's message; `type` tells which.",
		map[string]reflect.Type{
			"activation_created":        reflect.TypeFor[ActivationCreatedEvent](),
			"activation_started":        reflect.TypeFor[ActivationStartedEvent](),
			"activation_completed":      reflect.TypeFor[ActivationCompletedEvent](),
			"activation_failed":         reflect.TypeFor[ActivationFailedEvent](),
			"activation_step":           reflect.TypeFor[ActivationStepEvent](),
			"activation_waiting":        reflect.TypeFor[ActivationWaitingEvent](),
			"pipeline_run_started":      reflect.TypeFor[PipelineRunStartedEvent](),
			"pipeline_run_completed":    reflect.TypeFor[PipelineRunCompletedEvent](),
			"pipeline_run_failed":       reflect.TypeFor[PipelineRunFailedEvent](),
			"credential_status_changed": reflect.TypeFor[CredentialStatusChangedEvent](),
			"credential_disconnected":   reflect.TypeFor[CredentialDisconnectedEvent](),
			"budget_warning":            reflect.TypeFor[BudgetWarningEvent](),
			"subscribed":                reflect.TypeFor[SubscribedMessage](),
			"error":                     reflect.TypeFor[ErrorMessage](),
		})
}

// union registers, once, the component name: one of the types, told
// apart by their `type` (each one's component, by $ref), and returns a
// reference to it.
func union(registry huma.Registry, name, desc string, types map[string]reflect.Type) *huma.Schema {
	if registry.Map()[name] == nil {
		u := &huma.Schema{Description: desc, Discriminator: &huma.Discriminator{PropertyName: "type", Mapping: map[string]string{}}}
		for typ, t := range types {
			ref := registry.Schema(t, true, "")
			u.OneOf = append(u.OneOf, ref)
			u.Discriminator.Mapping[typ] = ref.Ref
		}
		slices.SortFunc(u.OneOf, func(a, b *huma.Schema) int { return strings.Compare(a.Ref, b.Ref) })
		u.PrecomputeMessages()
		registry.Map()[name] = u
	}
	return &huma.Schema{Ref: "#/components/schemas/" + name}
}

// TransformSchema: the app-scoped form takes input_data or its alternate
// name input, so neither alone is required (the activation says which is
// missing).
func (ActivateInAppBody) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	s.Required = slices.DeleteFunc(s.Required, func(name string) bool { return name == "input_data" })
	s.Description = "input_data (or its alternate name input) is required."
	return s
}

// NewLLMProviderBody is the create body: a patch's fields, name and
// provider_type required.
type NewLLMProviderBody llmProviderBody

// TransformSchema marks what a new provider needs.
func (NewLLMProviderBody) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	s.Required = append(s.Required, "name", "provider_type")
	return s
}
