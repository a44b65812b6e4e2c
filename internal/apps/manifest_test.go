package apps_test

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/oauth"
)

// base is a valid manifest that each case breaks in one place.
func base() map[string]any {
	return map[string]any{
		"name": "Demo", "slug": "demo", "version": "1.0.0", "description": "d",
		"models": []any{map[string]any{"slug": "note", "name": "Note", "fields": []any{
			map[string]any{"name": "title", "type": "string", "required": true},
			map[string]any{"name": "mood", "type": "enum", "values": []any{"ok", "bad"}},
		}}},
		"agents": []any{
			map[string]any{"name": "a", "agent_type_id": "llm", "agent_config": map[string]any{"model": "echo"}},
			map[string]any{"name": "b", "agent_type_id": "custom", "agent_config": map[string]any{"runtime": "javascript", "code": "async function run(){}"}},
		},
		"functions": []any{map[string]any{"name": "f", "code": "async function run(){}", "input_schema": map[string]any{"type": "object"}}},
		"pipelines": []any{map[string]any{"name": "p", "steps": []any{
			map[string]any{"id": "one", "type": "function", "ref": "f"},
			map[string]any{"id": "two", "type": "agent", "ref": "a", "input": map[string]any{"prompt": "{{steps.one.output.x}}"}},
		}}},
		"authenticators": []any{map[string]any{"name": "crm", "authenticator_type": "custom", "scopes": []any{"read"},
			"authorize_url": "https://crm.example.com/authorize", "token_url": "https://crm.example.com/token"}},
		"mcp_servers": []any{map[string]any{"name": "docs", "url": "https://mcp.example.com/mcp", "authenticator": "crm"}},
	}
}

// at walks to a nested map/array element: at(m, "agents", 1, "agent_config").
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v
}

func parse(t *testing.T, m any) (*apps.Manifest, error) {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return apps.ParseManifest(b, "application/json")
}

func TestParseManifestValid(t *testing.T) {
	t.Parallel()
	m, err := parse(t, base())
	require.NoError(t, err)
	require.Equal(t, "demo", m.Slug)
	require.Len(t, m.Agents, 2)
	require.Equal(t, apps.DefaultAgentTimeout, m.Agents[0].TimeoutSeconds, "timeout_seconds defaults to 300")
	require.Equal(t, "1.0.0", m.Agents[0].Version)
	require.Equal(t, apps.DefaultFunctionTimeout, m.Functions[0].TimeoutSeconds)
	require.Equal(t, []string{"ok", "bad"}, m.Models[0].Fields[1].Values)
	require.JSONEq(t, `{"prompt":"{{steps.one.output.x}}"}`, string(m.Pipelines[0].Steps[1].Input))
}

func TestParseManifestNamesTheFirstBadPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(m map[string]any)
		field  string
		detail string
	}{
		{"missing name", func(m map[string]any) { delete(m, "name") }, "name", "Missing required field: name"},
		{"bad slug", func(m map[string]any) { m["slug"] = "Bad_Slug" }, "slug", "must match"},
		{"slug too long", func(m map[string]any) { m["slug"] = strings.Repeat("a", 64) }, "slug", "must match"},
		{"version not semver", func(m map[string]any) { m["version"] = "1.0" }, "version", "semantic version"},
		{"version wrong type", func(m map[string]any) { m["version"] = 1 }, "version", "expected a string"},
		{"min platform too new", func(m map[string]any) { m["minPlatformVersion"] = "99.0.0" }, "minPlatformVersion", "needs platform version 99.0.0"},
		{"min platform not semver", func(m map[string]any) { m["minPlatformVersion"] = "latest" }, "minPlatformVersion", "semantic version"},
		{"models not an array", func(m map[string]any) { m["models"] = "x" }, "models", "expected an array"},
		{"reserved model slug", func(m map[string]any) { at(m, "models", 0).(map[string]any)["slug"] = "models" }, "models[0].slug", "reserved"},
		{"bad field type", func(m map[string]any) { at(m, "models", 0, "fields", 1).(map[string]any)["type"] = "date" }, "models[0].fields[1].type", "must be one of"},
		{"enum without values", func(m map[string]any) { delete(at(m, "models", 0, "fields", 1).(map[string]any), "values") }, "models[0].fields[1].values", "Missing required field"},
		{"values on a string", func(m map[string]any) { at(m, "models", 0, "fields", 0).(map[string]any)["values"] = []any{"x"} }, "models[0].fields[0].values", "only an enum"},
		{"duplicate field", func(m map[string]any) { at(m, "models", 0, "fields", 1).(map[string]any)["name"] = "title" }, "models[0].fields[1].name", "duplicate"},
		{"llm without model", func(m map[string]any) { delete(at(m, "agents", 0, "agent_config").(map[string]any), "model") }, "agents[0].agent_config.model", "Missing required field: agents[0].agent_config.model"},
		{"model of the second agent", func(m map[string]any) {
			at(m, "agents", 1).(map[string]any)["agent_type_id"] = "llm"
		}, "agents[1].agent_config.model", "Missing required field"},
		{"temperature too high", func(m map[string]any) { at(m, "agents", 0, "agent_config").(map[string]any)["temperature"] = 2.5 }, "agents[0].agent_config.temperature", "between 0 and 2"},
		{"temperature a string", func(m map[string]any) { at(m, "agents", 0, "agent_config").(map[string]any)["temperature"] = "hot" }, "agents[0].agent_config.temperature", "expected a number"},
		{"max_tokens zero", func(m map[string]any) { at(m, "agents", 0, "agent_config").(map[string]any)["max_tokens"] = 0 }, "agents[0].agent_config.max_tokens", "between 1"},
		{"unknown agent type", func(m map[string]any) { at(m, "agents", 0).(map[string]any)["agent_type_id"] = "robot" }, "agents[0].agent_type_id", "llm, custom"},
		{"duplicate agent", func(m map[string]any) { at(m, "agents", 1).(map[string]any)["name"] = "a" }, "agents[1].name", "duplicate agent name"},
		{"timeout too long", func(m map[string]any) { at(m, "agents", 0).(map[string]any)["timeout_seconds"] = 3601 }, "agents[0].timeout_seconds", "between 1 and 3600"},
		{"timeout fractional", func(m map[string]any) { at(m, "agents", 0).(map[string]any)["timeout_seconds"] = 1.5 }, "agents[0].timeout_seconds", "expected an integer"},
		{"no agent_config", func(m map[string]any) { delete(at(m, "agents", 0).(map[string]any), "agent_config") }, "agents[0].agent_config", "Missing required field"},
		{"unknown runtime", func(m map[string]any) { at(m, "agents", 1, "agent_config").(map[string]any)["runtime"] = "python" }, "agents[1].agent_config.runtime", "javascript, webhook"},
		{"javascript without code", func(m map[string]any) { delete(at(m, "agents", 1, "agent_config").(map[string]any), "code") }, "agents[1].agent_config.code", "Missing required field"},
		{"webhook relative url", func(m map[string]any) {
			at(m, "agents", 1).(map[string]any)["agent_config"] = map[string]any{"runtime": "webhook", "url": "/hook"}
		}, "agents[1].agent_config.url", "absolute http or https URL"},
		{"function without code", func(m map[string]any) { delete(at(m, "functions", 0).(map[string]any), "code") }, "functions[0].code", "Missing required field"},
		{"input_schema not an object", func(m map[string]any) { at(m, "functions", 0).(map[string]any)["input_schema"] = []any{} }, "functions[0].input_schema", "expected an object"},
		{"input_schema bad type", func(m map[string]any) {
			at(m, "functions", 0).(map[string]any)["input_schema"] = map[string]any{"type": "thing"}
		}, "functions[0].input_schema.type", "must be one of"},
		{"input_schema bad property", func(m map[string]any) {
			at(m, "functions", 0).(map[string]any)["input_schema"] = map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": 3}}}
		}, "functions[0].input_schema.properties.x.type", "expected a string or an array"},
		{"step ref unknown", func(m map[string]any) { at(m, "pipelines", 0, "steps", 1).(map[string]any)["ref"] = "ghost" }, "pipelines[0].steps[1].ref", `no agent named "ghost"`},
		{"step ref wrong kind", func(m map[string]any) { at(m, "pipelines", 0, "steps", 0).(map[string]any)["ref"] = "a" }, "pipelines[0].steps[0].ref", "no function named"},
		{"duplicate step id", func(m map[string]any) { at(m, "pipelines", 0, "steps", 1).(map[string]any)["id"] = "one" }, "pipelines[0].steps[1].id", "duplicate step id"},
		{"bad step type", func(m map[string]any) { at(m, "pipelines", 0, "steps", 1).(map[string]any)["type"] = "loop" }, "pipelines[0].steps[1].type", "agent, function"},
		{"no steps", func(m map[string]any) { at(m, "pipelines", 0).(map[string]any)["steps"] = []any{} }, "pipelines[0].steps", "at least one step"},
		{"client secret", func(m map[string]any) { at(m, "authenticators", 0).(map[string]any)["client_secret"] = "s3cret" }, "authenticators[0].client_secret", "no secrets"},
		{"custom without token_url", func(m map[string]any) { delete(at(m, "authenticators", 0).(map[string]any), "token_url") }, "authenticators[0].token_url", "Missing required field"},
		{"no scopes", func(m map[string]any) { at(m, "authenticators", 0).(map[string]any)["scopes"] = []any{} }, "authenticators[0].scopes", "between 1 and 50"},
		{"scope with space", func(m map[string]any) { at(m, "authenticators", 0).(map[string]any)["scopes"] = []any{"a", "b c"} }, "authenticators[0].scopes[1]", "no whitespace"},
		{"unknown authenticator type", func(m map[string]any) { at(m, "authenticators", 0).(map[string]any)["authenticator_type"] = "github" }, "authenticators[0].authenticator_type", "custom, google"},
		{"google client id", func(m map[string]any) {
			a := at(m, "authenticators", 0).(map[string]any)
			a["authenticator_type"], a["client_id"] = "google", "1234-abc"
		}, "authenticators[0].client_id", ".apps.googleusercontent.com"},
		{"microsoft client id", func(m map[string]any) {
			a := at(m, "authenticators", 0).(map[string]any)
			a["authenticator_type"], a["client_id"] = "microsoft", "my-app"
		}, "authenticators[0].client_id", "GUID"},
		{"51 scopes", func(m map[string]any) {
			scopes := make([]any, 51)
			for i := range scopes {
				scopes[i] = "s"
			}
			at(m, "authenticators", 0).(map[string]any)["scopes"] = scopes
		}, "authenticators[0].scopes", "between 1 and 50"},
		{"configuration of a wrong type", func(m map[string]any) {
			at(m, "authenticators", 0).(map[string]any)["configuration"] = map[string]any{"prompt": "consent", "pkce_enabled": "yes"}
		}, "authenticators[0].configuration.pkce_enabled", "expected a boolean"},
		{"configuration not an object", func(m map[string]any) { at(m, "authenticators", 0).(map[string]any)["configuration"] = "x" }, "authenticators[0].configuration", "expected an object"},
		{"authenticator name too long", func(m map[string]any) { at(m, "authenticators", 0).(map[string]any)["name"] = strings.Repeat("x", 101) }, "authenticators[0].name", "at most 100"},
		{"first of two problems", func(m map[string]any) {
			m["slug"] = "BAD"
			delete(at(m, "agents", 0, "agent_config").(map[string]any), "model")
		}, "slug", "must match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := base()
			tc.change(m)
			_, err := parse(t, m)
			ae, ok := apperr.As(err)
			require.True(t, ok, "want a validation error, got %v", err)
			require.Equal(t, apperr.Validation, ae.Kind)
			require.Equal(t, tc.field, ae.Field)
			require.Contains(t, ae.Detail, tc.detail)
			require.Contains(t, ae.Detail, tc.field, "the detail names the field")
		})
	}
}

func TestParseManifestYAML(t *testing.T) {
	t.Parallel()
	y := `
name: Demo
slug: demo
version: 2.0.0
agents:
  - name: helper
    agent_type_id: llm
    timeout_seconds: 20
    agent_config:
      model: echo
      temperature: 0.5
`
	m, err := apps.ParseManifest([]byte(y), "application/yaml; charset=utf-8")
	require.NoError(t, err)
	require.Equal(t, "2.0.0", m.Version)
	require.Equal(t, 20, m.Agents[0].TimeoutSeconds)
	require.Equal(t, 0.5, *m.Agents[0].AgentConfig.Temperature)

	_, err = apps.ParseManifest([]byte("name: [unclosed"), "application/yaml")
	require.ErrorContains(t, err, "Malformed YAML body")
	// The same text as JSON is malformed JSON.
	_, err = apps.ParseManifest([]byte(y), "application/json")
	require.ErrorContains(t, err, "Malformed JSON body")
	_, err = apps.ParseManifest([]byte(`[1, 2]`), "application/json")
	require.ErrorContains(t, err, "Invalid manifest: expected an object")
}

// TestDecodeAuthenticator: an authenticator on its own (the API's body)
// has the manifest's rules, paths from its root, and leaves the secret to
// its caller; a known type may leave its endpoints out.
func TestDecodeAuthenticator(t *testing.T) {
	t.Parallel()
	a, err := apps.DecodeAuthenticator(map[string]any{"name": "g", "authenticator_type": "google", "client_secret": "s",
		"client_id": "1-a.apps.googleusercontent.com", "scopes": []any{"openid"}, "configuration": map[string]any{"pkce_enabled": true, "x": 1}})
	require.NoError(t, err)
	require.Equal(t, "google", a.AuthenticatorType)
	require.Empty(t, a.TokenURL)
	require.JSONEq(t, `{"pkce_enabled": true, "x": 1}`, string(a.Configuration), "unknown keys are kept")

	_, err = apps.DecodeAuthenticator(map[string]any{"name": "s", "authenticator_type": "slack", "client_id": "abc", "scopes": []any{"chat:write"}})
	ae, ok := apperr.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, "client_id", ae.Field)
	require.Equal(t, "Invalid value for field client_id: a Slack client id is two numbers joined by a dot, e.g. 1234567890.0987654321", ae.Detail)
}

// TestAuthenticatorTypesAreTheDocumented: the manifest's documented enum
// is the oauth package's list of presets.
func TestAuthenticatorTypesAreTheDocumented(t *testing.T) {
	t.Parallel()
	f, _ := reflect.TypeFor[apps.Authenticator]().FieldByName("AuthenticatorType")
	require.ElementsMatch(t, oauth.Types(), strings.Split(f.Tag.Get("enum"), ","))
}

func TestExampleManifestIsValid(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../examples/support-desk.json")
	require.NoError(t, err)
	m, err := apps.ParseManifest(b, "application/json")
	require.NoError(t, err)
	require.Equal(t, "support-desk", m.Slug)
	require.Equal(t, "triage", m.Agents[0].Name)
	require.Equal(t, "echo", m.Agents[0].AgentConfig.ProviderID)
}

func FuzzParseManifest(f *testing.F) {
	example, err := os.ReadFile("../../examples/support-desk.json")
	require.NoError(f, err)
	f.Add(example, false)
	good, _ := json.Marshal(base())
	f.Add(good, false)
	f.Add([]byte("name: x\nslug: x\nversion: 1.0.0\nagents: [{name: a}]"), true)
	f.Add([]byte(`{"agents":[{"agent_config":{"temperature":1e400}}]}`), false)
	f.Add([]byte("&a [*a]"), true)
	f.Fuzz(func(t *testing.T, body []byte, yaml bool) {
		ct := "application/json"
		if yaml {
			ct = "application/yaml"
		}
		m, err := apps.ParseManifest(body, ct)
		if err != nil {
			ae, ok := apperr.As(err)
			require.True(t, ok, "every failure is a public validation error: %v", err)
			require.Equal(t, apperr.Validation, ae.Kind)
			require.NotEmpty(t, ae.Field)
			return
		}
		// A manifest that parses re-encodes to one that parses the same.
		again, err := json.Marshal(m)
		require.NoError(t, err)
		m2, err := apps.ParseManifest(again, "application/json")
		require.NoError(t, err, "%s", again)
		require.Equal(t, m, m2)
	})
}

// TestAgentInputSchema: a custom agent may declare a top-level
// input_schema, checked with a function's rules and bounds (400 naming
// agents[i].input_schema…); an LLM agent may not (its input is {prompt,
// chat_id?}). An agent without one has none (nil), not {}.
func TestAgentInputSchema(t *testing.T) {
	t.Parallel()
	schema := map[string]any{"type": "object", "properties": map[string]any{"subject": map[string]any{"type": "string"}},
		"required": []any{"subject"}}
	m := base()
	at(m, "agents", 1).(map[string]any)["input_schema"] = schema
	got, err := parse(t, m)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"object","properties":{"subject":{"type":"string"}},"required":["subject"]}`, string(got.Agents[1].InputSchema))
	require.Nil(t, got.Agents[0].InputSchema)
	out, err := json.Marshal(got.Agents[0])
	require.NoError(t, err)
	require.NotContains(t, string(out), "input_schema", "an agent without one writes none")

	deep := map[string]any{"type": "object"}
	for range 40 {
		deep = map[string]any{"type": "object", "properties": map[string]any{"x": deep}}
	}
	for _, tc := range []struct {
		name   string
		agent  int
		schema any
		field  string
		detail string
	}{
		{"on an LLM agent", 0, schema, "agents[0].input_schema", "LLM agent"},
		{"not an object", 1, []any{}, "agents[1].input_schema", "expected an object"},
		{"bad type", 1, map[string]any{"type": "thing"}, "agents[1].input_schema.type", "must be one of"},
		{"too deep", 1, deep, "agents[1].input_schema", "levels deep"},
		{"does not compile", 1, map[string]any{"minLength": "x"}, "agents[1].input_schema", "input_schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := base()
			at(m, "agents", tc.agent).(map[string]any)["input_schema"] = tc.schema
			_, err := parse(t, m)
			ae, ok := apperr.As(err)
			require.True(t, ok, "want a validation error, got %v", err)
			require.Equal(t, tc.field, ae.Field)
			require.Contains(t, ae.Detail, tc.detail)
			require.Contains(t, ae.Detail, tc.field, "the detail names the field")
		})
	}
}

// withTools is base() whose LLM agent "a" has tools of every kind.
func withTools() map[string]any {
	m := base()
	cfg := at(m, "agents", 0, "agent_config").(map[string]any)
	cfg["tools"] = []any{
		map[string]any{"type": "function", "function": "f"},
		map[string]any{"type": "agent", "agent": "b", "name": "ask_b", "approval": "always", "timeout_seconds": 600},
		map[string]any{"type": "http", "name": "weather", "method": "GET", "url": "https://api.example.com/w", "connection": "crm",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}},
		map[string]any{"type": "client", "name": "pick"},
		map[string]any{"type": "mcp", "server": "docs", "tools": []any{"search"}},
	}
	cfg["max_steps"], cfg["parallel_tool_calls"], cfg["on_step_limit"] = 5, false, "answer"
	return m
}

// TestAgentTools: an LLM agent's tools name the manifest's own functions,
// agents and authenticators; the tool part is kept as written, and every
// problem is a 400 naming agents[i].agent_config.tools[j].<field>.
func TestAgentTools(t *testing.T) {
	t.Parallel()
	got, err := parse(t, withTools())
	require.NoError(t, err)
	cfg := got.Agents[0].AgentConfig
	require.Len(t, cfg.Tools, 5)
	require.Equal(t, "f", cfg.Tools[0].Function)
	require.Equal(t, "docs", cfg.Tools[4].Server)
	require.Zero(t, cfg.Tools[0].TimeoutSeconds, "a default is left unsaid")
	require.Equal(t, 600, cfg.Tools[1].TimeoutSeconds)
	require.Equal(t, 5, cfg.MaxSteps)
	require.False(t, *cfg.ParallelToolCalls)
	require.Equal(t, "answer", cfg.OnStepLimit)

	tool := func(m map[string]any, i int) map[string]any {
		return at(m, "agents", 0, "agent_config", "tools", i).(map[string]any)
	}
	for _, tc := range []struct {
		name   string
		change func(m map[string]any)
		field  string
		detail string
	}{
		{"unknown function", func(m map[string]any) { tool(m, 0)["function"] = "x" }, "agents[0].agent_config.tools[0].function", "Unknown function: x"},
		{"unknown agent", func(m map[string]any) { tool(m, 1)["agent"] = "ghost" }, "agents[0].agent_config.tools[1].agent", "Unknown agent: ghost"},
		{"itself", func(m map[string]any) { tool(m, 1)["agent"] = "a" }, "agents[0].agent_config.tools[1].agent", "cannot call itself"},
		{"bad name", func(m map[string]any) { tool(m, 1)["name"] = "ask b" }, "agents[0].agent_config.tools[1].name", "must match"},
		{"duplicate name", func(m map[string]any) { tool(m, 3)["name"] = "weather" }, "agents[0].agent_config.tools[3].name", "duplicate tool name"},
		{"duplicate default name", func(m map[string]any) { tool(m, 3)["name"] = "f" }, "agents[0].agent_config.tools[3].name", "duplicate tool name"},
		{"default name invalid", func(m map[string]any) {
			at(m, "functions", 0).(map[string]any)["name"] = "look up"
			tool(m, 0)["function"] = "look up"
			at(m, "pipelines", 0, "steps", 0).(map[string]any)["ref"] = "look up"
		}, "agents[0].agent_config.tools[0].name", "give the tool a name"},
		{"unknown type", func(m map[string]any) { tool(m, 0)["type"] = "shell" }, "agents[0].agent_config.tools[0].type", "must be one of"},
		{"mcp without server", func(m map[string]any) { delete(tool(m, 4), "server") }, "agents[0].agent_config.tools[4].server", "Missing required field"},
		{"unknown mcp server", func(m map[string]any) { tool(m, 4)["server"] = "wiki" }, "agents[0].agent_config.tools[4].server", "Unknown MCP server: wiki"},
		{"mcp server name", func(m map[string]any) { at(m, "mcp_servers", 0).(map[string]any)["name"] = "a b" }, "mcp_servers[0].name", "must match"},
		{"mcp server without url", func(m map[string]any) { delete(at(m, "mcp_servers", 0).(map[string]any), "url") }, "mcp_servers[0].url", "Missing required field"},
		{"mcp server ftp url", func(m map[string]any) { at(m, "mcp_servers", 0).(map[string]any)["url"] = "ftp://x.example/" }, "mcp_servers[0].url", "http or https"},
		{"mcp server unknown authenticator", func(m map[string]any) { at(m, "mcp_servers", 0).(map[string]any)["authenticator"] = "mail" },
			"mcp_servers[0].authenticator", "not an authenticator of the app"},
		{"mcp server twice", func(m map[string]any) {
			m["mcp_servers"] = append(m["mcp_servers"].([]any), map[string]any{"name": "docs", "url": "https://x.example"})
		},
			"mcp_servers[1].name", "duplicate MCP server name"},
		{"http without url", func(m map[string]any) { delete(tool(m, 2), "url") }, "agents[0].agent_config.tools[2].url", "Missing required field"},
		{"http bad method", func(m map[string]any) { tool(m, 2)["method"] = "get" }, "agents[0].agent_config.tools[2].method", "must be one of"},
		{"unknown connection", func(m map[string]any) { tool(m, 2)["connection"] = "mail" }, "agents[0].agent_config.tools[2].connection", "not an authenticator of the app"},
		{"parameters not an object schema", func(m map[string]any) { tool(m, 2)["parameters"] = map[string]any{"type": "array"} },
			"agents[0].agent_config.tools[2].parameters.type", `must be "object"`},
		{"tools on a custom agent", func(m map[string]any) {
			at(m, "agents", 1, "agent_config").(map[string]any)["tools"] = []any{map[string]any{"type": "function", "function": "f"}}
		}, "agents[1].agent_config.tools", "only an LLM agent"},
		{"max_steps out of range", func(m map[string]any) { at(m, "agents", 0, "agent_config").(map[string]any)["max_steps"] = 51 },
			"agents[0].agent_config.max_steps", "between 1 and 50"},
		{"bad on_step_limit", func(m map[string]any) { at(m, "agents", 0, "agent_config").(map[string]any)["on_step_limit"] = "stop" },
			"agents[0].agent_config.on_step_limit", "fail, answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := withTools()
			tc.change(m)
			_, err := parse(t, m)
			ae, ok := apperr.As(err)
			require.True(t, ok, "want a validation error, got %v", err)
			require.Equal(t, tc.field, ae.Field)
			require.Contains(t, ae.Detail, tc.detail)
			require.Contains(t, ae.Detail, tc.field, "the detail names the field")
		})
	}
}
