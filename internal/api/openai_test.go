package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// The OpenAI-compatible endpoint, called as its users call it: with
// OpenAI's own Go SDK.

// openaiClient is the official SDK pointed at e with key; it does not
// retry, so each call is one request.
func (e *env) openaiClient(key string) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(e.url+"/api/v1/openai/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	return &c
}

// openaiModel is the model name of the fixture's agent: `<slug>/triage`.
func (e *env) openaiModel(token string, f agentFixture) string {
	e.t.Helper()
	return e.do("GET", "/api/v1/apps/"+f.appID, nil, bearer(token)).expect(e.t, 200).str("slug") + "/triage"
}

// requireOpenAIError checks that err is the SDK's *openai.Error with
// status and code.
func requireOpenAIError(t *testing.T, err error, status int, code string) *openai.Error {
	t.Helper()
	var oe *openai.Error
	require.True(t, errors.As(err, &oe), "an *openai.Error: %v", err)
	require.Equal(t, status, oe.StatusCode, oe.RawJSON())
	require.Equal(t, code, oe.Code, oe.RawJSON())
	require.NotEmpty(t, oe.Message)
	return oe
}

func TestOpenAIModelsAndCompletion(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("oa@example.com")
		f := e.llmAgent(token, nil, 0)
		model := e.openaiModel(token, f)
		client := e.openaiClient(e.keyWith(token, "read:all", "write:all"))
		ctx := context.Background()

		page, err := client.Models.List(ctx)
		require.NoError(t, err)
		var ids []string
		for _, m := range page.Data {
			require.Equal(t, "model", string(m.Object))
			require.NotZero(t, m.Created)
			require.NotEmpty(t, m.OwnedBy)
			ids = append(ids, m.ID)
		}
		require.Contains(t, ids, model)

		comp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")},
		})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(comp.ID, "chatcmpl-"), comp.ID)
		require.Equal(t, "chat.completion", string(comp.Object))
		require.Equal(t, model, comp.Model)
		require.Len(t, comp.Choices, 1)
		require.Equal(t, "assistant", string(comp.Choices[0].Message.Role))
		require.Equal(t, "echo: hello there", comp.Choices[0].Message.Content)
		require.Equal(t, "stop", comp.Choices[0].FinishReason)
		require.Positive(t, comp.Usage.CompletionTokens)
		require.Equal(t, comp.Usage.PromptTokens+comp.Usage.CompletionTokens, comp.Usage.TotalTokens)

		// The call is an activation of the agent, in its history.
		act := e.do("GET", "/api/v1/activations/"+strings.TrimPrefix(comp.ID, "chatcmpl-"), nil, bearer(token)).expect(t, 200)
		require.Equal(t, f.agentID, act.str("agent_id"))
		require.Equal(t, "completed", act.str("status"))
		require.Equal(t, "openai", act.JSON["context"].(map[string]any)["source"])

		// The agent's id names it too.
		comp, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: f.agentID, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("by id")},
		})
		require.NoError(t, err)
		require.Equal(t, "echo: by id", comp.Choices[0].Message.Content)
	})
}

// TestOpenAIMessagesAndOverrides: every message, in order, follows the
// agent's system message; temperature and max_tokens override the agent's.
func TestOpenAIMessagesAndOverrides(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("oa@example.com")
		fake, f := e.fakeAgent(token, map[string]any{"system_message": "You are terse.", "temperature": 0.9, "max_tokens": 500})
		client := e.openaiClient(e.keyWith(token, "read:all", "write:all"))
		fake.SetReply("fine")

		comp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: e.openaiModel(token, f),
			Messages: []openai.ChatCompletionMessageParamUnion{
				openai.SystemMessage("Answer in French."),
				openai.UserMessage("hi"),
				openai.AssistantMessage("salut"),
				openai.UserMessage("how are you?"),
			},
			Temperature: openai.Float(0.2),
			MaxTokens:   openai.Int(77),
		})
		require.NoError(t, err)
		require.Equal(t, "fine", comp.Choices[0].Message.Content)

		reqs := fake.Requests()
		require.Len(t, reqs, 1)
		got := reqs[0]
		require.Equal(t, []llm.Message{
			{Role: llm.RoleSystem, Content: "You are terse."},
			{Role: llm.RoleSystem, Content: "Answer in French."},
			{Role: llm.RoleUser, Content: "hi"},
			{Role: llm.RoleAssistant, Content: "salut"},
			{Role: llm.RoleUser, Content: "how are you?"},
		}, stripCalls(got.Sent), "as the wire carried them")
		require.NotNil(t, got.Temperature)
		require.InDelta(t, 0.2, *got.Temperature, 1e-9)
		require.Equal(t, 77, got.MaxTokens)

		// max_completion_tokens is the newer name.
		_, err = client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: f.agentID, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
			MaxCompletionTokens: openai.Int(12),
		})
		require.NoError(t, err)
		reqs = fake.Requests()
		require.Equal(t, 12, reqs[len(reqs)-1].MaxTokens)
		require.InDelta(t, 0.9, *reqs[len(reqs)-1].Temperature, 1e-9, "the agent's own temperature when none is sent")
	})
}

// fakeAgent is an LLM agent (with the extra agent_config) on a fake
// OpenAI server behind a provider of the user's.
func (e *env) fakeAgent(token string, extra map[string]any) (*llmtest.Server, agentFixture) {
	e.t.Helper()
	fake := llmtest.NewOpenAI(e.t)
	pid := e.do("POST", providersPath, map[string]any{"name": "fake-" + uuid.NewString()[:8], "provider_type": "openai",
		"base_url": fake.URL, "api_key": "sk-test", "models": []string{"m"}}, bearer(token)).expect(e.t, 201).str("id")
	cfg := map[string]any{"provider_id": pid, "model": "m"}
	for k, v := range extra {
		cfg[k] = v
	}
	return fake, e.llmAgent(token, cfg, 30)
}

// TestOpenAIClientGoneCancelsTheRun: a caller that stops waiting, for an
// answer or a stream, cancels the activation and its LLM call.
func TestOpenAIClientGoneCancelsTheRun(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("oa@example.com")
		fake, f := e.fakeAgent(token, nil)
		release := fake.Block()
		defer release()
		client := e.openaiClient(e.keyWith(token, "read:all", "write:all"))
		params := openai.ChatCompletionNewParams{Model: f.agentID, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("wait")}}

		for i, call := range []func(ctx context.Context) error{
			func(ctx context.Context) error { _, err := client.Chat.Completions.New(ctx, params); return err },
			func(ctx context.Context) error {
				s := client.Chat.Completions.NewStreaming(ctx, params)
				for s.Next() {
				}
				return s.Err()
			},
		} {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- call(ctx) }()
			fake.WaitCalls(t, i+1)
			cancel()
			require.Error(t, <-done, "call %d", i)
			r := e.do("GET", "/api/v1/agents/"+f.agentID+"/activations", nil, bearer(token)).expect(t, 200)
			acts := list(r, "activations")
			require.Len(t, acts, i+1)
			for _, a := range acts {
				got := e.await(token, a["activation_id"].(string))
				require.Equal(t, "failed", got.str("status"), "call %d", i)
				require.Equal(t, "Activation cancelled", got.str("error"))
			}
		}
	})
}

// stripCalls keeps the role and content of messages (what the test sent).
func stripCalls(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		out[i] = llm.Message{Role: m.Role, Content: m.Content}
	}
	return out
}

func TestOpenAIStreaming(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("oa@example.com")
		f := e.llmAgent(token, nil, 0)
		client := e.openaiClient(e.keyWith(token, "read:all", "write:all"))

		stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model:         e.openaiModel(token, f),
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream these words please")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		acc := openai.ChatCompletionAccumulator{}
		chunks := 0
		for stream.Next() {
			require.True(t, acc.AddChunk(stream.Current()))
			chunks++
		}
		require.NoError(t, stream.Err())
		require.NoError(t, stream.Close())
		require.Greater(t, chunks, 4, "one chunk per token, then the finish and the usage")
		require.Len(t, acc.Choices, 1)
		require.Equal(t, "echo: stream these words please", acc.Choices[0].Message.Content)
		require.Equal(t, "stop", acc.Choices[0].FinishReason)
		require.Positive(t, acc.Usage.TotalTokens)
		require.True(t, strings.HasPrefix(acc.ID, "chatcmpl-"))

		act := e.await(token, strings.TrimPrefix(acc.ID, "chatcmpl-"))
		require.Equal(t, "completed", act.str("status"))
		require.Equal(t, "openai", act.JSON["context"].(map[string]any)["source"])
	})
}

func TestOpenAIErrors(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("oa@example.com")
		f := e.llmAgent(token, nil, 0)
		model := e.openaiModel(token, f)
		ctx := context.Background()
		hello := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}

		_, err := e.openaiClient("ak_not-a-key").Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: hello})
		requireOpenAIError(t, err, http.StatusUnauthorized, "invalid_api_key")
		_, err = e.openaiClient("ak_not-a-key").Models.List(ctx)
		requireOpenAIError(t, err, http.StatusUnauthorized, "invalid_api_key")

		client := e.openaiClient(e.keyWith(token, "read:all", "write:all"))
		_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "nope/none", Messages: hello})
		oe := requireOpenAIError(t, err, http.StatusNotFound, "model_not_found")
		require.Equal(t, "model", oe.Param)

		_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("a"), openai.UserMessage("b")}},
			option.WithJSONSet("messages.1.role", "robot"))
		oe = requireOpenAIError(t, err, http.StatusBadRequest, "invalid_value")
		require.Equal(t, "messages[1].role", oe.Param)

		_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: hello},
			option.WithJSONSet("tools", []any{map[string]any{"type": "custom", "function": map[string]any{"name": "f"}}}))
		oe = requireOpenAIError(t, err, http.StatusBadRequest, "invalid_value")
		require.Equal(t, "tools[0].type", oe.Param)

		// A model named by the app's slug and a name that is not an LLM
		// agent's is not a model; a disabled agent is one, refused.
		slug, _, _ := strings.Cut(model, "/")
		custom := e.do("POST", "/api/v1/apps/"+f.appID+"/agents", map[string]any{"name": "router", "agent_type_id": "custom",
			"agent_config": map[string]any{"runtime": "javascript", "code": "export default () => ({ok: true})"}}, bearer(token)).expect(t, 201)
		_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: slug + "/router", Messages: hello})
		requireOpenAIError(t, err, http.StatusNotFound, "model_not_found")
		_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: custom.str("agent_id"), Messages: hello})
		requireOpenAIError(t, err, http.StatusNotFound, "model_not_found")
		e.do("PATCH", "/api/v1/apps/"+f.appID+"/agents/"+f.agentID, map[string]any{"status": "disabled"}, bearer(token)).expect(t, 200)
		_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: hello})
		requireOpenAIError(t, err, http.StatusConflict, "conflict")
		e.do("PATCH", "/api/v1/apps/"+f.appID+"/agents/"+f.agentID, map[string]any{"status": "active"}, bearer(token)).expect(t, 200)

		// A read-only key may list but not call.
		ro := e.openaiClient(e.keyWith(token, "read:all"))
		_, err = ro.Models.List(ctx)
		require.NoError(t, err)
		_, err = ro.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: hello})
		requireOpenAIError(t, err, http.StatusForbidden, "insufficient_permissions")

		// Nothing above made an activation.
		r := e.do("GET", "/api/v1/activations", nil, bearer(token)).expect(t, 200)
		require.Empty(t, list(r, "activations"))
	})
}

// TestOpenAIRateLimited: the front door's 429 takes OpenAI's shape on the
// endpoint, with Retry-After.
func TestOpenAIRateLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, map[string]string{"AP_RATE_LIMIT": "1"})
	var last *http.Response
	var err error
	for range 3 {
		_, err = e.openaiClient("ak_not-a-key").Models.List(context.Background(), option.WithResponseInto(&last))
	}
	requireOpenAIError(t, err, http.StatusTooManyRequests, "rate_limit_exceeded")
	require.Equal(t, "60", last.Header.Get("Retry-After"))
	var body map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(err.(*openai.Error).RawJSON()), &body))
	require.Contains(t, body, "message")
}

// TestActivateWithMessages: input_data.messages is the conversation of any
// activate call, checked when the activation is created.
func TestActivateWithMessages(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("oa@example.com")
		f := e.llmAgent(token, nil, 0)
		activate := func(messages any) *resp {
			return e.do("POST", "/api/v1/activations", map[string]any{"agent_id": f.agentID,
				"input_data": map[string]any{"messages": messages}}, bearer(token))
		}
		activate([]any{map[string]any{"role": "user", "content": "a"}, map[string]any{"role": "robot", "content": "b"}}).
			expectError(t, 400, "ValidationError", "Invalid value for field input_data.messages[1].role: expected system, user, assistant or tool")
		activate([]any{map[string]any{"role": "user"}}).
			expectError(t, 400, "ValidationError", "Missing required field: input_data.messages[0].content")
		activate("hi").expectError(t, 400, "ValidationError",
			"Invalid value for field input_data.messages: expected a non-empty array of {role, content}")

		id := activate([]any{map[string]any{"role": "user", "content": "first"}, map[string]any{"role": "assistant", "content": "ok"},
			map[string]any{"role": "user", "content": "second"}}).expect(t, 201).str("activation_id")
		r := e.await(token, id)
		require.Equal(t, "echo: second", r.JSON["output_data"].(map[string]any)["response"])
	})
}

// TestOpenAICallerTools: the caller's function tools are offered to the
// model; a call of one ends the answer with finish_reason tool_calls, and
// the caller goes on with a new request holding the results.
func TestOpenAICallerTools(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("oa@example.com")
		fake, f := e.fakeAgent(token, nil)
		client := e.openaiClient(e.keyWith(token, "read:all", "write:all"))
		ctx := context.Background()
		weather := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather",
			Description: openai.String("The weather in a city"),
			Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}})
		params := openai.ChatCompletionNewParams{Model: f.agentID, Tools: []openai.ChatCompletionToolUnionParam{weather},
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Paris?")}}

		fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}})
		comp, err := client.Chat.Completions.New(ctx, params)
		require.NoError(t, err)
		require.Equal(t, "tool_calls", comp.Choices[0].FinishReason)
		calls := comp.Choices[0].Message.ToolCalls
		require.Len(t, calls, 1)
		require.Equal(t, "call_1", calls[0].ID)
		require.Equal(t, "get_weather", calls[0].Function.Name)
		require.JSONEq(t, `{"city":"Paris"}`, calls[0].Function.Arguments)
		got := fake.Requests()[0]
		require.Len(t, got.Tools, 1)
		require.Equal(t, "get_weather", got.Tools[0].Name)

		// The caller runs it and continues.
		fake.Queue(llmtest.Reply{Text: "Sunny in Paris."})
		params.Messages = append(params.Messages, comp.Choices[0].Message.ToParam(), openai.ToolMessage(`{"sky":"sunny"}`, "call_1"))
		comp, err = client.Chat.Completions.New(ctx, params)
		require.NoError(t, err)
		require.Equal(t, "stop", comp.Choices[0].FinishReason)
		require.Equal(t, "Sunny in Paris.", comp.Choices[0].Message.Content)
		sent := fake.Requests()[1].Messages
		require.Len(t, sent, 3)
		require.Equal(t, []llm.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}, sent[1].ToolCalls)
		require.Equal(t, llm.RoleTool, sent[2].Role)
		require.Equal(t, []llm.ToolResult{{CallID: "call_1", Content: `{"sky":"sunny"}`}}, sent[2].Results)

		// Streamed, the calls come in the last chunk.
		fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "call_2", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}})
		params.Messages = params.Messages[:1]
		acc := streamed(t, client, ctx, params)
		require.Equal(t, "tool_calls", acc.Choices[0].FinishReason)
		require.Len(t, acc.Choices[0].Message.ToolCalls, 1)
		require.Equal(t, "call_2", acc.Choices[0].Message.ToolCalls[0].ID)
		require.JSONEq(t, `{"city":"Oslo"}`, acc.Choices[0].Message.ToolCalls[0].Function.Arguments)
		// An agent with tools of its own: TestOpenAIOwnAndCallerTools.
	})
}

// streamed is a streamed completion as the SDK puts its chunks together.
func streamed(t *testing.T, client *openai.Client, ctx context.Context, params openai.ChatCompletionNewParams) openai.ChatCompletionAccumulator {
	t.Helper()
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	require.NoError(t, stream.Err())
	return acc
}
