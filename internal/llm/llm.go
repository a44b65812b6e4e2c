// Package llm owns the language-model providers: the Client interface the
// platform calls, the system providers (echo, openai, anthropic) from the
// configuration, users' own providers, and the resolution of which provider
// and model an agent or activation uses.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentplatform/agentplatform/internal/pricing"
)

// MaxResponseBytes bounds what is read of one provider answer: a JSON
// body, one event of a stream, and the text a stream adds up to. A
// provider (or whatever a user's base_url points at) cannot make the
// platform hold more than that per call.
const MaxResponseBytes = 4 << 20

// ErrResponseTooLarge is the cause of an answer over MaxResponseBytes.
var ErrResponseTooLarge = errors.New("LLM response exceeds 4 MiB")

// Role of a chat message.
type Role string

// The roles. A system message reaches OpenAI-compatible providers as a
// system message in its place, and Anthropic in the request's system
// parameter (its Messages API has no system turn).
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// RoleTool is the turn that gives the model the results of the tool
// calls of the assistant turn before it. Only the tool loop makes one: it
// is not Valid in what a caller sends.
const RoleTool Role = "tool"

// Valid reports whether r is one of the roles a caller may send.
func (r Role) Valid() bool { return r == RoleSystem || r == RoleUser || r == RoleAssistant }

// Message is one turn of a conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the calls an assistant turn asked for, in its order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Results, in a RoleTool turn, are the results of every call of the
	// assistant turn before it, in call order. Providers send them as
	// their APIs want: one tool message per result (OpenAI), or one user
	// message of tool_result blocks (Anthropic answers 400 otherwise).
	Results []ToolResult `json:"tool_results,omitempty"`
}

// Tool is a tool the model may call. Providers hand it to their SDK's own
// type (openai.ChatCompletionFunctionToolParam, anthropic.ToolParam).
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments, an object schema;
	// nil is {"type":"object"}.
	Parameters json.RawMessage
}

// ToolCall is one call the model asked for: the fields every SDK's tool
// call has (OpenAI's tool_calls[i], Anthropic's tool_use block).
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text the model wrote, kept as written (OpenAI
	// sends it back as such; it may not even be valid JSON, which the
	// loop answers as that call's error).
	Arguments string `json:"arguments"`
}

// ToolResult is what a call gave, as text for the model.
type ToolResult struct {
	CallID  string `json:"tool_call_id"`
	Content string `json:"content"`
	// IsError marks a failed call (Anthropic's is_error; OpenAI has no
	// such flag and reads it from the content).
	IsError bool `json:"is_error,omitempty"`
}

// ToolChoice says whether the model may call tools.
type ToolChoice string

// The choices. The step limit's last step sends the tools with ToolChoice
// None: providers refuse a history of tool calls without tools.
const (
	ToolChoiceAuto ToolChoice = ""
	ToolChoiceNone ToolChoice = "none"
)

// Request is one completion.
type Request struct {
	Model       string
	System      string    // system prompt, before Messages; empty for none
	Messages    []Message // history first, the new prompt last; roles Valid
	Temperature *float64  // nil: the provider's default
	MaxTokens   int       // 0: the provider's default
	// Tools the model may call; none: a plain completion, sent exactly as
	// before tools existed.
	Tools      []Tool
	ToolChoice ToolChoice
	// OnDelta, when set, asks for streaming and receives each text
	// fragment as it arrives, in order, before Complete returns.
	OnDelta func(text string)
}

// Usage counts tokens. PromptTokens include the cached ones, read or
// written, as the OpenTelemetry GenAI conventions count input tokens
// (gen_ai.usage.input_tokens): OpenAI's prompt_tokens already do, and
// Anthropic's input_tokens, which do not, get its cache tokens added.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// CacheReadTokens were read from the provider's prompt cache (OpenAI's
	// prompt_tokens_details.cached_tokens, Anthropic's
	// cache_read_input_tokens); CacheWriteTokens were written to it
	// (Anthropic's cache_creation_input_tokens). 0 where not reported.
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// Tokens are u as package pricing counts them.
func (u Usage) Tokens() pricing.Tokens {
	return pricing.Tokens{Input: int64(u.PromptTokens), Output: int64(u.CompletionTokens),
		CacheRead: int64(u.CacheReadTokens), CacheWrite: int64(u.CacheWriteTokens)}
}

// Response is a completion's result.
type Response struct {
	Text         string
	Model        string
	Provider     string // the provider id, e.g. "echo", "openai", a user provider's id
	FinishReason string // "tool_calls" when ToolCalls is not empty
	Usage        Usage
	// CostMicroUSD is what the answer cost at its provider's prices
	// (package pricing); nil when its model has no price. The Service's
	// clients set it; a bare client leaves it nil.
	CostMicroUSD *int64
	// ToolCalls are the calls the model asked for, in its order.
	ToolCalls []ToolCall
}

// Client is a provider the platform can call. Implementations honour ctx:
// cancelling it interrupts the call.
type Client interface {
	Complete(ctx context.Context, req Request) (*Response, error)
}

// Error is a provider failure. Transient errors (429, 5xx, timeouts,
// connection failures) are worth retrying with backoff; the others are not.
type Error struct {
	Provider  string // the provider's name (its id when it has none)
	Status    int    // HTTP status, 0 when there was no answer
	Message   string
	Transient bool
	// Err is the underlying cause (for logs and errors.Is, e.g.
	// context.Canceled when the caller gave up); never shown to clients.
	Err error
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	if errors.Is(e.Err, ErrResponseTooLarge) {
		return fmt.Sprintf("%v (provider %s)", ErrResponseTooLarge, e.Provider)
	}
	if e.Status != 0 {
		return fmt.Sprintf("LLM provider %s answered %d: %s", e.Provider, e.Status, e.Message)
	}
	return fmt.Sprintf("LLM provider %s failed: %s", e.Provider, e.Message)
}
