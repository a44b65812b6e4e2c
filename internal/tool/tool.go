// Package tool is what an LLM agent may call while it runs (DESIGN §4
// "Agents that act: tools"): the tool part of agent_config (Spec, Config,
// ParseConfig, which checks shapes only) and one implementation per kind
// of tool, built for a run by Kit.Build:
//
//   - function: a function of the agent's app, run through FunctionRunner;
//   - agent: another agent of the same app, run as a child activation
//     through AgentRunner;
//   - http: one HTTP call through the egress-guarded client;
//   - client: answered by the caller, never called here;
//   - mcp: the tools of a remote MCP server of the app, listed once per
//     run through the egress guard (mcp.go).
//
// The loop that asks the model, calls the tools and records each step is
// the LLM runtime's (executor/runtimes); the checks that need the app (do
// the functions and agents exist, is the connection an authenticator of
// the app) are the apps domain's, at save.
package tool

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/store"
)

// The kinds of tool.
const (
	KindFunction = "function"
	KindAgent    = "agent"
	KindHTTP     = "http"
	KindClient   = "client"
	KindMCP      = "mcp"
)

// Kinds lists every kind, in the order errors name them.
var Kinds = []string{KindFunction, KindAgent, KindHTTP, KindClient, KindMCP}

// Spec is one entry of an LLM agent's agent_config.tools (DESIGN).
type Spec struct {
	Type        string `json:"type" enum:"function,agent,http,client,mcp" doc:"What the tool runs; mcp brings the tools of one of the app's MCP servers"`
	Name        string `json:"name,omitempty" pattern:"^[a-zA-Z0-9_-]{1,64}$" doc:"Unique in the agent; defaults to the function's or agent's name. An mcp tool takes none: its tools are named <server>_<tool>"`
	Description string `json:"description,omitempty" doc:"What the model reads of the tool; defaults to the function's or agent's description"`
	Approval    string `json:"approval,omitempty" enum:"always" doc:"always: every call waits for a person's decision"`
	// TimeoutSeconds is a wait's length (approval, client tools).
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" minimum:"1" maximum:"2592000" doc:"How long a call waits for a decision or a client's result: default 86400, at most 2592000 (30 days)"`
	Function       string `json:"function,omitempty" doc:"function: the function's name or id, in the agent's app"`
	Agent          string `json:"agent,omitempty" doc:"agent: another agent's name or id, in the agent's app"`
	Method         string `json:"method,omitempty" enum:"GET,POST,PUT,PATCH,DELETE" doc:"http: the method; GET and DELETE send the arguments as query parameters, the others as a JSON body"`
	URL            string `json:"url,omitempty" doc:"http: the URL called, through the egress guard"`
	// Parameters is the JSON Schema of the arguments of http and client
	// tools; nil is {"type":"object"}.
	Parameters json.RawMessage `json:"parameters,omitempty" doc:"http and client: the JSON Schema (type object) of the arguments"`
	Connection string          `json:"connection,omitempty" doc:"http: an authenticator of the app whose connected account's access token is sent as Bearer"`
	Server     string          `json:"server,omitempty" doc:"mcp: the name of one of the app's mcp_servers"`
	Tools      []string        `json:"tools,omitempty" doc:"mcp: the server's tools offered, all when absent"`
}

// Config is the tool part of an LLM agent_config, defaults applied.
type Config struct {
	Tools             []Spec `json:"tools,omitempty"`
	MaxSteps          int    `json:"max_steps,omitempty"`
	ParallelToolCalls *bool  `json:"parallel_tool_calls,omitempty"`
	OnStepLimit       string `json:"on_step_limit,omitempty"`
}

// Parallel says whether the calls of one answer run at once (at most 4,
// the loop's business) or one after the other.
func (c *Config) Parallel() bool { return c.ParallelToolCalls == nil || *c.ParallelToolCalls }

// Call is one call of a tool by a run.
type Call struct {
	ID        string          // tool_call_id
	Arguments json.RawMessage // a JSON object, already checked against the tool's schema by the loop
	// IdempotencyKey is "{activation_id}:{tool_call_id}", the same on
	// every try of the call, so that what it reaches can do it once.
	IdempotencyKey string
	Run            *executor.Run // the calling run: UserID, AppID, ID (activation id), AgentID
}

// Tool is one tool of a run, one implementation per kind.
type Tool interface {
	Spec() *Spec
	// Definition is the name, description and parameters schema the
	// model sees.
	Definition() llm.Tool
	// Waits reports whether a call makes the run wait first: approval
	// "always", or a client tool.
	Waits() bool
	// Call runs the call; the result is JSON. An error is that call's
	// error result (its text goes to the model), not the run's failure.
	// Client tools are never called (the caller answers them).
	Call(ctx context.Context, c Call) (json.RawMessage, error)
}

// FunctionRunner runs a function of an app for a tool call (function.Service).
type FunctionRunner interface {
	RunTool(ctx context.Context, userID, appID, ref, idempotencyKey string, apiKeyID int64, input json.RawMessage) (json.RawMessage, error)
}

// AgentRunner runs another agent as a child activation of parent and
// returns its output_data (the activation side).
type AgentRunner interface {
	RunChild(ctx context.Context, parent *executor.Run, agent *store.Agent, idempotencyKey string, input json.RawMessage) (json.RawMessage, error)
}

// TokenSource gives the access token of the user's connected account of an
// authenticator of the app (the credential service), refreshed as needed.
type TokenSource interface {
	AccessToken(ctx context.Context, userID, appID, authenticator string) (string, error)
}

// Kit builds the tools of a run.
type Kit struct {
	Store     *store.Store
	Functions FunctionRunner
	// Agents may be nil (tests): agent tools then fail their calls.
	Agents AgentRunner
	// HTTP is the egress-guarded client of http tools; the tool bounds
	// each call to HTTPTimeout and reads at most MaxHTTPBody.
	HTTP *http.Client
	// MCPHTTP is the egress-guarded client of MCP servers, its bodies
	// capped at MaxMCPBody; nil: mcp tools offer nothing and say why.
	MCPHTTP     *http.Client
	Credentials TokenSource
}

// base is what every kind shares: its spec (name and description
// resolved) and the schema of its arguments.
type base struct {
	spec   *Spec
	params json.RawMessage
}

func (b *base) Spec() *Spec { return b.spec }

func (b *base) Definition() llm.Tool {
	return llm.Tool{Name: b.spec.Name, Description: b.spec.Description, Parameters: b.params}
}

func (b *base) Waits() bool { return b.spec.Approval == ApprovalAlways }
