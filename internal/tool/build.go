package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/store"
)

// PromptSchema is the arguments of an LLM agent called as a tool.
var PromptSchema = json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"What to ask the agent"}},"required":["prompt"]}`)

// Set is the tools of one run, built by Kit.Build. The caller closes it
// when the run ends (or stops to wait): that ends the run's MCP sessions.
type Set struct {
	Tools []Tool
	// Logs are what building met that the model is not told: an MCP
	// server that could not be listed, a tool it lacks. They belong in
	// the run's log.
	Logs  []executor.LogLine
	conns []*mcpConn
}

// Close ends what the tools hold open (MCP sessions); a nil Set is fine.
func (s *Set) Close() {
	if s == nil {
		return
	}
	for _, c := range s.conns {
		c.close()
	}
	s.conns = nil
}

// Build makes the tools of run from cfg, in cfg's order: it resolves the
// functions, agents and MCP servers they refer to in run's app (by name,
// else by id) and takes their schemas, names and descriptions. What no
// longer resolves (a function deleted since the agent was saved) is a
// validation error naming agent_config.tools[i]: the run cannot start as
// configured. Each MCP server is listed once, here, for the whole run (an
// mcp tool brings its tools in its place); one that cannot be listed
// leaves the run going without them (see mcpTools).
func (k *Kit) Build(ctx context.Context, run *executor.Run, cfg *Config) (*Set, error) {
	set := &Set{}
	if cfg == nil || len(cfg.Tools) == 0 {
		return set, nil
	}
	var agents []store.Agent
	specs := slices.Clone(cfg.Tools) // the run's: defaults filled in stay here
	tools := make([]Tool, len(specs))
	refNames := make([]string, len(specs))
	servers := map[string]*store.MCPServer{}
	for i := range specs {
		s := &specs[i]
		field := "agent_config.tools[" + strconv.Itoa(i) + "]"
		switch s.Type {
		case KindFunction:
			f, err := k.function(ctx, run, s.Function)
			if err != nil {
				return nil, refError(field+".function", "function", s.Function, err)
			}
			refNames[i] = f.Name
			s.Description = cmp(s.Description, f.Description)
			tools[i] = &functionTool{base: base{s, schemaOr(f.InputSchema)}, functions: k.Functions, id: f.ID}
		case KindAgent:
			if agents == nil {
				var err error
				if agents, err = k.Store.AgentListByApp(ctx, run.AppID); err != nil {
					return nil, err
				}
			}
			a := findAgent(agents, s.Agent)
			if a == nil || a.UserID != run.UserID {
				return nil, invalid(field+".agent", "Unknown agent: %s", s.Agent)
			}
			if a.ID == run.AgentID {
				return nil, invalid(field+".agent", "an agent cannot call itself")
			}
			refNames[i] = a.Name
			s.Description = cmp(s.Description, a.Description)
			params := PromptSchema
			if a.AgentTypeID != "llm" {
				params = schemaOr(a.InputSchema)
			}
			tools[i] = &agentTool{base: base{s, params}, agents: k.Agents, agent: a}
		case KindHTTP:
			tools[i] = &httpTool{base: base{s, schemaOr(s.Parameters)}, kit: k}
		case KindClient:
			tools[i] = &clientTool{base{s, schemaOr(s.Parameters)}}
		case KindMCP:
			if servers[s.Server] == nil {
				ms, err := k.mcpServer(ctx, run, s.Server)
				if err != nil {
					return nil, refError(field+".server", "MCP server", s.Server, err)
				}
				servers[s.Server] = ms
			}
		default:
			return nil, invalid(field+".type", "%s tools are not available", s.Type)
		}
	}
	names, err := Names("agent_config", specs, func(i int) string { return refNames[i] })
	if err != nil {
		return nil, err
	}
	taken := map[string]bool{}
	for i := range specs {
		specs[i].Name = names[i]
		taken[names[i]] = true
	}
	conns := map[string]*mcpConn{}
	for i := range specs {
		if specs[i].Type != KindMCP {
			set.Tools = append(set.Tools, tools[i])
			continue
		}
		conn := conns[specs[i].Server]
		if conn == nil {
			conn = k.connect(ctx, run, servers[specs[i].Server])
			conns[specs[i].Server] = conn
			set.conns = append(set.conns, conn)
		}
		set.Tools = append(set.Tools, mcpTools(&specs[i], conn, taken, &set.Logs)...)
	}
	return set, nil
}

// function resolves ref in run's app: a name first, then an id.
func (k *Kit) function(ctx context.Context, run *executor.Run, ref string) (*store.Function, error) {
	f, err := k.Store.FunctionGetByName(ctx, run.AppID, ref)
	if errors.Is(err, store.ErrNotFound) && uuid.Validate(ref) == nil {
		f, err = k.Store.FunctionGet(ctx, ref)
	}
	if err == nil && (f.AppID != run.AppID || f.UserID != run.UserID) {
		err = store.ErrNotFound
	}
	return f, err
}

// findAgent is the agent called ref (by name, else id) among agents.
func findAgent(agents []store.Agent, ref string) *store.Agent {
	for i := range agents {
		if agents[i].Name == ref {
			return &agents[i]
		}
	}
	for i := range agents {
		if agents[i].ID == ref {
			return &agents[i]
		}
	}
	return nil
}

func refError(field, kind, ref string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return invalid(field, "Unknown %s: %s", kind, ref)
	}
	return err
}

func cmp(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// schemaOr is schema as a tool's parameters: an object schema, as every
// provider wants. A part that declares none ({} or nothing) takes any
// object; one that leaves out its type gets "type": "object" (its input
// is an object all the same).
func schemaOr(schema json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if isNull(schema) || json.Unmarshal(schema, &m) != nil || len(m) == 0 {
		return objectSchema
	}
	if _, ok := m["type"]; ok {
		return bytes.TrimSpace(schema)
	}
	m["type"] = json.RawMessage(`"object"`)
	out, err := json.Marshal(m)
	if err != nil {
		return objectSchema
	}
	return out
}

// arguments is a call's arguments, {} when the model sent none.
func arguments(c Call) json.RawMessage {
	if isNull(c.Arguments) {
		return json.RawMessage("{}")
	}
	return c.Arguments
}

// functionTool runs a function of the app.
type functionTool struct {
	base
	functions FunctionRunner
	id        string // resolved at Build: a rename during the run changes nothing
}

func (t *functionTool) Call(ctx context.Context, c Call) (json.RawMessage, error) {
	if t.functions == nil {
		return nil, errors.New("function tools are not available here")
	}
	return t.functions.RunTool(ctx, c.Run.UserID, c.Run.AppID, t.id, c.IdempotencyKey, c.Run.APIKeyID, arguments(c))
}

// agentTool runs another agent of the app as a child activation.
type agentTool struct {
	base
	agents AgentRunner
	agent  *store.Agent
}

func (t *agentTool) Call(ctx context.Context, c Call) (json.RawMessage, error) {
	if t.agents == nil {
		return nil, errors.New("agent tools are not available here")
	}
	return t.agents.RunChild(ctx, c.Run, t.agent, c.IdempotencyKey, arguments(c))
}

// clientTool is run by the caller: the run waits for its result.
type clientTool struct{ base }

func (t *clientTool) Waits() bool { return true }

func (t *clientTool) Call(context.Context, Call) (json.RawMessage, error) {
	return nil, errNotCalled
}
