package llm_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
)

// tools are a tool with a schema and one without (nil Parameters).
var tools = []llm.Tool{
	{Name: "get_weather", Description: "The weather of a city",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":64}},"required":["city"]}`)},
	{Name: "now"},
}

// calls is what the model asks for in the tests.
var calls = []llm.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}, {ID: "call_2", Name: "now", Arguments: `{}`}}

// toolLoop is a conversation at its second step: the calls of the first
// and their results, one of them failed.
func toolLoop() []llm.Message {
	return []llm.Message{
		{Role: llm.RoleUser, Content: "weather and time?"},
		{Role: llm.RoleAssistant, Content: "Let me look.", ToolCalls: calls},
		{Role: llm.RoleTool, Results: []llm.ToolResult{{CallID: "call_1", Content: "sunny"}, {CallID: "call_2", Content: "clock broken", IsError: true}}},
	}
}

// eachFake runs test for every provider type, plain and streaming.
func eachFake(t *testing.T, test func(t *testing.T, f fake, streaming bool)) {
	for _, f := range fakes {
		for _, streaming := range []bool{false, true} {
			t.Run(f.typ+map[bool]string{true: "/stream"}[streaming], func(t *testing.T) {
				t.Parallel()
				test(t, f, streaming)
			})
		}
	}
}

// onDelta is a request's OnDelta when streaming, collecting into got.
func onDelta(streaming bool, got *[]string) func(string) {
	if !streaming {
		return nil
	}
	return func(d string) { *got = append(*got, d) }
}

func TestProvidersSendToolsAndReadCalls(t *testing.T) {
	t.Parallel()
	eachFake(t, func(t *testing.T, f fake, streaming bool) {
		s := f.server(t)
		s.Queue(llmtest.Reply{ToolCalls: calls})
		var deltas []string
		res, err := client(t, f, s).Complete(t.Context(), llm.Request{Model: "m", Tools: tools,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: "weather and time?"}}, OnDelta: onDelta(streaming, &deltas)})
		require.NoError(t, err)
		require.Equal(t, calls, res.ToolCalls)
		require.Equal(t, "tool_calls", res.FinishReason)
		require.Empty(t, res.Text)
		require.Empty(t, deltas)

		r := s.Requests()[0]
		require.Len(t, r.Tools, 2)
		require.Equal(t, "get_weather", r.Tools[0].Name)
		require.Equal(t, "The weather of a city", r.Tools[0].Description)
		require.JSONEq(t, string(tools[0].Parameters), string(r.Tools[0].Parameters))
		require.Equal(t, "now", r.Tools[1].Name)
		require.Empty(t, r.Tools[1].Description)
		require.JSONEq(t, `{"type":"object"}`, string(r.Tools[1].Parameters), "nil parameters: an object")
		require.Empty(t, r.ToolChoice, "auto is the providers' default: not sent")
	})
}

func TestProvidersReadTextWithCalls(t *testing.T) {
	t.Parallel()
	eachFake(t, func(t *testing.T, f fake, streaming bool) {
		s := f.server(t)
		s.Queue(llmtest.Reply{Text: "Let me look.", ToolCalls: calls[:1]})
		var deltas []string
		res, err := client(t, f, s).Complete(t.Context(), llm.Request{Model: "m", Tools: tools,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: "weather?"}}, OnDelta: onDelta(streaming, &deltas)})
		require.NoError(t, err)
		require.Equal(t, "Let me look.", res.Text)
		require.Equal(t, calls[:1], res.ToolCalls)
		require.Equal(t, "tool_calls", res.FinishReason)
		if streaming {
			require.Equal(t, "Let me look.", strings.Join(deltas, ""))
		}
	})
}

// TestProvidersSendToolTurns: the assistant's calls and the tool turn go
// as each API wants them (the fakes refuse them otherwise, as the vendors
// do): one tool message per result for OpenAI, one user message of
// tool_result blocks for Anthropic.
func TestProvidersSendToolTurns(t *testing.T) {
	t.Parallel()
	eachFake(t, func(t *testing.T, f fake, streaming bool) {
		s := f.server(t)
		s.SetReply("Sunny; no clock.")
		var deltas []string
		res, err := client(t, f, s).Complete(t.Context(), llm.Request{Model: "m", Tools: tools, ToolChoice: llm.ToolChoiceNone,
			Messages: toolLoop(), OnDelta: onDelta(streaming, &deltas)})
		require.NoError(t, err)
		require.Equal(t, "Sunny; no clock.", res.Text)
		require.Empty(t, res.ToolCalls)
		require.Equal(t, "stop", res.FinishReason)

		r := s.Requests()[0]
		require.Equal(t, "none", r.ToolChoice)
		want := toolLoop()
		results := want[2].Results
		if f.typ == llm.TypeAnthropic {
			require.Equal(t, want, r.Messages)
			require.Equal(t, llm.Message{Role: llm.RoleUser, Results: results}, r.Sent[2], "one user message")
			require.Len(t, r.Sent, 3)
			require.Contains(t, string(r.Body), `"is_error":true`)
		} else {
			results[1].IsError = false // OpenAI has no flag: the content says it
			require.Equal(t, want, r.Messages)
			require.Equal(t, []llm.Message{{Role: llm.RoleTool, Results: results[:1]}, {Role: llm.RoleTool, Results: results[1:]}},
				r.Sent[2:], "one tool message per result, in order")
		}
	})
}

// TestAnthropicSendsOddToolTurns: arguments that are not JSON (answered
// by the loop as that call's error) still make a tool_use block the API
// takes, and no text is no text block (the API refuses empty ones).
func TestAnthropicSendsOddToolTurns(t *testing.T) {
	t.Parallel()
	s := llmtest.NewAnthropic(t)
	msgs := toolLoop()
	msgs[1].Content = ""
	msgs[1].ToolCalls = []llm.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":`}, calls[1]}
	msgs[2].Results[0].Content = ""
	_, err := client(t, fakes[2], s).Complete(t.Context(), llm.Request{Model: "m", Tools: tools, Messages: msgs})
	require.NoError(t, err)
	r := s.Requests()[0]
	require.Equal(t, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{}`}, calls[1]}},
		r.Messages[1])
	require.Equal(t, msgs[2], r.Messages[2])
	require.NotContains(t, string(r.Body), `"text":""`)
}

// TestProvidersLoopThreeSteps: calls, calls again, then the answer, each
// step sending the whole conversation back.
func TestProvidersLoopThreeSteps(t *testing.T) {
	t.Parallel()
	eachFake(t, func(t *testing.T, f fake, streaming bool) {
		s := f.server(t)
		s.Queue(llmtest.Reply{ToolCalls: calls}, llmtest.Reply{ToolCalls: []llm.ToolCall{{Name: "now", Arguments: `{"tz":"UTC"}`}}},
			llmtest.Reply{Text: "It is noon and sunny."})
		c := client(t, f, s)
		req := llm.Request{Model: "m", Tools: tools, Messages: []llm.Message{{Role: llm.RoleUser, Content: "weather and time?"}}}
		var deltas []string
		req.OnDelta = onDelta(streaming, &deltas)
		var ids []string
		for step := range 3 {
			res, err := c.Complete(t.Context(), req)
			require.NoError(t, err, "step %d", step)
			if step == 2 {
				require.Equal(t, "It is noon and sunny.", res.Text)
				require.Empty(t, res.ToolCalls)
				break
			}
			require.NotEmpty(t, res.ToolCalls)
			tool := llm.Message{Role: llm.RoleTool}
			for _, tc := range res.ToolCalls {
				ids = append(ids, tc.ID)
				tool.Results = append(tool.Results, llm.ToolResult{CallID: tc.ID, Content: "result of " + tc.Name})
			}
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: res.Text, ToolCalls: res.ToolCalls}, tool)
		}
		require.Equal(t, []string{"call_1", "call_2", "call_llmtest_1"}, ids)
		reqs := s.Requests()
		require.Len(t, reqs, 3)
		require.Equal(t, req.Messages, reqs[2].Messages)
		// The assistant turns had no text: none is sent, not an empty one.
		require.NotContains(t, string(reqs[2].Body), `"text":""`)
		require.NotContains(t, string(reqs[2].Body), `"content":""`)
	})
}

// TestProvidersWithoutToolsSendAsBefore: a request without tools is the
// very body it was before tools existed: no tools, no tool_choice.
func TestProvidersWithoutToolsSendAsBefore(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		llm.TypeOpenAI: `{"messages":[{"content":"You are terse.","role":"system"},{"content":"first question","role":"user"},
			{"content":"first answer","role":"assistant"},{"content":"second question","role":"user"}],
			"model":"m-1","max_completion_tokens":123,"temperature":0.3}`,
		llm.TypeOpenAICompatible: `{"messages":[{"content":"You are terse.","role":"system"},{"content":"first question","role":"user"},
			{"content":"first answer","role":"assistant"},{"content":"second question","role":"user"}],
			"model":"m-1","max_tokens":123,"temperature":0.3}`,
		llm.TypeAnthropic: `{"max_tokens":123,"messages":[{"content":[{"text":"first question","type":"text"}],"role":"user"},
			{"content":[{"text":"first answer","type":"text"}],"role":"assistant"},{"content":[{"text":"second question","type":"text"}],"role":"user"}],
			"model":"m-1","system":[{"text":"You are terse.","type":"text"}],"temperature":0.3}`,
	}
	eachFake(t, func(t *testing.T, f fake, streaming bool) {
		s := f.server(t)
		req := history(nil)
		req.ToolChoice = llm.ToolChoiceNone // without tools, nothing to choose
		var deltas []string
		req.OnDelta = onDelta(streaming, &deltas)
		_, err := client(t, f, s).Complete(t.Context(), req)
		require.NoError(t, err)
		var body map[string]any
		require.NoError(t, json.Unmarshal(s.Requests()[0].Body, &body))
		if streaming {
			require.Equal(t, true, body["stream"])
			delete(body, "stream")
			delete(body, "stream_options")
		}
		got, err := json.Marshal(body)
		require.NoError(t, err)
		require.JSONEq(t, want[f.typ], string(got))
	})
}

// TestStreamedCallsAreBounded: a stream's calls count against
// MaxResponseBytes with its text, though each event is small enough.
func TestStreamedCallsAreBounded(t *testing.T) {
	t.Parallel()
	for _, f := range fakes {
		t.Run(f.typ, func(t *testing.T) {
			t.Parallel()
			s := f.server(t)
			big := `{"x":"` + strings.Repeat("a", llm.MaxResponseBytes/2) + `"}`
			s.Queue(llmtest.Reply{Text: "a few words", ToolCalls: []llm.ToolCall{{ID: "1", Name: "now", Arguments: big}, {ID: "2", Name: "now", Arguments: big}}})
			_, err := client(t, f, s).Complete(t.Context(), llm.Request{Model: "m", Tools: tools,
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, OnDelta: func(string) {}})
			require.ErrorIs(t, err, llm.ErrResponseTooLarge)
		})
	}
}

// TestOpenAIStreamBoundsCallsThenText: the bound holds whichever comes
// first, the calls or the text.
func TestOpenAIStreamBoundsCallsThenText(t *testing.T) {
	t.Parallel()
	s := llmtest.NewOpenAI(t)
	half := strings.Repeat("a", llm.MaxResponseBytes/2+1)
	s.SetRaw(http.StatusOK, "text/event-stream",
		`data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"now","arguments":"`+half+`"}}]}}]}`+"\n\n"+
			`data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"`+half+`"}}]}`+"\n\n"+
			"data: [DONE]\n\n")
	var deltas []string
	_, err := client(t, fakes[1], s).Complete(t.Context(), llm.Request{Model: "m", Tools: tools,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, OnDelta: onDelta(true, &deltas)})
	require.ErrorIs(t, err, llm.ErrResponseTooLarge)
	require.Empty(t, deltas)
}

// TestBadToolSchemaIsRefusedBeforeTheCall: parameters that are not a JSON
// object cannot be sent; the same request would fail again.
func TestBadToolSchemaIsRefusedBeforeTheCall(t *testing.T) {
	t.Parallel()
	for _, f := range fakes {
		t.Run(f.typ, func(t *testing.T) {
			t.Parallel()
			s := f.server(t)
			_, err := client(t, f, s).Complete(t.Context(), llm.Request{Model: "m",
				Tools:    []llm.Tool{{Name: "bad", Parameters: json.RawMessage(`["not","an","object"]`)}},
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			var le *llm.Error
			require.ErrorAs(t, err, &le)
			require.False(t, le.Transient)
			require.Contains(t, le.Message, `"bad"`)
			require.Zero(t, s.Calls())
		})
	}
}

// TestOpenAICompatibleCallsWithStop: some compatible servers answer calls
// with finish_reason "stop"; the calls are what counts.
func TestOpenAICompatibleCallsWithStop(t *testing.T) {
	t.Parallel()
	s := llmtest.NewOpenAI(t)
	s.SetRaw(http.StatusOK, "application/json", `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,
		"finish_reason":"stop","message":{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function",
		"function":{"name":"now","arguments":"{}"}}]}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	res, err := client(t, fakes[1], s).Complete(t.Context(), llm.Request{Model: "m", Tools: tools,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	require.Equal(t, []llm.ToolCall{{ID: "c", Name: "now", Arguments: "{}"}}, res.ToolCalls)
	require.Equal(t, "tool_calls", res.FinishReason)
}

// TestOpenAIStreamErrorEvent: an error event ends the stream as the
// provider's failure, after the text that came before it; an event after
// [DONE] is not read.
func TestOpenAIStreamErrorEvent(t *testing.T) {
	t.Parallel()
	s := llmtest.NewOpenAI(t)
	chunk := `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"par"}}]}` + "\n\n"
	s.SetRaw(http.StatusOK, "text/event-stream", chunk+`data: {"error":{"message":"overloaded","type":"server_error"}}`+"\n\n")
	var deltas []string
	_, err := client(t, fakes[1], s).Complete(t.Context(), llm.Request{Model: "m",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, OnDelta: onDelta(true, &deltas)})
	var le *llm.Error
	require.ErrorAs(t, err, &le)
	require.Equal(t, []string{"par"}, deltas)
	require.Contains(t, le.Message, "received error while streaming")
	require.Contains(t, le.Message, "overloaded")
	require.True(t, le.Transient, le.Message)

	s.SetRaw(http.StatusOK, "text/event-stream", chunk+"data: [DONE]\n\n"+`data: {"error":{"message":"after the end"}}`+"\n\n")
	deltas = nil
	res, err := client(t, fakes[1], s).Complete(t.Context(), llm.Request{Model: "m",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, OnDelta: onDelta(true, &deltas)})
	require.NoError(t, err)
	require.Equal(t, "par", res.Text)
}
