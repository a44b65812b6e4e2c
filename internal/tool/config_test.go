package tool_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/tool"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func requireInvalid(t *testing.T, err error, field, detail string) {
	t.Helper()
	ae, ok := apperr.As(err)
	require.True(t, ok, "want a validation error, got %v", err)
	require.Equal(t, apperr.Validation, ae.Kind)
	require.Equal(t, field, ae.Field)
	require.Contains(t, ae.Detail, detail)
	require.Contains(t, ae.Detail, field, "the detail names the field")
}

// TestParseConfigDefaults: an agent_config without tools has none, 10
// steps, parallel calls and fail at the step limit; given values stay,
// and a tool's wait defaults to a day.
func TestParseConfigDefaults(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{``, `null`, `{}`, `{"model":"echo","tools":null}`} {
		cfg, err := tool.ParseConfig(json.RawMessage(raw))
		require.NoError(t, err, raw)
		require.Empty(t, cfg.Tools)
		require.Equal(t, 10, cfg.MaxSteps)
		require.True(t, cfg.Parallel())
		require.Equal(t, "fail", cfg.OnStepLimit)
	}

	cfg, err := tool.ParseConfig(json.RawMessage(`{"model":"echo","max_steps":3,"parallel_tool_calls":false,"on_step_limit":"answer","tools":[
		{"type":"function","function":"lookup"},
		{"type":"agent","agent":"helper","name":"ask","approval":"always","timeout_seconds":60},
		{"type":"http","name":"weather","method":"GET","url":"https://api.example.com/w","connection":"crm",
		 "parameters":{"type":"object","properties":{"city":{"type":"string"}}}},
		{"type":"client","name":"pick_file"},
		{"type":"mcp","server":"docs","tools":["search","fetch"]}]}`))
	require.NoError(t, err)
	require.Equal(t, 3, cfg.MaxSteps)
	require.False(t, cfg.Parallel())
	require.Equal(t, "answer", cfg.OnStepLimit)
	require.Len(t, cfg.Tools, 5)
	require.Equal(t, tool.Spec{Type: "mcp", Server: "docs", Tools: []string{"search", "fetch"}, TimeoutSeconds: 86400}, cfg.Tools[4])
	require.Equal(t, tool.Spec{Type: "function", Function: "lookup", TimeoutSeconds: 86400}, cfg.Tools[0], "the name stays the default's")
	require.Equal(t, 60, cfg.Tools[1].TimeoutSeconds)
	require.Equal(t, "always", cfg.Tools[1].Approval)
	require.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string"}}}`, string(cfg.Tools[2].Parameters))
	require.Equal(t, "crm", cfg.Tools[2].Connection)
	require.Nil(t, cfg.Tools[3].Parameters)

	_, err = tool.ParseConfigAt("agents[2].agent_config", json.RawMessage(`{"max_steps":0}`))
	requireInvalid(t, err, "agents[2].agent_config.max_steps", "between 1 and 50")
}

// TestParseConfigRefusals: every bad shape is a 400 naming its field.
func TestParseConfigRefusals(t *testing.T) {
	t.Parallel()
	fn := `{"type":"function","function":"f"}`
	for _, tc := range []struct {
		name, config, field, detail string
	}{
		{"config not an object", `[1]`, "agent_config", "expected an object"},
		{"tools not an array", `{"tools":{}}`, "agent_config.tools", "expected an array"},
		{"tool not an object", `{"tools":["f"]}`, "agent_config.tools[0]", "expected an object"},
		{"no type", `{"tools":[{"function":"f"}]}`, "agent_config.tools[0].type", "Missing required field"},
		{"unknown type", `{"tools":[{"type":"shell"}]}`, "agent_config.tools[0].type", "must be one of function, agent, http, client, mcp"},
		{"mcp without server", `{"tools":[{"type":"mcp"}]}`, "agent_config.tools[0].server", "Missing required field"},
		{"mcp with a name", `{"tools":[{"type":"mcp","server":"s","name":"x"}]}`, "agent_config.tools[0].name", "takes no name"},
		{"mcp tools not names", `{"tools":[{"type":"mcp","server":"s","tools":[1]}]}`, "agent_config.tools[0].tools", "array of tool names"},
		{"mcp tools empty", `{"tools":[{"type":"mcp","server":"s","tools":[]}]}`, "agent_config.tools[0].tools", "at least one"},
		{"mcp tools twice", `{"tools":[{"type":"mcp","server":"s","tools":["a","a"]}]}`, "agent_config.tools[0].tools[1]", "duplicate"},
		{"bad name", `{"tools":[{"type":"function","function":"f","name":"has space"}]}`, "agent_config.tools[0].name", "must match"},
		{"name too long", `{"tools":[{"type":"function","function":"f","name":"` + strings.Repeat("a", 65) + `"}]}`, "agent_config.tools[0].name", "must match"},
		{"duplicate name", `{"tools":[{"type":"function","function":"f","name":"x"},{"type":"agent","agent":"a","name":"x"}]}`, "agent_config.tools[1].name", `duplicate tool name "x"`},
		{"name not a string", `{"tools":[{"type":"function","function":"f","name":3}]}`, "agent_config.tools[0].name", "expected a string"},
		{"function missing", `{"tools":[{"type":"function"}]}`, "agent_config.tools[0].function", "Missing required field"},
		{"agent missing", `{"tools":[` + fn + `,{"type":"agent","agent":" "}]}`, "agent_config.tools[1].agent", "Missing required field"},
		{"bad approval", `{"tools":[{"type":"function","function":"f","approval":"never"}]}`, "agent_config.tools[0].approval", "must be always"},
		{"wait too long", `{"tools":[{"type":"client","name":"c","timeout_seconds":2592001}]}`, "agent_config.tools[0].timeout_seconds", "between 1 and 2592000"},
		{"wait fractional", `{"tools":[{"type":"client","name":"c","timeout_seconds":1.5}]}`, "agent_config.tools[0].timeout_seconds", "expected an integer"},
		{"http without name", `{"tools":[{"type":"http","method":"GET","url":"https://x.example"}]}`, "agent_config.tools[0].name", "Missing required field"},
		{"http without url", `{"tools":[{"type":"http","name":"h","method":"GET"}]}`, "agent_config.tools[0].url", "Missing required field"},
		{"http relative url", `{"tools":[{"type":"http","name":"h","method":"GET","url":"/x"}]}`, "agent_config.tools[0].url", "absolute http or https URL"},
		{"http ftp url", `{"tools":[{"type":"http","name":"h","method":"GET","url":"ftp://x.example/f"}]}`, "agent_config.tools[0].url", "absolute http or https URL"},
		{"http without method", `{"tools":[{"type":"http","name":"h","url":"https://x.example"}]}`, "agent_config.tools[0].method", "Missing required field"},
		{"http bad method", `{"tools":[{"type":"http","name":"h","method":"TRACE","url":"https://x.example"}]}`, "agent_config.tools[0].method", "GET, POST, PUT, PATCH, DELETE"},
		{"parameters not an object", `{"tools":[{"type":"client","name":"c","parameters":[]}]}`, "agent_config.tools[0].parameters", "expected an object"},
		{"parameters not an object schema", `{"tools":[{"type":"client","name":"c","parameters":{"type":"string"}}]}`, "agent_config.tools[0].parameters.type", `must be "object"`},
		{"parameters do not compile", `{"tools":[{"type":"http","name":"h","method":"POST","url":"https://x.example","parameters":{"type":"object","minProperties":"x"}}]}`,
			"agent_config.tools[0].parameters", "input_schema"},
		{"client without name", `{"tools":[{"type":"client"}]}`, "agent_config.tools[0].name", "Missing required field"},
		{"max_steps zero", `{"max_steps":0}`, "agent_config.max_steps", "between 1 and 50"},
		{"max_steps 51", `{"max_steps":51}`, "agent_config.max_steps", "between 1 and 50"},
		{"max_steps a string", `{"max_steps":"5"}`, "agent_config.max_steps", "expected an integer"},
		{"parallel not a boolean", `{"parallel_tool_calls":"yes"}`, "agent_config.parallel_tool_calls", "expected a boolean"},
		{"bad on_step_limit", `{"on_step_limit":"retry"}`, "agent_config.on_step_limit", "must be one of fail, answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tool.ParseConfig(json.RawMessage(tc.config))
			requireInvalid(t, err, tc.field, tc.detail)
		})
	}
}

// TestNames: a tool takes the name of what it refers to unless it has
// its own; a default that is no tool name asks for one, and defaults
// clash like given names.
func TestNames(t *testing.T) {
	t.Parallel()
	specs := []tool.Spec{{Type: "function", Function: "f"}, {Type: "agent", Agent: "a", Name: "ask"}}
	names, err := tool.Names("agent_config", specs, func(i int) string { return []string{"lookup", "helper"}[i] })
	require.NoError(t, err)
	require.Equal(t, []string{"lookup", "ask"}, names)

	_, err = tool.Names("agent_config", specs, func(int) string { return "Look up" })
	requireInvalid(t, err, "agent_config.tools[0].name", "give the tool a name")
	_, err = tool.Names("agents[0].agent_config", specs, func(int) string { return "ask" })
	requireInvalid(t, err, "agents[0].agent_config.tools[1].name", `duplicate tool name "ask"`)
}
