package openaicompat

import (
	"encoding/json"

	"github.com/agentplatform/agentplatform/internal/store"
)

// Model is one entry of GET /models.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is the answer of GET /models.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

// NewModel is agent's entry in the model list.
func NewModel(appSlug string, a *store.Agent) Model {
	owner := "agentplatform"
	if !a.IsSystem && appSlug != "" {
		owner = appSlug
	}
	return Model{ID: ModelID(appSlug, a), Object: "model", Created: a.CreatedAt.Unix(), OwnedBy: owner}
}

// Usage is OpenAI's token count (the LLM output_data's usage has the same
// names).
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// AnswerMessage is the assistant's message of a choice.
type AnswerMessage struct {
	Role string `json:"role"`
	// Content is null when the model only called tools.
	Content   *string    `json:"content"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// Choice is the one choice of a completion.
type Choice struct {
	Index        int           `json:"index"`
	Message      AnswerMessage `json:"message"`
	FinishReason string        `json:"finish_reason"`
}

// ChatCompletion is the answer of a non-streamed request.
type ChatCompletion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   Usage    `json:"usage"`
}

// Delta is a chunk's piece of the assistant's message.
type Delta struct {
	Role      string     `json:"role,omitempty"`
	Content   string     `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ChunkChoice is the one choice of a chunk.
type ChunkChoice struct {
	Index        int     `json:"index"`
	Delta        Delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// Chunk is one `data:` event of a streamed answer.
type Chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	// Usage is set on the usage chunk only (stream_options.include_usage),
	// whose choices are empty.
	Usage *Usage `json:"usage"`
}

// output is what an LLM activation's output_data holds that the answer
// needs.
type output struct {
	Response     string     `json:"response"`
	Usage        Usage      `json:"usage"`
	FinishReason string     `json:"finish_reason"`
	ToolCalls    []wireCall `json:"tool_calls"`
}

// calls are the output's tool calls in OpenAI's shape; indexed, for a
// chunk.
func (o output) calls(indexed bool) []ToolCall {
	var out []ToolCall
	for i, c := range o.ToolCalls {
		tc := ToolCall{ID: c.ID, Type: "function", Function: FunctionCall{Name: c.Name, Arguments: c.Arguments}}
		if indexed {
			tc.Index = &i
		}
		out = append(out, tc)
	}
	return out
}

// CompletionID is the answer's id: the activation's, recognisably.
func CompletionID(act *store.Activation) string { return "chatcmpl-" + act.ID }

// Completion is a completed activation as OpenAI's answer; model is what
// the caller asked for.
func Completion(act *store.Activation, model string) ChatCompletion {
	out := outputOf(act)
	msg := AnswerMessage{Role: "assistant", Content: &out.Response, ToolCalls: out.calls(false)}
	if out.Response == "" && len(msg.ToolCalls) > 0 {
		msg.Content = nil
	}
	return ChatCompletion{
		ID: CompletionID(act), Object: "chat.completion", Created: act.CreatedAt.Unix(), Model: model,
		Choices: []Choice{{Message: msg, FinishReason: out.FinishReason}},
		Usage:   out.Usage,
	}
}

func outputOf(act *store.Activation) output {
	var out output
	_ = json.Unmarshal(act.OutputData, &out)
	out.FinishReason = finishReason(out.FinishReason)
	if len(out.ToolCalls) > 0 {
		out.FinishReason = "tool_calls"
	}
	if out.Usage.TotalTokens == 0 {
		out.Usage.TotalTokens = out.Usage.PromptTokens + out.Usage.CompletionTokens
	}
	return out
}

// finishReason is a provider's reason in OpenAI's words: Anthropic's and
// the platform's own (step_limit) are mapped, an unknown one is stop.
func finishReason(r string) string {
	switch r {
	case "stop", "length", "tool_calls", "content_filter":
		return r
	case "max_tokens":
		return "length"
	default:
		return "stop"
	}
}

// Chunks makes a stream's chunks, all with the same id, time and model.
type Chunks struct {
	ID      string
	Created int64
	Model   string
}

// NewChunks starts the chunks of act's stream.
func NewChunks(act *store.Activation, model string) Chunks {
	return Chunks{ID: CompletionID(act), Created: act.CreatedAt.Unix(), Model: model}
}

func (c Chunks) chunk(choices []ChunkChoice, usage *Usage) Chunk {
	return Chunk{ID: c.ID, Object: "chat.completion.chunk", Created: c.Created, Model: c.Model, Choices: choices, Usage: usage}
}

// Role is the first chunk: the assistant's role, no content yet.
func (c Chunks) Role() Chunk {
	return c.chunk([]ChunkChoice{{Delta: Delta{Role: "assistant"}}}, nil)
}

// Token is the chunk of one fragment of the answer.
func (c Chunks) Token(text string) Chunk {
	return c.chunk([]ChunkChoice{{Delta: Delta{Content: text}}}, nil)
}

// Finish is the chunk after the last token, with the tool calls and the
// finish reason of the completed activation act.
func (c Chunks) Finish(act *store.Activation) Chunk {
	out := outputOf(act)
	return c.chunk([]ChunkChoice{{Delta: Delta{ToolCalls: out.calls(true)}, FinishReason: &out.FinishReason}}, nil)
}

// Usage is the last chunk when the request asked for it: no choices, the
// run's usage.
func (c Chunks) Usage(act *store.Activation) Chunk {
	u := outputOf(act).Usage
	return c.chunk([]ChunkChoice{}, &u)
}
