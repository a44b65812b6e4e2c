package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/executor/runtimes"
	"github.com/agentplatform/agentplatform/internal/function"
	"github.com/agentplatform/agentplatform/internal/secret"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/tool"
)

// world is a user's app on a real store with a real function service.
type world struct {
	st        *store.Store
	functions *function.Service
	user      *store.User
	app       *store.App
}

func newWorld(t *testing.T, d store.Dialect) *world {
	t.Helper()
	st := testdb.Open(t, d)
	as, err := auth.New(st, testdb.Logger(), auth.Options{Password: auth.PasswordParams{Memory: 64, Time: 1, Threads: 1}})
	require.NoError(t, err)
	box, err := secret.New([][]byte{bytes.Repeat([]byte{7}, 32)})
	require.NoError(t, err)
	ap := apps.New(st, as, box, nil, apps.Options{})
	js := runtimes.NewJavaScript(st, egress.New(nil), nil, 16)
	u, app := testdb.UserApp(t, st)
	return &world{st: st, functions: function.New(st, as, ap, js), user: u, app: app}
}

func (w *world) function(t *testing.T, name, code string, schema json.RawMessage) *store.Function {
	t.Helper()
	now := store.Now()
	f := &store.Function{ID: uuid.NewString(), AppID: w.app.ID, UserID: w.user.ID, Name: name, Description: "does " + name, Code: code,
		InputSchema: schema, TimeoutSeconds: 10, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, w.st.FunctionCreate(context.Background(), f))
	return f
}

func (w *world) agent(t *testing.T, name, typ string, schema json.RawMessage) *store.Agent {
	t.Helper()
	now := store.Now()
	cfg := json.RawMessage(`{"model":"echo"}`)
	if typ == "custom" {
		cfg = json.RawMessage(`{"runtime":"javascript","code":"async function run(){}"}`)
	}
	a := &store.Agent{ID: uuid.NewString(), AppID: w.app.ID, UserID: w.user.ID, Name: name, Description: "agent " + name, AgentTypeID: typ,
		Version: "1.0.0", Status: "active", Capabilities: []string{}, TimeoutSeconds: 60, Config: cfg, InputSchema: schema, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, w.st.AgentCreate(context.Background(), a))
	return a
}

func (w *world) run(agentID string) *executor.Run {
	return &executor.Run{Kind: executor.Activation, ID: uuid.NewString(), UserID: w.user.ID, AppID: w.app.ID, AgentID: agentID}
}

func build(t *testing.T, k *tool.Kit, run *executor.Run, tools string) ([]tool.Tool, error) {
	t.Helper()
	cfg, err := tool.ParseConfig(json.RawMessage(`{"tools":` + tools + `}`))
	require.NoError(t, err)
	set, err := k.Build(context.Background(), run, cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(set.Close)
	return set.Tools, nil
}

// counter counts its runs in the app's storage and shows its key.
const counter = `async function run(input, ctx) {
	if (input.fail) throw new Error("no luck with " + input.city);
	const n = ((await ctx.storage.get("runs")) || 0) + 1;
	await ctx.storage.set("runs", n);
	return {n, key: ctx.execution.idempotency_key, city: input.city};
}`

// TestFunctionTool: a function tool's parameters are the function's
// input_schema and its name and description the function's; a call runs
// the function with the call's idempotency key (ctx.execution.
// idempotency_key), once per key: the same key again is answered from the
// record, the code not run again. A throw is the call's error, its text
// the function's; input that fails the schema runs nothing.
func TestFunctionTool(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		w := newWorld(t, d)
		schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"fail":{"type":"boolean"}},"required":["city"]}`)
		f := w.function(t, "lookup", counter, schema)
		w.function(t, "bare", `async function run(input, ctx) { return ctx.execution.idempotency_key; }`, nil)
		k := &tool.Kit{Store: w.st, Functions: w.functions}
		run := w.run(uuid.NewString())

		tools, err := build(t, k, run, `[{"type":"function","function":"lookup"},{"type":"function","function":"`+f.ID+`","name":"by_id","description":"mine"}]`)
		require.NoError(t, err)
		def := tools[0].Definition()
		require.Equal(t, "lookup", def.Name, "the name defaults to the function's")
		require.Equal(t, "does lookup", def.Description)
		require.JSONEq(t, string(schema), string(def.Parameters))
		require.Equal(t, "by_id", tools[1].Definition().Name, "an id resolves too")
		require.Equal(t, "mine", tools[1].Definition().Description)

		ctx := context.Background()
		c := tool.Call{ID: "c1", Arguments: json.RawMessage(`{"city":"Paris"}`), IdempotencyKey: run.ID + ":c1", Run: run}
		out, err := tools[0].Call(ctx, c)
		require.NoError(t, err)
		require.JSONEq(t, `{"n":1,"key":"`+run.ID+`:c1","city":"Paris"}`, string(out))
		again, err := tools[0].Call(ctx, c)
		require.NoError(t, err)
		require.JSONEq(t, string(out), string(again), "the same key is answered from its record")
		c.ID, c.IdempotencyKey = "c2", run.ID+":c2"
		out, err = tools[1].Call(ctx, c)
		require.NoError(t, err)
		require.JSONEq(t, `{"n":2,"key":"`+run.ID+`:c2","city":"Paris"}`, string(out), "the code ran once for c1")

		c.ID, c.IdempotencyKey, c.Arguments = "c3", run.ID+":c3", json.RawMessage(`{"city":"Rome","fail":true}`)
		_, err = tools[0].Call(ctx, c)
		require.ErrorContains(t, err, "no luck with Rome")
		_, err = tools[0].Call(ctx, c)
		require.ErrorContains(t, err, "no luck with Rome", "a failure is recorded once too")

		c.ID, c.IdempotencyKey, c.Arguments = "c4", run.ID+":c4", json.RawMessage(`{"town":"Rome"}`)
		_, err = tools[0].Call(ctx, c)
		require.ErrorContains(t, err, "city")

		// A plain execution has no key: null, not absent.
		e, err := w.functions.ExecuteStep(ctx, w.user.ID, w.app.ID, "bare", function.Step{RunID: uuid.NewString(), StepID: "s"}, nil)
		require.NoError(t, err)
		require.JSONEq(t, `null`, string(e.Output))
		bare, err := build(t, k, run, `[{"type":"function","function":"bare"}]`)
		require.NoError(t, err)
		require.JSONEq(t, `{"type":"object"}`, string(bare[0].Definition().Parameters), "no schema: any object")
	})
}

// children records the child runs asked for.
type children struct {
	agent *store.Agent
	key   string
	input string
}

func (c *children) RunChild(_ context.Context, _ *executor.Run, a *store.Agent, key string, input json.RawMessage) (json.RawMessage, error) {
	c.agent, c.key, c.input = a, key, string(input)
	return json.RawMessage(`{"text":"done"}`), nil
}

// TestAgentTool: an agent tool runs another agent of the app as a child
// with the call's key; an LLM agent takes {prompt}, a custom one its
// input_schema (any object without one). An agent that calls itself, and
// refs that resolve to nothing in the app, stop the build naming the field.
func TestAgentTool(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		w := newWorld(t, d)
		self := w.agent(t, "boss", "llm", nil)
		helper := w.agent(t, "helper", "llm", nil)
		schema := json.RawMessage(`{"type":"object","properties":{"subject":{"type":"string"}}}`)
		w.agent(t, "worker", "custom", schema)
		w.agent(t, "plain", "custom", nil)
		w.agent(t, "Two Words", "llm", nil)
		kids := &children{}
		k := &tool.Kit{Store: w.st, Agents: kids}
		run := w.run(self.ID)

		tools, err := build(t, k, run, `[{"type":"agent","agent":"helper"},{"type":"agent","agent":"worker"},{"type":"agent","agent":"plain"}]`)
		require.NoError(t, err)
		require.Equal(t, "helper", tools[0].Definition().Name)
		require.Equal(t, "agent helper", tools[0].Definition().Description)
		require.JSONEq(t, string(tool.PromptSchema), string(tools[0].Definition().Parameters))
		require.JSONEq(t, string(schema), string(tools[1].Definition().Parameters))
		require.JSONEq(t, `{"type":"object"}`, string(tools[2].Definition().Parameters))

		out, err := tools[0].Call(context.Background(), tool.Call{ID: "c1", Arguments: json.RawMessage(`{"prompt":"hi"}`), IdempotencyKey: run.ID + ":c1", Run: run})
		require.NoError(t, err)
		require.JSONEq(t, `{"text":"done"}`, string(out))
		require.Equal(t, helper.ID, kids.agent.ID)
		require.Equal(t, run.ID+":c1", kids.key)
		require.JSONEq(t, `{"prompt":"hi"}`, kids.input)

		other := newWorld(t, d)
		stranger := other.agent(t, "stranger", "llm", nil)
		for _, tc := range []struct{ tools, field, detail string }{
			{`[{"type":"agent","agent":"boss"}]`, "agent_config.tools[0].agent", "cannot call itself"},
			{`[{"type":"agent","agent":"` + self.ID + `"}]`, "agent_config.tools[0].agent", "cannot call itself"},
			{`[{"type":"function","function":"ghost"}]`, "agent_config.tools[0].function", "Unknown function: ghost"},
			{`[{"type":"agent","agent":"helper"},{"type":"agent","agent":"` + stranger.ID + `"}]`, "agent_config.tools[1].agent", "Unknown agent"},
			{`[{"type":"agent","agent":"Two Words"}]`, "agent_config.tools[0].name", "give the tool a name"},
			{`[{"type":"agent","agent":"helper"},{"type":"client","name":"helper"}]`, "agent_config.tools[1].name", "duplicate tool name"},
		} {
			_, err := build(t, k, run, tc.tools)
			requireInvalid(t, err, tc.field, tc.detail)
		}
	})
}
