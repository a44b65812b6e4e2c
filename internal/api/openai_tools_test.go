package api_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestOpenAIOwnAndCallerTools: an agent with tools of its own takes the
// caller's too. The model is offered both; the agent's own calls run
// inside the run, and an answer calling a caller's tool ends it with
// finish_reason tool_calls and only the caller's calls (the agent's own
// calls of that answer are not run: their results would reach no model,
// since the caller's next request holds the conversation). A caller's
// tool named like one of the agent's is refused.
func TestOpenAIOwnAndCallerTools(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("oa@example.com")
		var pings atomic.Int32
		ping := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			pings.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"pong": true}`))
		}))
		fake, f := e.fakeAgent(token, map[string]any{"tools": []any{map[string]any{"type": "http", "name": "ping", "method": "GET",
			"url": ping.URL, "parameters": map[string]any{"type": "object"}}}})
		client := e.openaiClient(e.keyWith(token, "read:all", "write:all"))
		ctx := context.Background()
		weather := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}})
		params := openai.ChatCompletionNewParams{Model: f.agentID, Tools: []openai.ChatCompletionToolUnionParam{weather},
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("ping, then the weather in Paris")}}

		// The agent's own call runs inside; then the caller's ends the run.
		fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "own_1", Name: "ping", Arguments: `{}`}}},
			llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}})
		comp, err := client.Chat.Completions.New(ctx, params)
		require.NoError(t, err)
		require.Equal(t, "tool_calls", comp.Choices[0].FinishReason)
		calls := comp.Choices[0].Message.ToolCalls
		require.Len(t, calls, 1)
		require.Equal(t, "call_1", calls[0].ID)
		require.Equal(t, "get_weather", calls[0].Function.Name)
		require.JSONEq(t, `{"city":"Paris"}`, calls[0].Function.Arguments)
		require.EqualValues(t, 1, pings.Load(), "the agent's own tool ran")
		reqs := fake.Requests()
		require.Len(t, reqs, 2)
		var offered []string
		for _, tl := range reqs[0].Tools {
			offered = append(offered, tl.Name)
		}
		slices.Sort(offered)
		require.Equal(t, []string{"get_weather", "ping"}, offered, "both sets are offered")
		last := reqs[1].Messages[len(reqs[1].Messages)-1]
		require.Equal(t, llm.RoleTool, last.Role)
		require.Equal(t, "own_1", last.Results[0].CallID)
		require.Contains(t, last.Results[0].Content, "pong")
		steps := list(e.do("GET", "/api/v1/activations/"+strings.TrimPrefix(comp.ID, "chatcmpl-")+"/steps", nil, bearer(token)).expect(t, 200), "steps")
		require.Len(t, steps, 3, "llm, ping, llm: no step for the caller's call")

		// One answer calling both: only the caller's call comes back, and
		// the agent's own is not run.
		fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "own_2", Name: "ping", Arguments: `{}`},
			{ID: "call_2", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}})
		comp, err = client.Chat.Completions.New(ctx, params)
		require.NoError(t, err)
		require.Equal(t, "tool_calls", comp.Choices[0].FinishReason)
		require.Len(t, comp.Choices[0].Message.ToolCalls, 1)
		require.Equal(t, "call_2", comp.Choices[0].Message.ToolCalls[0].ID)
		require.EqualValues(t, 1, pings.Load(), "not run: its result would reach no model")

		// The caller goes on with its result; the loop still has the
		// agent's tools.
		fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "own_3", Name: "ping", Arguments: `{}`}}}, llmtest.Reply{Text: "Snow in Oslo."})
		params.Messages = append(params.Messages, comp.Choices[0].Message.ToParam(), openai.ToolMessage(`{"sky":"snow"}`, "call_2"))
		comp, err = client.Chat.Completions.New(ctx, params)
		require.NoError(t, err)
		require.Equal(t, "stop", comp.Choices[0].FinishReason)
		require.Equal(t, "Snow in Oslo.", comp.Choices[0].Message.Content)
		require.EqualValues(t, 2, pings.Load())
		reqs = fake.Requests()
		sent := reqs[len(reqs)-2].Messages
		require.Equal(t, []llm.ToolCall{{ID: "call_2", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}, sent[1].ToolCalls)
		require.Equal(t, []llm.ToolResult{{CallID: "call_2", Content: `{"sky":"snow"}`}}, sent[2].Results)

		// Streamed, the caller's calls come in the last chunk as well.
		fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "call_3", Name: "get_weather", Arguments: `{"city":"Rome"}`}}})
		params.Messages = params.Messages[:1]
		acc := streamed(t, client, ctx, params)
		require.Equal(t, "tool_calls", acc.Choices[0].FinishReason)
		require.Equal(t, "call_3", acc.Choices[0].Message.ToolCalls[0].ID)

		// A caller's tool named like one of the agent's: 400, naming it.
		clash := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "ping"})
		params.Tools = []openai.ChatCompletionToolUnionParam{weather, clash}
		_, err = client.Chat.Completions.New(ctx, params)
		oe := requireOpenAIError(t, err, http.StatusBadRequest, "invalid_value")
		require.Equal(t, "tools[1].function.name", oe.Param)
		require.Contains(t, oe.Message, "ping")
		// So is a name given twice.
		params.Tools = []openai.ChatCompletionToolUnionParam{weather, weather}
		_, err = client.Chat.Completions.New(ctx, params)
		oe = requireOpenAIError(t, err, http.StatusBadRequest, "invalid_value")
		require.Equal(t, "tools[1].function.name", oe.Param)
	})
}
