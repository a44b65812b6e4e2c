package telemetry

import (
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// Message content goes on spans only when CaptureContent allows it: it is
// users' data (prompts, answers, tool arguments), and a tracing backend is
// usually not where it may be kept. The shapes are the GenAI convention's
// JSON for gen_ai.input.messages and gen_ai.output.messages.

// Message is one message of a conversation.
type Message struct {
	Role         string `json:"role"`
	Parts        []Part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// Part is a message's part: text, a tool call or a tool call's response.
type Part struct {
	Type      string          `json:"type"` // text, tool_call, tool_call_response
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  any             `json:"response,omitempty"`
}

// Text is a message of one text part.
func Text(role, text string) Message {
	return Message{Role: role, Parts: []Part{{Type: "text", Content: text}}}
}

// SetContent records the system instructions, input and output messages
// when content capture is on (empty ones are left out); off, nothing, and
// the caller should not have built them (see Capture).
func (s Span) SetContent(system string, input, output []Message) {
	if !s.Capture() {
		return
	}
	var attrs []attribute.KeyValue
	if system != "" {
		attrs = append(attrs, semconv.GenAISystemInstructionsKey.String(jsonString([]Part{{Type: "text", Content: system}})))
	}
	if len(input) > 0 {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(jsonString(input)))
	}
	if len(output) > 0 {
		attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(jsonString(output)))
	}
	s.Set(attrs...)
}

// EndTool ends an execute_tool span, with the call's arguments and result
// when content capture is on.
func (s Span) EndTool(arguments string, result []byte, err error) {
	if s.Capture() {
		var attrs []attribute.KeyValue
		if arguments != "" {
			attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(arguments))
		}
		if len(result) > 0 {
			attrs = append(attrs, semconv.GenAIToolCallResultKey.String(string(result)))
		}
		s.Set(attrs...)
	}
	s.End(err)
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
