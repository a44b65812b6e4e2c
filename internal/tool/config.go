package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/inputschema"
)

// Bounds and defaults of the tool part of agent_config (DESIGN).
const (
	DefaultMaxSteps    = 10
	MaxMaxSteps        = 50
	DefaultWaitSeconds = 86_400
	MaxWaitSeconds     = 30 * 86_400
	OnStepLimitFail    = "fail"
	OnStepLimitAnswer  = "answer"
	ApprovalAlways     = "always"
)

// Methods are the methods an http tool may use.
var Methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

// NamePattern is what a tool's name must match: what every provider takes.
var NamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// objectSchema is the parameters of a tool that declares none.
var objectSchema = json.RawMessage(`{"type":"object"}`)

// ParseConfig reads the tool part of an LLM agent's agent_config and
// applies its defaults. It checks shapes only, without lookups: a bad one
// is a validation error naming agent_config.<field> (e.g.
// agent_config.tools[0].url). Whether referred functions, agents and
// connections exist is the app's to check (apps at save, Kit.Build at run).
func ParseConfig(agentConfig json.RawMessage) (*Config, error) {
	return ParseConfigAt("agent_config", agentConfig)
}

// ParseConfigAt is ParseConfig for an agent_config at path in its
// document (e.g. "agents[2].agent_config" in a manifest).
func ParseConfigAt(path string, agentConfig json.RawMessage) (*Config, error) {
	p := &parser{}
	cfg := p.config(path, agentConfig)
	if p.err != nil {
		return nil, p.err
	}
	return cfg, nil
}

// parser keeps the first problem met, with its path.
type parser struct{ err *apperr.Error }

func (p *parser) invalid(path, format string, args ...any) {
	if p.err == nil {
		p.err = invalid(path, format, args...)
	}
}

// invalid is the validation error of field, worded as the apps domain
// words its own.
func invalid(field, format string, args ...any) *apperr.Error {
	return apperr.Invalid(field, "Invalid value for field "+field+": "+fmt.Sprintf(format, args...))
}

func (p *parser) missing(path string) {
	if p.err == nil {
		p.err = apperr.Invalid(path, "Missing required field: "+path)
	}
}

// fields splits a JSON object into its members; not an object is a
// problem at path.
func (p *parser) fields(path string, raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		p.invalid(path, "expected an object")
		return nil
	}
	return m
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

func (p *parser) str(path string, raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		p.invalid(path, "expected a string")
	}
	return s
}

// integer is an integer in [lo, hi]; def when absent.
func (p *parser) integer(path string, raw json.RawMessage, def, lo, hi int) int {
	if isNull(raw) {
		return def
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) {
		p.invalid(path, "expected an integer")
		return def
	}
	if f < float64(lo) || f > float64(hi) {
		p.invalid(path, "must be between %d and %d", lo, hi)
		return def
	}
	return int(f)
}

func (p *parser) config(path string, raw json.RawMessage) *Config {
	cfg := &Config{MaxSteps: DefaultMaxSteps, OnStepLimit: OnStepLimitFail}
	if isNull(raw) {
		return cfg
	}
	m := p.fields(path, raw)
	at := func(key string) string { return path + "." + key }
	if !isNull(m["tools"]) {
		var items []json.RawMessage
		if json.Unmarshal(m["tools"], &items) != nil {
			p.invalid(at("tools"), "expected an array")
		}
		names := map[string]bool{}
		for i, item := range items {
			s := p.spec(at("tools")+"["+strconv.Itoa(i)+"]", item)
			if s.Name != "" && names[s.Name] {
				p.invalid(at("tools")+"["+strconv.Itoa(i)+"].name", "duplicate tool name %q", s.Name)
			}
			names[s.Name] = true
			cfg.Tools = append(cfg.Tools, s)
		}
	}
	cfg.MaxSteps = p.integer(at("max_steps"), m["max_steps"], DefaultMaxSteps, 1, MaxMaxSteps)
	if !isNull(m["parallel_tool_calls"]) {
		var b bool
		if json.Unmarshal(m["parallel_tool_calls"], &b) != nil {
			p.invalid(at("parallel_tool_calls"), "expected a boolean")
		}
		cfg.ParallelToolCalls = &b
	}
	if s := p.str(at("on_step_limit"), m["on_step_limit"]); s != "" {
		if s != OnStepLimitFail && s != OnStepLimitAnswer {
			p.invalid(at("on_step_limit"), "must be one of fail, answer")
		}
		cfg.OnStepLimit = s
	}
	return cfg
}

// spec checks one tool; its name stays "" when it takes its default (the
// name of what it refers to).
func (p *parser) spec(path string, raw json.RawMessage) Spec {
	m := p.fields(path, raw)
	at := func(key string) string { return path + "." + key }
	s := Spec{Type: p.str(at("type"), m["type"]), Name: p.str(at("name"), m["name"]),
		Description: p.str(at("description"), m["description"]), Approval: p.str(at("approval"), m["approval"])}
	switch {
	case s.Type == "":
		p.missing(at("type"))
	case !slices.Contains(Kinds, s.Type):
		p.invalid(at("type"), "must be one of %s", strings.Join(Kinds, ", "))
	}
	if s.Name != "" && !NamePattern.MatchString(s.Name) {
		p.invalid(at("name"), "must match %s", NamePattern)
	}
	if s.Approval != "" && s.Approval != ApprovalAlways {
		p.invalid(at("approval"), "must be always")
	}
	s.TimeoutSeconds = p.integer(at("timeout_seconds"), m["timeout_seconds"], DefaultWaitSeconds, 1, MaxWaitSeconds)
	switch s.Type {
	case KindFunction:
		if s.Function = p.str(at("function"), m["function"]); strings.TrimSpace(s.Function) == "" {
			p.missing(at("function"))
		}
	case KindAgent:
		if s.Agent = p.str(at("agent"), m["agent"]); strings.TrimSpace(s.Agent) == "" {
			p.missing(at("agent"))
		}
	case KindHTTP:
		p.needName(at("name"), s.Name)
		s.Method = p.str(at("method"), m["method"])
		switch {
		case s.Method == "":
			p.missing(at("method"))
		case !slices.Contains(Methods, s.Method):
			p.invalid(at("method"), "must be one of %s", strings.Join(Methods, ", "))
		}
		s.URL = p.str(at("url"), m["url"])
		if s.URL == "" {
			p.missing(at("url"))
		} else if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.invalid(at("url"), "must be an absolute http or https URL")
		}
		s.Parameters = p.parameters(at("parameters"), m["parameters"])
		s.Connection = p.str(at("connection"), m["connection"])
	case KindClient:
		p.needName(at("name"), s.Name)
		s.Parameters = p.parameters(at("parameters"), m["parameters"])
	case KindMCP:
		p.mcp(path, m, &s)
	}
	return s
}

// mcp checks an mcp tool: the server's name, and the names of the tools
// offered when it lists them. It takes no name of its own: its tools are
// named <server>_<tool> (see mcpToolName).
func (p *parser) mcp(path string, m map[string]json.RawMessage, s *Spec) {
	at := func(key string) string { return path + "." + key }
	if s.Name != "" {
		p.invalid(at("name"), "an mcp tool takes no name: its tools are named <server>_<tool>")
	}
	if s.Server = p.str(at("server"), m["server"]); strings.TrimSpace(s.Server) == "" {
		p.missing(at("server"))
	}
	if isNull(m["tools"]) {
		return
	}
	if json.Unmarshal(m["tools"], &s.Tools) != nil {
		p.invalid(at("tools"), "expected an array of tool names")
		return
	}
	if len(s.Tools) == 0 {
		p.invalid(at("tools"), "name at least one tool, or leave tools out to offer them all")
	}
	seen := map[string]bool{}
	for i, name := range s.Tools {
		switch {
		case strings.TrimSpace(name) == "":
			p.invalid(at("tools")+"["+strconv.Itoa(i)+"]", "expected a tool name")
		case seen[name]:
			p.invalid(at("tools")+"["+strconv.Itoa(i)+"]", "duplicate tool %q", name)
		}
		seen[name] = true
	}
}

// needName: http and client tools refer to nothing to take a name from.
func (p *parser) needName(path, name string) {
	if name == "" {
		p.missing(path)
	}
}

// parameters is an object schema (what every provider takes as a tool's
// parameters) that compiles within inputschema's bounds; nil when absent.
func (p *parser) parameters(path string, raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		p.invalid(path, "expected an object (a JSON Schema)")
		return nil
	}
	if m["type"] != "object" {
		p.invalid(path+".type", `must be "object": a tool's arguments are an object`)
		return nil
	}
	if err := inputschema.Check(raw); err != nil {
		p.invalid(path, "%s", err.Error())
		return nil
	}
	return bytes.TrimSpace(raw)
}

// Names returns the name of each tool: its own, else refName(i), the name
// of the function or agent it refers to. A default that is no valid name
// is a validation error asking for one, a name used twice too; errors
// name path.tools[i].name (path is the agent_config's). An mcp tool's
// name is "": the tools it brings are named when its server lists them.
func Names(path string, specs []Spec, refName func(i int) string) ([]string, error) {
	names := make([]string, len(specs))
	seen := map[string]bool{}
	for i, s := range specs {
		if s.Type == KindMCP {
			continue
		}
		field := path + ".tools[" + strconv.Itoa(i) + "].name"
		name := s.Name
		if name == "" {
			name = refName(i)
			if !NamePattern.MatchString(name) {
				return nil, invalid(field, "the %s's name %q is not a valid tool name (%s): give the tool a name", s.Type, name, NamePattern)
			}
		}
		if seen[name] {
			return nil, invalid(field, "duplicate tool name %q", name)
		}
		seen[name] = true
		names[i] = name
	}
	return names, nil
}

// errNotCalled is the result of calling a tool that is answered elsewhere.
var errNotCalled = errors.New("this tool is answered by the caller, not run by the platform")
