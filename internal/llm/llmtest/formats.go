package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentplatform/agentplatform/internal/llm"
)

// errorMessage is the message of a fake's error: the caller's, or the
// status text, marked as the fake's.
func errorMessage(status int, message string) string {
	if message == "" {
		message = http.StatusText(status)
	}
	return message + " (llmtest)"
}

// openAI speaks the Chat Completions API.
type openAI struct{}

func (openAI) path() string { return "/v1/chat/completions" }

// openAIMessage is a message of a Chat Completions request.
type openAIMessage struct {
	Role       string  `json:"role"`
	Content    content `json:"content"`
	ToolCallID string  `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (openAI) parse(body []byte, h http.Header) (Recorded, error) {
	var req struct {
		Model               string          `json:"model"`
		Temperature         *float64        `json:"temperature"`
		MaxTokens           int             `json:"max_tokens"`
		MaxCompletionTokens int             `json:"max_completion_tokens"`
		Stream              bool            `json:"stream"`
		Messages            []openAIMessage `json:"messages"`
		Tools               []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		ToolChoice json.RawMessage `json:"tool_choice"`
	}
	rec := Recorded{Auth: h.Get("Authorization")}
	if err := json.Unmarshal(body, &req); err != nil {
		return rec, err
	}
	rec.Model, rec.Temperature, rec.Stream = req.Model, req.Temperature, req.Stream
	rec.MaxTokens = max(req.MaxTokens, req.MaxCompletionTokens)
	for _, t := range req.Tools {
		if t.Type != "function" {
			return rec, fmt.Errorf("tools: unknown type %q", t.Type)
		}
		rec.Tools = append(rec.Tools, llm.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	rec.ToolChoice = toolChoice(req.ToolChoice)
	var open []string // the call ids of the last assistant turn still without a tool message
	for i, m := range req.Messages {
		msg := llm.Message{Role: llm.Role(m.Role), Content: string(m.Content)}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		if m.Role == "tool" {
			msg.Content = ""
			msg.Results = []llm.ToolResult{{CallID: m.ToolCallID, Content: string(m.Content)}}
		}
		rec.Sent = append(rec.Sent, msg)
		// As OpenAI: every call of an assistant turn is answered by a tool
		// message right after it, and a tool message answers one of them.
		if m.Role != "tool" && len(open) > 0 {
			return rec, fmt.Errorf("messages.%d: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; missing: %s",
				i, strings.Join(open, ", "))
		}
		switch m.Role {
		case "system", "developer":
			rec.System += string(m.Content)
		case "user", "assistant":
			rec.Messages = append(rec.Messages, msg)
			for _, c := range msg.ToolCalls {
				open = append(open, c.ID)
			}
		case "tool":
			at := slices.Index(open, m.ToolCallID)
			if at < 0 {
				return rec, fmt.Errorf("messages.%d: messages with role 'tool' must be a response to a preceding message with 'tool_calls'", i)
			}
			open = slices.Delete(open, at, at+1)
			// The llm package's shape: one tool turn with every result.
			if last := len(rec.Messages) - 1; rec.Messages[last].Role == llm.RoleTool {
				rec.Messages[last].Results = append(rec.Messages[last].Results, msg.Results...)
			} else {
				rec.Messages = append(rec.Messages, llm.Message{Role: llm.RoleTool, Results: msg.Results})
			}
		default:
			return rec, fmt.Errorf("messages: unknown role %q", m.Role)
		}
	}
	if len(open) > 0 {
		return rec, fmt.Errorf("messages: tool calls without tool messages: %s", strings.Join(open, ", "))
	}
	return rec, nil
}

// toolChoice is a tool_choice as Recorded has it: a string as is, an
// object by its type.
func toolChoice(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.Type
}

func (openAI) writeError(w http.ResponseWriter, status int, message string) {
	typ := map[int]string{400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
		429: "rate_limit_exceeded"}[status]
	if typ == "" {
		typ = "server_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": errorMessage(status, message), "type": typ, "param": nil, "code": nil}})
}

func openAIUsage(rec Recorded, reply Reply, completionWords int) map[string]any {
	p, c := promptWords(rec)+reply.CacheRead, completionWords
	u := map[string]any{"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
	if reply.CacheRead > 0 {
		u["prompt_tokens_details"] = map[string]any{"cached_tokens": reply.CacheRead}
	}
	return u
}

// anthropicUsage is the usage of an Anthropic answer: input_tokens leave
// out the cache's.
func anthropicUsage(rec Recorded, reply Reply, outputTokens int) map[string]any {
	u := map[string]any{"input_tokens": promptWords(rec), "output_tokens": outputTokens}
	if reply.CacheRead > 0 || reply.CacheWrite > 0 {
		u["cache_read_input_tokens"], u["cache_creation_input_tokens"] = reply.CacheRead, reply.CacheWrite
	}
	return u
}

// finish is the finish reason of a reply, in OpenAI's words.
func (r Reply) finish() string {
	if len(r.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (openAI) writeJSON(w http.ResponseWriter, rec Recorded, reply Reply) {
	msg := map[string]any{"role": "assistant", "content": reply.Text, "refusal": nil}
	if len(reply.ToolCalls) > 0 {
		calls := make([]any, 0, len(reply.ToolCalls))
		for _, c := range reply.ToolCalls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		msg["tool_calls"] = calls
		if reply.Text == "" {
			msg["content"] = nil // as OpenAI answers calls
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-llmtest", "object": "chat.completion", "created": time.Now().Unix(), "model": rec.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": reply.finish(), "logprobs": nil, "message": msg}},
		"usage":   openAIUsage(rec, reply, reply.words()),
	})
}

func (openAI) writeStream(w http.ResponseWriter, rec Recorded, reply Reply, pause func(int)) {
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": created,
			"model": rec.Model, "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	sse(w, "", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	// Fragments keep their trailing spaces, so words never straddle two
	// chunks and counting per chunk counts the reply's words.
	words := 0
	for i, c := range llm.Fragments(reply.Text) {
		pause(i)
		words += Words(c)
		sse(w, "", chunk(map[string]any{"content": c}, nil))
	}
	// A call comes under its index: id and name first, then its arguments
	// in pieces.
	for i, c := range reply.ToolCalls {
		delta := func(call map[string]any) {
			call["index"] = i
			sse(w, "", chunk(map[string]any{"tool_calls": []any{call}}, nil))
		}
		delta(map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}})
		for _, piece := range halves(c.Arguments) {
			delta(map[string]any{"function": map[string]any{"arguments": piece}})
		}
		words += Words(c.Arguments)
	}
	sse(w, "", chunk(map[string]any{}, reply.finish()))
	// The usage chunk has no choices, as with stream_options.include_usage.
	sse(w, "", map[string]any{"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": created,
		"model": rec.Model, "choices": []any{}, "usage": openAIUsage(rec, reply, words)})
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
}

// anthropic speaks the Messages API.
type anthropic struct{}

func (anthropic) path() string { return "/v1/messages" }

// anthropicBlocks is a message's content: a plain string (one text block)
// or a list of blocks.
type anthropicBlocks []struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   content         `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (bl *anthropicBlocks) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*bl = anthropicBlocks{{Type: "text", Text: s}}
		return nil
	}
	type list anthropicBlocks
	return json.Unmarshal(b, (*list)(bl))
}

// message is the blocks as one llm.Message of role: its texts joined, its
// tool_use blocks as calls, its tool_result blocks as results.
func (bl anthropicBlocks) message(role string) llm.Message {
	m := llm.Message{Role: llm.Role(role)}
	var text strings.Builder
	for _, b := range bl {
		switch b.Type {
		case "tool_use":
			m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
		case "tool_result":
			m.Results = append(m.Results, llm.ToolResult{CallID: b.ToolUseID, Content: string(b.Content), IsError: b.IsError})
		default:
			text.WriteString(b.Text)
		}
	}
	m.Content = text.String()
	return m
}

func (anthropic) parse(body []byte, h http.Header) (Recorded, error) {
	var req struct {
		Model       string   `json:"model"`
		Temperature *float64 `json:"temperature"`
		MaxTokens   int      `json:"max_tokens"`
		Stream      bool     `json:"stream"`
		System      blocks   `json:"system"`
		Messages    []struct {
			Role    string          `json:"role"`
			Content anthropicBlocks `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		ToolChoice json.RawMessage `json:"tool_choice"`
	}
	rec := Recorded{Auth: h.Get("X-Api-Key")}
	if err := json.Unmarshal(body, &req); err != nil {
		return rec, err
	}
	rec.Model, rec.Temperature, rec.Stream, rec.MaxTokens = req.Model, req.Temperature, req.Stream, req.MaxTokens
	rec.System = strings.Join(req.System, "")
	for _, b := range req.System {
		rec.Sent = append(rec.Sent, llm.Message{Role: "system", Content: b})
	}
	for _, t := range req.Tools {
		rec.Tools = append(rec.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	rec.ToolChoice = toolChoice(req.ToolChoice)
	var asked []string // the tool_use ids of the message before
	for i, m := range req.Messages {
		msg := m.Content.message(m.Role)
		rec.Sent = append(rec.Sent, msg)
		// The Messages API has no system turn: the system prompt is its
		// own parameter.
		if m.Role != "user" && m.Role != "assistant" {
			return rec, fmt.Errorf("messages: unknown role %q", m.Role)
		}
		// As Anthropic: the tool_use blocks of an assistant turn are all
		// answered in the very next message, and a tool_result answers one
		// of the turn before.
		var answered []string
		for _, r := range msg.Results {
			if !slices.Contains(asked, r.CallID) {
				return rec, fmt.Errorf("messages.%d.content: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
					"Each `tool_result` block must have a corresponding `tool_use` block in the previous message", i, r.CallID)
			}
			answered = append(answered, r.CallID)
		}
		if missing := slices.DeleteFunc(asked, func(id string) bool { return slices.Contains(answered, id) }); len(missing) > 0 {
			return rec, fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
				"Each `tool_use` block must have a corresponding `tool_result` block in the next message", i-1, strings.Join(missing, ", "))
		}
		asked = nil
		for _, c := range msg.ToolCalls {
			asked = append(asked, c.ID)
		}
		if (len(msg.ToolCalls) > 0 || len(msg.Results) > 0) && len(req.Tools) == 0 {
			return rec, fmt.Errorf("messages.%d: requests which include `tool_use` or `tool_result` blocks must define tools", i)
		}
		// The llm package's shape: a user turn of results is a tool turn.
		if len(msg.Results) > 0 {
			msg.Role = llm.RoleTool
		}
		rec.Messages = append(rec.Messages, msg)
	}
	if len(asked) > 0 {
		return rec, fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s",
			len(req.Messages)-1, strings.Join(asked, ", "))
	}
	return rec, nil
}

func (anthropic) writeError(w http.ResponseWriter, status int, message string) {
	typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}[status]
	if typ == "" {
		typ = "api_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error",
		"error": map[string]any{"type": typ, "message": errorMessage(status, message)}})
}

// stopReason is the stop reason of a reply, in Anthropic's words.
func (r Reply) stopReason() string {
	if len(r.ToolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// input is a call's arguments as a tool_use block's input, which must be
// a JSON object.
func input(c llm.ToolCall) json.RawMessage {
	if !json.Valid([]byte(c.Arguments)) {
		return json.RawMessage("{}")
	}
	return json.RawMessage(c.Arguments)
}

func (anthropic) writeJSON(w http.ResponseWriter, rec Recorded, reply Reply) {
	var content []any
	if reply.Text != "" || len(reply.ToolCalls) == 0 {
		content = append(content, map[string]any{"type": "text", "text": reply.Text})
	}
	for _, c := range reply.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input(c)})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "msg_llmtest", "type": "message", "role": "assistant", "model": rec.Model,
		"content": content, "stop_reason": reply.stopReason(), "stop_sequence": nil,
		"usage": anthropicUsage(rec, reply, reply.words()),
	})
}

func (anthropic) writeStream(w http.ResponseWriter, rec Recorded, reply Reply, pause func(int)) {
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_llmtest", "type": "message", "role": "assistant", "model": rec.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": anthropicUsage(rec, reply, 1)}})
	index := 0 // of the content block
	delta := func(d map[string]any) {
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d})
	}
	stop := func() {
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	words := 0 // per chunk: see openAI.writeStream
	if reply.Text != "" || len(reply.ToolCalls) == 0 {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse(w, "ping", map[string]any{"type": "ping"})
		for i, c := range llm.Fragments(reply.Text) {
			pause(i)
			words += Words(c)
			delta(map[string]any{"type": "text_delta", "text": c})
		}
		stop()
	}
	// A call is a tool_use block whose input comes in input_json_delta
	// pieces.
	for _, c := range reply.ToolCalls {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		for _, piece := range halves(string(input(c))) {
			delta(map[string]any{"type": "input_json_delta", "partial_json": piece})
		}
		words += Words(c.Arguments)
		stop()
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": reply.stopReason(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": words}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}
