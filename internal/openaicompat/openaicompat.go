// Package openaicompat is the OpenAI-compatible face of the platform's LLM
// agents (DESIGN §4 "OpenAI-compatible endpoint"): OpenAI's chat
// completion request, answer, chunk and error shapes, and the mapping
// between them and activations. It holds no HTTP routing: internal/api
// mounts it, so the front door (auth, rate limit, body limits) applies.
package openaicompat

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Prefix is the path under which the endpoint's routes live: an OpenAI
// SDK's base URL is {public_url}/api/v1/openai.
const Prefix = "/api/v1/openai/"

// Source is context.source of the activations the endpoint creates.
const Source = "openai"

// Message is one turn of a chat request: a system, user or assistant
// message. Content is a string or an array of text parts (OpenAI's SDKs
// send either).
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// ToolCalls are an assistant turn's calls of the caller's tools.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a tool turn answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is OpenAI's function tool call, in a request's assistant turn
// or in an answer.
type ToolCall struct {
	// Index is a chunk's place for the call (streams only).
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a tool call calls.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is OpenAI's function tool: one of the caller's, which the caller
// runs when the model calls it.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// StreamOptions are OpenAI's stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatRequest is the body of POST /chat/completions: the fields the
// platform reads; others are ignored.
type ChatRequest struct {
	Model               string         `json:"model"`
	Messages            []Message      `json:"messages"`
	Temperature         *float64       `json:"temperature"`
	MaxTokens           *int           `json:"max_tokens"`
	MaxCompletionTokens *int           `json:"max_completion_tokens"`
	Stream              bool           `json:"stream"`
	StreamOptions       *StreamOptions `json:"stream_options"`
	Tools               []Tool         `json:"tools"`
}

// turn is a message as the LLM runtime reads input_data.messages.
type turn struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []wireCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// wireCall is a tool call as the runtime keeps it (llm.ToolCall).
type wireCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// runtimeTool is a caller's tool as the runtime reads input_data.tools.
type runtimeTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ParseChatRequest decodes and checks body; errors are 400s naming the
// parameter at fault, as OpenAI's do.
func ParseChatRequest(body []byte) (*ChatRequest, error) {
	var r ChatRequest
	if err := json.Unmarshal(body, &r); err != nil {
		var te *json.UnmarshalTypeError
		if asTypeError(err, &te) && te.Field != "" {
			return nil, apperr.Invalid(te.Field, fmt.Sprintf("Invalid type for '%s': expected %s", te.Field, te.Type))
		}
		return nil, apperr.Invalid("", "We could not parse the JSON body of your request: "+err.Error())
	}
	if strings.TrimSpace(r.Model) == "" {
		return nil, apperr.Invalid("model", "Missing required parameter: 'model'.")
	}
	if len(r.Messages) == 0 {
		return nil, apperr.Invalid("messages", "Missing required parameter: 'messages'.")
	}
	for i, t := range r.Tools {
		if t.Type != "function" {
			param := fmt.Sprintf("tools[%d].type", i)
			return nil, apperr.Invalid(param, fmt.Sprintf("Invalid value for '%s': expected function.", param))
		}
		if t.Function.Name == "" {
			param := fmt.Sprintf("tools[%d].function.name", i)
			return nil, apperr.Invalid(param, fmt.Sprintf("Missing required parameter: '%s'.", param))
		}
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 2) {
		return nil, apperr.Invalid("temperature", "Invalid 'temperature': expected a number from 0 to 2.")
	}
	for _, p := range []struct {
		name string
		v    *int
	}{{"max_tokens", r.MaxTokens}, {"max_completion_tokens", r.MaxCompletionTokens}} {
		if p.v != nil && *p.v < 1 {
			return nil, apperr.Invalid(p.name, fmt.Sprintf("Invalid '%s': expected a positive integer.", p.name))
		}
	}
	for i := range r.Messages {
		if _, err := r.turn(i); err != nil {
			return nil, err
		}
	}
	return &r, nil
}

// asTypeError is errors.As for the one error type decoding names a field
// with.
func asTypeError(err error, te **json.UnmarshalTypeError) bool {
	t, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*te = t
	}
	return ok
}

// turn is message i as the runtime takes it: its role checked, its
// content's text parts joined.
func (r *ChatRequest) turn(i int) (turn, error) {
	m := r.Messages[i]
	switch m.Role {
	case "system", "user", "assistant", "tool":
	case "developer":
		m.Role = "system" // OpenAI's newer name for it
	default:
		param := fmt.Sprintf("messages[%d].role", i)
		return turn{}, apperr.Invalid(param, fmt.Sprintf("Invalid value for '%s': expected one of system, user, assistant, tool.", param))
	}
	text, ok := contentText(m.Content)
	if !ok {
		param := fmt.Sprintf("messages[%d].content", i)
		return turn{}, apperr.Invalid(param, fmt.Sprintf("Invalid value for '%s': expected a string or an array of text parts.", param))
	}
	t := turn{Role: m.Role, Content: &text}
	switch {
	case m.Role == "tool" && m.ToolCallID == "":
		param := fmt.Sprintf("messages[%d].tool_call_id", i)
		return turn{}, apperr.Invalid(param, fmt.Sprintf("Missing required parameter: '%s'.", param))
	case m.Role == "tool":
		t.ToolCallID = m.ToolCallID
	case len(m.ToolCalls) > 0 && m.Role != "assistant":
		param := fmt.Sprintf("messages[%d].tool_calls", i)
		return turn{}, apperr.Invalid(param, fmt.Sprintf("Invalid value for '%s': only an assistant message calls tools.", param))
	}
	for _, c := range m.ToolCalls {
		t.ToolCalls = append(t.ToolCalls, wireCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return t, nil
}

// contentText is a message's text: a string, null (an assistant turn
// that only called tools), or text parts joined.
func contentText(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", false
		}
		b.WriteString(p.Text)
	}
	return b.String(), true
}

// Activation is the activate call the request makes of agent (as Resolve
// returned it): its messages as input_data.messages (after the agent's
// system message), its overrides as metadata, context.source "openai".
func (r *ChatRequest) Activation(agent *store.Agent) activation.Request {
	turns := make([]turn, len(r.Messages))
	for i := range r.Messages {
		turns[i], _ = r.turn(i) // checked by ParseChatRequest
	}
	in := map[string]any{"messages": turns}
	if len(r.Tools) > 0 {
		tools := make([]runtimeTool, len(r.Tools))
		for i, t := range r.Tools {
			tools[i] = runtimeTool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters}
		}
		in["tools"] = tools
	}
	input, _ := json.Marshal(in)
	meta := map[string]any{}
	if r.Temperature != nil {
		meta["temperature"] = *r.Temperature
	}
	if n := r.maxTokens(); n > 0 {
		meta["max_tokens"] = float64(n) // as decoded JSON would have it
	}
	return activation.Request{AgentID: agent.ID, Agent: agent, InputData: input, Context: map[string]any{"source": Source}, Metadata: meta}
}

// maxTokens is max_completion_tokens, OpenAI's newer name, else
// max_tokens; 0 for neither.
func (r *ChatRequest) maxTokens() int {
	if r.MaxCompletionTokens != nil {
		return *r.MaxCompletionTokens
	}
	if r.MaxTokens != nil {
		return *r.MaxTokens
	}
	return 0
}

// IncludeUsage reports whether a stream ends with a usage chunk.
func (r *ChatRequest) IncludeUsage() bool {
	return r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}

// ModelID is an agent's model name: `<app slug>/<agent name>`, or a
// system agent's name.
func ModelID(appSlug string, a *store.Agent) string {
	if a.IsSystem || appSlug == "" {
		return a.Name
	}
	return appSlug + "/" + a.Name
}
