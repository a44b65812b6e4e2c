package apps_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/secret"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// service is the apps domain on a real store, with a user of it.
func service(t *testing.T, d store.Dialect) (*apps.Service, *store.Store, *auth.Caller) {
	t.Helper()
	st := testdb.Open(t, d)
	as, err := auth.New(st, testdb.Logger(), auth.Options{Password: auth.PasswordParams{Memory: 64, Time: 1, Threads: 1}})
	require.NoError(t, err)
	box, err := secret.New([][]byte{bytes.Repeat([]byte{7}, 32)})
	require.NoError(t, err)
	u, _ := testdb.UserApp(t, st)
	return apps.New(st, as, box, nil, apps.Options{}), st, &auth.Caller{UserID: u.ID, Email: u.Email, Kind: auth.KindSession}
}

func importJSON(t *testing.T, svc *apps.Service, c *auth.Caller, m any) (*apps.Imported, error) {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	parsed, err := apps.ParseManifest(b, "application/json")
	if err != nil {
		return nil, err
	}
	return svc.Import(context.Background(), c, parsed)
}

func config(t *testing.T, raw json.RawMessage) *apps.AgentConfig {
	t.Helper()
	var c apps.AgentConfig
	require.NoError(t, json.Unmarshal(raw, &c))
	return &c
}

func requireField(t *testing.T, err error, field, detail string) {
	t.Helper()
	ae, ok := apperr.As(err)
	require.True(t, ok, "want a validation error, got %v", err)
	require.Equal(t, apperr.Validation, ae.Kind, "%v", err)
	require.Equal(t, field, ae.Field)
	require.Contains(t, ae.Detail, detail)
}

// TestAgentToolsRoundTrip: a manifest's tools are stored as written and
// exported back unchanged; an agent made over the API that names a
// function by id exports it by name, so that an installed copy (other
// ids) still finds it.
func TestAgentToolsRoundTrip(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		svc, st, c := service(t, d)
		ctx := context.Background()
		in := withTools()
		in["slug"] = "tools-demo"
		imp, err := importJSON(t, svc, c, in)
		require.NoError(t, err)
		out, err := svc.Export(ctx, c, imp.App.ID)
		require.NoError(t, err)
		want, err := parse(t, in)
		require.NoError(t, err)
		wantJSON, err := json.Marshal(want.Agents)
		require.NoError(t, err)
		gotJSON, err := json.Marshal(out.Agents)
		require.NoError(t, err)
		require.JSONEq(t, string(wantJSON), string(gotJSON), "the agents export as imported (PostgreSQL respells JSON)")
		exported, err := json.Marshal(out.Agents[0].AgentConfig)
		require.NoError(t, err)
		require.JSONEq(t, `{"model":"echo","max_steps":5,"parallel_tool_calls":false,"on_step_limit":"answer","tools":[
			{"type":"function","function":"f"},
			{"type":"agent","agent":"b","name":"ask_b","approval":"always","timeout_seconds":600},
			{"type":"http","name":"weather","method":"GET","url":"https://api.example.com/w","connection":"crm",
			 "parameters":{"type":"object","properties":{"city":{"type":"string"}}}},
			{"type":"client","name":"pick"},
			{"type":"mcp","server":"docs","tools":["search"]}]}`, string(exported))
		require.Equal(t, []apps.MCPServerSpec{{Name: "docs", URL: "https://mcp.example.com/mcp", Authenticator: "crm"}}, out.MCPServers,
			"mcp_servers export as imported")

		f, err := st.FunctionGetByName(ctx, imp.App.ID, "f")
		require.NoError(t, err)
		a, _, err := svc.CreateAgent(ctx, c, imp.App.ID, map[string]any{"name": "byid", "agent_type_id": "llm",
			"agent_config": map[string]any{"model": "echo", "tools": []any{map[string]any{"type": "function", "function": f.ID}}}})
		require.NoError(t, err)
		require.Contains(t, string(a.Config), f.ID, "stored as given")
		out, err = svc.Export(ctx, c, imp.App.ID)
		require.NoError(t, err)
		require.Equal(t, "byid", out.Agents[2].Name)
		require.Equal(t, "f", out.Agents[2].AgentConfig.Tools[0].Function, "an id exports as the name")

		copied, err := svc.Install(ctx, c, imp.App.ID, "tools-copy", "")
		require.NoError(t, err)
		agents, err := st.AgentListByApp(ctx, copied.App.ID)
		require.NoError(t, err)
		for _, ag := range agents {
			if ag.Name == "byid" {
				require.Equal(t, "f", config(t, ag.Config).Tools[0].Function)
			}
		}
	})
}

// TestAgentToolsOverTheAPI: an agent made or changed over the API names
// its app's functions, agents and authenticators by name or id; anything
// else (another user's function included), itself, a private URL and
// tools on a custom agent are 400s naming the field.
func TestAgentToolsOverTheAPI(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		svc, st, c := service(t, d)
		ctx := context.Background()
		imp, err := importJSON(t, svc, c, base())
		require.NoError(t, err)
		appID := imp.App.ID
		helper, err := st.AgentListByApp(ctx, appID)
		require.NoError(t, err)

		otherSvc, otherSt, other := service(t, d)
		theirs, err := importJSON(t, otherSvc, other, base())
		require.NoError(t, err)
		theirF, err := otherSt.FunctionGetByName(ctx, theirs.App.ID, "f")
		require.NoError(t, err)

		agent := func(tools ...any) map[string]any {
			return map[string]any{"name": "caller", "agent_type_id": "llm", "agent_config": map[string]any{"model": "echo", "tools": tools}}
		}
		ok, _, err := svc.CreateAgent(ctx, c, appID, agent(
			map[string]any{"type": "function", "function": "f"},
			map[string]any{"type": "agent", "agent": helper[0].ID},
			map[string]any{"type": "http", "name": "crm_get", "method": "GET", "url": "https://crm.example.com/api", "connection": "crm"}))
		require.NoError(t, err)

		for _, tc := range []struct {
			name   string
			body   map[string]any
			field  string
			detail string
		}{
			{"unknown function", agent(map[string]any{"type": "function", "function": "x"}), "agent_config.tools[0].function", "Unknown function: x"},
			{"another user's function", agent(map[string]any{"type": "function", "function": theirF.ID}), "agent_config.tools[0].function", "Unknown function"},
			{"unknown agent", agent(map[string]any{"type": "agent", "agent": uuid.NewString()}), "agent_config.tools[0].agent", "Unknown agent"},
			{"itself by name", agent(map[string]any{"type": "agent", "agent": "caller"}), "agent_config.tools[0].agent", "cannot call itself"},
			{"private url", agent(map[string]any{"type": "http", "name": "h", "method": "POST", "url": "http://10.1.2.3/hook"}),
				"agent_config.tools[0].url", "private"},
			{"unknown connection", agent(map[string]any{"type": "http", "name": "h", "method": "GET", "url": "https://x.example", "connection": "mail"}),
				"agent_config.tools[0].connection", "not an authenticator"},
			{"tools on a custom agent", map[string]any{"name": "c", "agent_type_id": "custom", "agent_config": map[string]any{"runtime": "javascript",
				"code": "async function run(){}", "tools": []any{map[string]any{"type": "function", "function": "f"}}}}, "agent_config.tools", "only an LLM agent"},
		} {
			_, _, err := svc.CreateAgent(ctx, c, appID, tc.body)
			requireField(t, err, tc.field, tc.detail)
		}

		// Changing it: its own id is itself too; the rest of its config stays.
		_, _, err = svc.UpdateAgent(ctx, c, appID, ok.ID, map[string]any{"agent_config": map[string]any{
			"tools": []any{map[string]any{"type": "agent", "agent": ok.ID}}}})
		requireField(t, err, "agent_config.tools[0].agent", "cannot call itself")
		_, _, err = svc.UpdateAgent(ctx, c, appID, ok.ID, map[string]any{"agent_config": map[string]any{"max_steps": 0}})
		requireField(t, err, "agent_config.max_steps", "between 1 and 50")
		up, _, err := svc.UpdateAgent(ctx, c, appID, ok.ID, map[string]any{"agent_config": map[string]any{"max_steps": 3}})
		require.NoError(t, err)
		require.Equal(t, "crm", config(t, up.Config).Tools[2].Connection)
		require.Equal(t, 3, config(t, up.Config).MaxSteps)

		// A manifest's private tool URL is refused at import.
		m := withTools()
		m["slug"] = "private"
		at(m, "agents", 0, "agent_config", "tools", 2).(map[string]any)["url"] = "http://192.168.1.1/x"
		_, err = importJSON(t, svc, c, m)
		requireField(t, err, "agents[0].agent_config.tools[2].url", "private")
	})
}
