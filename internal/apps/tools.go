package apps

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/tool"
)

// decodeTools reads the tool part of LLM agent_config c into cfg: its
// shapes are tool.ParseConfig's. What it checks against the app (the parts
// the tools name) is checkToolRefs's. cfg keeps the part as written, no
// defaults filled in, so that an export gives back what was imported.
func decodeTools(d *decoder, c *object, cfg *AgentConfig) {
	if c == nil || d.err != nil {
		return
	}
	raw, err := json.Marshal(c.m)
	if err != nil {
		d.invalid(c.path, "not representable as JSON")
		return
	}
	parsed, err := tool.ParseConfigAt(c.path, raw)
	if err != nil {
		d.fail(err)
		return
	}
	items := c.array("tools", false)
	for i, s := range parsed.Tools {
		if item, _ := items[i].(map[string]any); item["timeout_seconds"] == nil {
			s.TimeoutSeconds = 0 // the default, left unsaid
		}
		cfg.Tools = append(cfg.Tools, s)
	}
	if c.get("max_steps") != nil {
		cfg.MaxSteps = parsed.MaxSteps
	}
	cfg.ParallelToolCalls = parsed.ParallelToolCalls
	if s, _ := c.get("on_step_limit").(string); s != "" {
		cfg.OnStepLimit = s
	}
}

// fail keeps err as the decoder's problem when it is the first.
func (d *decoder) fail(err error) {
	if ae, ok := apperr.As(err); ok && d.err == nil {
		d.err = ae
	} else if d.err == nil {
		d.err = apperr.Invalid("body", err.Error())
	}
}

// toolParts are what an agent's tools may name in their app: functions and
// agents, each ref (a name, or over the API an id too) to the part's name,
// and the names of the authenticators (connections) and MCP servers.
type toolParts struct {
	functions, agents          map[string]string
	authenticators, mcpServers map[string]bool
}

// checkToolRefs checks that the tools of agent a (its agent_config at
// path) name parts of the app, not a itself (self are the refs that mean
// it), and that their names, defaults included, are valid and unique.
func checkToolRefs(d *decoder, path string, a *AgentSpec, parts *toolParts, self ...string) {
	specs := a.AgentConfig.Tools
	if d.err != nil || len(specs) == 0 {
		return
	}
	refNames := make([]string, len(specs))
	for i, s := range specs {
		at := index(path+".tools", i)
		switch s.Type {
		case tool.KindFunction:
			name, ok := parts.functions[s.Function]
			if !ok {
				d.invalid(at+".function", "Unknown function: %s", s.Function)
			}
			refNames[i] = name
		case tool.KindAgent:
			if slices.Contains(self, s.Agent) {
				d.invalid(at+".agent", "an agent cannot call itself")
			}
			name, ok := parts.agents[s.Agent]
			if !ok {
				d.invalid(at+".agent", "Unknown agent: %s", s.Agent)
			}
			refNames[i] = name
		case tool.KindHTTP:
			if s.Connection != "" && !parts.authenticators[s.Connection] {
				d.invalid(at+".connection", "Unknown connection: %s is not an authenticator of the app", s.Connection)
			}
		case tool.KindMCP:
			if !parts.mcpServers[s.Server] {
				d.invalid(at+".server", "Unknown MCP server: %s is not one of the app's mcp_servers", s.Server)
			}
		}
	}
	if d.err != nil {
		return
	}
	if _, err := tool.Names(path, specs, func(i int) string { return refNames[i] }); err != nil {
		d.fail(err)
	}
}

// checkAgentTools checks the tools of agent spec, saved over the API in
// app, against the app's parts; selfID is the agent's id and oldName its
// stored name ("" for a new agent).
func (s *Service) checkAgentTools(ctx context.Context, app *store.App, spec *AgentSpec, selfID, oldName string) error {
	if len(spec.AgentConfig.Tools) == 0 {
		return nil
	}
	parts, err := s.appToolParts(ctx, app.ID, selfID)
	if err != nil {
		return err
	}
	d := &decoder{}
	self := []string{spec.Name}
	if selfID != "" {
		self = append(self, selfID, oldName)
	}
	checkToolRefs(d, "agent_config", spec, parts, self...)
	if d.err != nil {
		return d.err
	}
	return nil
}

// appToolParts are the parts of app a tool may name, by name and by id;
// the agent selfID is left out (it is no tool of its own).
func (s *Service) appToolParts(ctx context.Context, appID, selfID string) (*toolParts, error) {
	functions, err := s.store.FunctionListByApp(ctx, appID)
	if err != nil {
		return nil, err
	}
	agents, err := s.store.AgentListByApp(ctx, appID)
	if err != nil {
		return nil, err
	}
	auths, err := s.store.AuthenticatorListByApp(ctx, appID)
	if err != nil {
		return nil, err
	}
	servers, err := s.store.MCPServerListByApp(ctx, appID)
	if err != nil {
		return nil, err
	}
	p := &toolParts{functions: map[string]string{}, agents: map[string]string{}, authenticators: map[string]bool{}, mcpServers: map[string]bool{}}
	for _, ms := range servers {
		p.mcpServers[ms.Name] = true
	}
	for _, f := range functions {
		p.functions[f.ID], p.functions[f.Name] = f.Name, f.Name
	}
	for _, a := range agents {
		if a.ID != selfID {
			p.agents[a.ID], p.agents[a.Name] = a.Name, a.Name
		}
	}
	for _, a := range auths {
		p.authenticators[a.Name] = true
	}
	return p, nil
}

// checkToolProvider refuses tools on an agent whose provider cannot call
// them (400 naming agent_config.tools; prefix is the agent's path). A
// provider the platform cannot tell yet (the user's default, resolved at
// run time, or an unknown id, refused by the run) passes.
func (s *Service) checkToolProvider(ctx context.Context, prefix, userID string, a *AgentSpec) error {
	id := a.AgentConfig.ProviderID
	if len(a.AgentConfig.Tools) == 0 || id == "" {
		return nil
	}
	typ := ""
	switch {
	case slices.Contains(llm.Types, id):
		typ = id // the system providers are named by their type
	case uuid.Validate(id) == nil:
		p, err := s.store.LLMProviderGet(ctx, id)
		if errors.Is(err, store.ErrNotFound) || (err == nil && p.UserID != userID) {
			return nil
		}
		if err != nil {
			return err
		}
		typ = p.ProviderType
	default:
		return nil
	}
	if llm.CanCallTools(typ) {
		return nil
	}
	field := prefix + "agent_config.tools"
	return apperr.Invalid(field, "Invalid value for field "+field+": provider "+id+" ("+typ+") cannot call tools")
}

// toolNamesByID makes the tools of agents that name a function or agent by
// id (saved over the API) name it by name, as a manifest's do: the ids are
// this app's, an installed copy's parts get others.
func toolNamesByID(specs []AgentSpec, names map[string]map[string]string) {
	for _, a := range specs {
		for i, t := range a.AgentConfig.Tools {
			switch t.Type {
			case tool.KindFunction:
				if name, ok := names["function"][t.Function]; ok {
					a.AgentConfig.Tools[i].Function = name
				}
			case tool.KindAgent:
				if name, ok := names["agent"][t.Agent]; ok {
					a.AgentConfig.Tools[i].Agent = name
				}
			}
		}
	}
}
