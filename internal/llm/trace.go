package llm

import (
	"encoding/json"

	"github.com/agentplatform/agentplatform/internal/telemetry"
)

// Every call to a provider is a GenAI "chat {model}" span (when tracing is
// on): the provider's type, the models asked for and answered, the token
// usage and the finish reason; the messages only where content may be
// recorded. Wrapping the client (observe) makes every caller's calls
// spans alike: LLM agents, tool-loop steps, ctx.llm.complete and the
// OpenAI-compatible endpoint.

// chatResult is what the span records of an answer.
func chatResult(res *Response) *telemetry.ChatResult {
	if res == nil {
		return nil
	}
	return &telemetry.ChatResult{ResponseModel: res.Model, FinishReason: res.FinishReason,
		InputTokens: res.Usage.PromptTokens, OutputTokens: res.Usage.CompletionTokens,
		CacheReadTokens: res.Usage.CacheReadTokens, CacheWriteTokens: res.Usage.CacheWriteTokens}
}

// spanMessages is a request's conversation and an answer in the GenAI
// convention's shape, for content capture.
func spanMessages(req Request, res *Response) (in, out []telemetry.Message) {
	for _, m := range req.Messages {
		in = append(in, spanMessage(string(m.Role), m.Content, m.ToolCalls, m.Results, ""))
	}
	if res != nil {
		out = []telemetry.Message{spanMessage(string(RoleAssistant), res.Text, res.ToolCalls, nil, res.FinishReason)}
	}
	return in, out
}

func spanMessage(role, text string, calls []ToolCall, results []ToolResult, finish string) telemetry.Message {
	m := telemetry.Message{Role: role, FinishReason: finish}
	if text != "" {
		m.Parts = append(m.Parts, telemetry.Part{Type: "text", Content: text})
	}
	for _, c := range calls {
		m.Parts = append(m.Parts, telemetry.Part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: asJSON(c.Arguments)})
	}
	for _, r := range results {
		m.Parts = append(m.Parts, telemetry.Part{Type: "tool_call_response", ID: r.CallID, Response: r.Content})
	}
	if m.Parts == nil {
		m.Parts = []telemetry.Part{}
	}
	return m
}

// asJSON keeps arguments that are JSON as such, and quotes the rest (a
// model may write invalid JSON).
func asJSON(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}
