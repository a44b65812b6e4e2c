package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// objectSchema is the schema of a tool whose Parameters are nil: one that
// takes no arguments (both APIs require an object schema).
var objectSchema = json.RawMessage(`{"type":"object"}`)

// schema decodes a tool's Parameters into the map both SDKs take. (Not
// with json.Number: the SDKs' encoders would send the numbers as strings.)
func (t Tool) schema() (map[string]any, error) {
	raw := t.Parameters
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = objectSchema
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("tool %q: parameters are not a JSON object", t.Name)
	}
	return m, nil
}

// badTool is the error of a request whose tool cannot be sent: the caller's
// mistake, and the same request would fail again.
func badTool(provider string, err error) *Error {
	return &Error{Provider: provider, Message: err.Error(), Err: err}
}

// withCalls sets a response's tool calls and, when there are any, its
// finish reason: some OpenAI-compatible servers answer calls with "stop",
// and the loop reads "tool_calls" whichever provider answered.
func (r *Response) withCalls(calls []ToolCall) *Response {
	if len(calls) > 0 {
		r.ToolCalls, r.FinishReason = calls, "tool_calls"
	}
	return r
}
