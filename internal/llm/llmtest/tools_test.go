package llmtest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
)

// openAIToolsBody is a second step of a tool loop: the assistant's calls
// and their results, with the tools offered.
const openAIToolsBody = `{"model":"m","stream":%s,"tool_choice":"none",
	"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},
		{"type":"function","function":{"name":"now","parameters":{"type":"object"}}}],
	"messages":[{"role":"user","content":"weather in Paris?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
			{"id":"c2","type":"function","function":{"name":"now","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"sunny"},
		{"role":"tool","tool_call_id":"c2","content":"noon"}]}`

// toolTurns is openAIToolsBody's conversation as the llm package has it.
var toolTurns = []llm.Message{
	{Role: llm.RoleUser, Content: "weather in Paris?"},
	{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_weather", Arguments: `{"city":"Paris"}`}, {ID: "c2", Name: "now", Arguments: "{}"}}},
	{Role: llm.RoleTool, Results: []llm.ToolResult{{CallID: "c1", Content: "sunny"}, {CallID: "c2", Content: "noon"}}},
}

func TestOpenAIRecordsToolsAndScriptsCalls(t *testing.T) {
	t.Parallel()
	s := llmtest.NewOpenAI(t)
	s.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{{Name: "now", Arguments: `{"tz":"UTC"}`}}}, llmtest.Reply{Text: "done"})
	url := s.URL + "/chat/completions"

	status, body, err := post(t, t.Context(), url, strings.Replace(openAIToolsBody, "%s", "false", 1), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, body)
	var out struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	ch := out.Choices[0]
	require.Equal(t, "tool_calls", ch.FinishReason)
	require.Nil(t, ch.Message.Content)
	require.Len(t, ch.Message.ToolCalls, 1)
	require.Equal(t, "call_llmtest_1", ch.Message.ToolCalls[0].ID, "a call without an id gets one")
	require.Equal(t, "function", ch.Message.ToolCalls[0].Type)
	require.Equal(t, "now", ch.Message.ToolCalls[0].Function.Name)
	require.Equal(t, `{"tz":"UTC"}`, ch.Message.ToolCalls[0].Function.Arguments)

	r := s.Requests()[0]
	require.Equal(t, "none", r.ToolChoice)
	require.Len(t, r.Tools, 2)
	require.Equal(t, "get_weather", r.Tools[0].Name)
	require.Equal(t, "Weather", r.Tools[0].Description)
	require.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string"}}}`, string(r.Tools[0].Parameters))
	require.Equal(t, "now", r.Tools[1].Name)
	require.Equal(t, toolTurns, r.Messages, "the tool messages are one tool turn")
	require.Equal(t, []llm.Message{toolTurns[0], toolTurns[1],
		{Role: llm.RoleTool, Results: toolTurns[2].Results[:1]}, {Role: llm.RoleTool, Results: toolTurns[2].Results[1:]}},
		r.Sent, "as sent: one tool message per result")

	// The queue goes on in order, then back to the default.
	status, body, err = post(t, t.Context(), url, strings.Replace(openAIToolsBody, "%s", "false", 1), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `"content":"done"`)
	require.Contains(t, body, `"finish_reason":"stop"`)
	_, body, _ = post(t, t.Context(), url, strings.Replace(openAIToolsBody, "%s", "false", 1), nil)
	require.Contains(t, body, `"content":"reply to: weather in Paris?"`)
}

func TestOpenAIStreamsToolCallsInPieces(t *testing.T) {
	t.Parallel()
	s := llmtest.NewOpenAI(t)
	s.Queue(llmtest.Reply{Text: "let me see", ToolCalls: []llm.ToolCall{
		{ID: "a", Name: "get_weather", Arguments: `{"city":"Zürich"}`}, {ID: "b", Name: "now", Arguments: `{}`}}})
	status, body, err := post(t, t.Context(), s.URL+"/chat/completions", strings.Replace(openAIToolsBody, "%s", "true", 1), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	type call struct {
		ID       string
		Function struct{ Name, Arguments string }
	}
	calls := map[int]*call{}
	pieces := map[int]int{}
	var text strings.Builder
	finish := ""
	for _, d := range sseData(body) {
		if d == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index int `json:"index"`
						call
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(d), &c))
		if len(c.Choices) == 0 {
			continue
		}
		text.WriteString(c.Choices[0].Delta.Content)
		finish += c.Choices[0].FinishReason
		for _, tc := range c.Choices[0].Delta.ToolCalls {
			if calls[tc.Index] == nil {
				calls[tc.Index] = &call{}
			}
			got := calls[tc.Index]
			got.ID += tc.ID
			got.Function.Name += tc.Function.Name
			got.Function.Arguments += tc.Function.Arguments
			if tc.Function.Arguments != "" {
				pieces[tc.Index]++
			}
		}
	}
	require.Equal(t, "let me see", text.String())
	require.Equal(t, "tool_calls", finish)
	require.Len(t, calls, 2)
	require.Equal(t, "a", calls[0].ID)
	require.Equal(t, "get_weather", calls[0].Function.Name)
	require.Equal(t, `{"city":"Zürich"}`, calls[0].Function.Arguments)
	require.Equal(t, "b", calls[1].ID)
	require.Equal(t, `{}`, calls[1].Function.Arguments)
	require.Equal(t, 2, pieces[0], "arguments come in two pieces")
}

// TestOpenAIRefusesUnansweredCalls: like OpenAI, the fake answers 400 when
// a call of an assistant turn has no tool message right after it, or a
// tool message answers no call.
func TestOpenAIRefusesUnansweredCalls(t *testing.T) {
	t.Parallel()
	s := llmtest.NewOpenAI(t)
	for name, body := range map[string]string{
		"missing result": strings.Replace(strings.Replace(openAIToolsBody, "%s", "false", 1),
			`,
		{"role":"tool","tool_call_id":"c2","content":"noon"}`, "", 1),
		"user in between": strings.Replace(strings.Replace(openAIToolsBody, "%s", "false", 1),
			`{"role":"tool","tool_call_id":"c2"`, `{"role":"user","content":"hm"},{"role":"tool","tool_call_id":"c2"`, 1),
		"unknown id": strings.Replace(strings.Replace(openAIToolsBody, "%s", "false", 1), `"tool_call_id":"c2"`, `"tool_call_id":"c9"`, 1),
	} {
		status, answer, err := post(t, t.Context(), s.URL+"/chat/completions", body, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, status, name)
		require.Contains(t, answer, "tool", name)
	}
}

// anthropicToolsBody is openAIToolsBody for Anthropic; %s is the tool
// turn(s).
const anthropicToolsBody = `{"model":"m","max_tokens":9,"tool_choice":{"type":"none"},
	"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}},
		{"name":"now","input_schema":{"type":"object"}}],
	"messages":[{"role":"user","content":"weather in Paris?"},
		{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"get_weather","input":{"city":"Paris"}},
			{"type":"tool_use","id":"c2","name":"now","input":{}}]},
		%s]}`

const (
	oneResultMessage = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"sunny"}]},
		{"type":"tool_result","tool_use_id":"c2","content":"noon","is_error":false}]}`
	splitResults = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"sunny"}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"c2","content":"noon"}]}`
)

func TestAnthropicRecordsToolsAndScriptsCalls(t *testing.T) {
	t.Parallel()
	s := llmtest.NewAnthropic(t)
	s.SetToolCalls(llm.ToolCall{ID: "toolu_1", Name: "now", Arguments: `{"tz":"UTC"}`})
	url := s.URL + "/v1/messages"
	status, body, err := post(t, t.Context(), url, strings.Replace(anthropicToolsBody, "%s", oneResultMessage, 1), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, body)
	require.JSONEq(t, `[{"type":"tool_use","id":"toolu_1","name":"now","input":{"tz":"UTC"}}]`, gjsonContent(t, body))
	require.Contains(t, body, `"stop_reason":"tool_use"`)

	r := s.Requests()[0]
	require.Equal(t, "none", r.ToolChoice)
	require.Len(t, r.Tools, 2)
	require.Equal(t, "get_weather", r.Tools[0].Name)
	require.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string"}}}`, string(r.Tools[0].Parameters))
	require.Equal(t, toolTurns, r.Messages)
	require.Equal(t, llm.Message{Role: llm.RoleUser, Results: toolTurns[2].Results}, r.Sent[2], "as sent: one user message")
}

// gjsonContent is the content of an Anthropic answer, as JSON.
func gjsonContent(t *testing.T, body string) string {
	var m struct{ Content json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(body), &m))
	return string(m.Content)
}

// TestAnthropicRefusesSplitResults: like Anthropic, the fake answers 400
// when the results of an assistant turn's tool_use blocks are not all in
// the next message, or a request carries tool blocks without tools.
func TestAnthropicRefusesSplitResults(t *testing.T) {
	t.Parallel()
	s := llmtest.NewAnthropic(t)
	url := s.URL + "/v1/messages"
	for name, body := range map[string]string{
		"split":       strings.Replace(anthropicToolsBody, "%s", splitResults, 1),
		"missing":     strings.Replace(anthropicToolsBody, "%s", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"sunny"}]}`, 1),
		"text only":   strings.Replace(anthropicToolsBody, "%s", `{"role":"user","content":"sunny"}`, 1),
		"no tools":    strings.Replace(strings.Replace(anthropicToolsBody, "%s", oneResultMessage, 1), `"tools":[`, `"tool":[`, 1),
		"unknown id":  strings.Replace(strings.Replace(anthropicToolsBody, "%s", oneResultMessage, 1), `"tool_use_id":"c2"`, `"tool_use_id":"c9"`, 1),
		"no response": strings.Replace(anthropicToolsBody, ",\n\t\t%s", "", 1),
	} {
		status, answer, err := post(t, t.Context(), url, body, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, status, name)
		require.Contains(t, answer, `"invalid_request_error"`, name)
		require.Contains(t, answer, "tool", name)
	}
	status, answer, err := post(t, t.Context(), url, strings.Replace(anthropicToolsBody, "%s", oneResultMessage, 1), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, answer)
}

func TestAnthropicStreamsToolUseInPieces(t *testing.T) {
	t.Parallel()
	s := llmtest.NewAnthropic(t)
	s.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "a", Name: "get_weather", Arguments: `{"city":"Paris"}`}}})
	body := strings.Replace(strings.Replace(anthropicToolsBody, "%s", oneResultMessage, 1), `"max_tokens":9`, `"max_tokens":9,"stream":true`, 1)
	status, answer, err := post(t, t.Context(), s.URL+"/v1/messages", body, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, answer)
	var types []string
	var input strings.Builder
	for _, d := range sseData(answer) {
		var ev struct {
			Type         string `json:"type"`
			ContentBlock struct {
				Type, ID, Name string
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
		}
		require.NoError(t, json.Unmarshal([]byte(d), &ev))
		switch ev.Type {
		case "content_block_start":
			types = append(types, ev.ContentBlock.Type+":"+ev.ContentBlock.ID+":"+ev.ContentBlock.Name)
		case "content_block_delta":
			types = append(types, ev.Delta.Type)
			input.WriteString(ev.Delta.PartialJSON)
		case "message_delta":
			types = append(types, ev.Delta.StopReason)
		}
	}
	require.Equal(t, []string{"tool_use:a:get_weather", "input_json_delta", "input_json_delta", "tool_use"}, types,
		"no text block when the answer has no text")
	require.Equal(t, `{"city":"Paris"}`, input.String())
}
