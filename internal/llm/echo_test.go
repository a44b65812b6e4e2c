package llm_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm"
)

// TestEchoCallsTools: lines `call <tool> <json arguments>` naming offered
// tools are calls; the results come back as the answer; ids stay unique
// over the conversation.
func TestEchoCallsTools(t *testing.T) {
	t.Parallel()
	echo := llm.Echo("echo")
	var deltas []string
	req := llm.Request{Model: "m", Tools: tools, OnDelta: func(d string) { deltas = append(deltas, d) },
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "call get_weather\t{\"city\": \"Paris\"}\n\n  call now  \n"}}}
	res, err := echo.Complete(t.Context(), req)
	require.NoError(t, err)
	first := []llm.ToolCall{{ID: "call_1_1", Name: "get_weather", Arguments: `{"city": "Paris"}`}, {ID: "call_1_2", Name: "now", Arguments: "{}"}}
	require.Equal(t, &llm.Response{Model: "echo", Provider: "echo", FinishReason: "tool_calls", ToolCalls: first,
		Usage: llm.Usage{PromptTokens: 6, CompletionTokens: 3, TotalTokens: 9}}, res)
	require.Empty(t, deltas, "a call has no text to stream")

	// The results: echoed, one per line, in call order.
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: res.ToolCalls},
		llm.Message{Role: llm.RoleTool, Results: []llm.ToolResult{{CallID: "call_1_1", Content: "sunny and warm"}, {CallID: "call_1_2", Content: "noon", IsError: true}}})
	res, err = echo.Complete(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, "echo: sunny and warm\nnoon", res.Text)
	require.Empty(t, res.ToolCalls)
	require.Equal(t, "stop", res.FinishReason)
	// Prompt: 6 words of the calls, 3 of their arguments, 4 of the results.
	require.Equal(t, llm.Usage{PromptTokens: 13, CompletionTokens: 5, TotalTokens: 18}, res.Usage)
	require.Equal(t, res.Text, strings.Join(deltas, ""), "streamed as text is")

	// A later turn's calls get ids of their own.
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: res.Text},
		llm.Message{Role: llm.RoleUser, Content: "call now {}"})
	req.OnDelta = nil
	res, err = echo.Complete(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, []llm.ToolCall{{ID: "call_2_1", Name: "now", Arguments: "{}"}}, res.ToolCalls)
}

// TestEchoCallsOnlyWhatIsOffered: a prompt that names a tool not offered,
// has a line that is no call, or comes with tools refused (ToolChoiceNone)
// or none at all, is echoed as text.
func TestEchoCallsOnlyWhatIsOffered(t *testing.T) {
	t.Parallel()
	for name, req := range map[string]llm.Request{
		"unknown tool": {Tools: tools, Messages: []llm.Message{{Role: llm.RoleUser, Content: "call now {}\ncall nope {}"}}},
		"not a call":   {Tools: tools, Messages: []llm.Message{{Role: llm.RoleUser, Content: "call now {}\nplease"}}},
		"no call":      {Tools: tools, Messages: []llm.Message{{Role: llm.RoleUser, Content: "calling now {}"}}},
		"choice none":  {Tools: tools, ToolChoice: llm.ToolChoiceNone, Messages: []llm.Message{{Role: llm.RoleUser, Content: "call now {}"}}},
		"no tools":     {Messages: []llm.Message{{Role: llm.RoleUser, Content: "call now {}"}}},
	} {
		res, err := llm.Echo("echo").Complete(t.Context(), req)
		require.NoError(t, err, name)
		require.Empty(t, res.ToolCalls, name)
		require.Equal(t, "stop", res.FinishReason, name)
		require.Equal(t, "echo: "+req.Messages[0].Content, res.Text, name)
	}
}
