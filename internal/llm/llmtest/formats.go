package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentplatform/agentplatform/internal/llm"
)

// openAI speaks the Chat Completions API.
type openAI struct{}

func (openAI) path() string { return "/v1/chat/completions" }

func (openAI) parse(body []byte, h http.Header) (Recorded, error) {
	var req struct {
		Model               string   `json:"model"`
		Temperature         *float64 `json:"temperature"`
		MaxTokens           int      `json:"max_tokens"`
		MaxCompletionTokens int      `json:"max_completion_tokens"`
		Stream              bool     `json:"stream"`
		Messages            []struct {
			Role    string  `json:"role"`
			Content content `json:"content"`
		} `json:"messages"`
	}
	rec := Recorded{Auth: h.Get("Authorization")}
	if err := json.Unmarshal(body, &req); err != nil {
		return rec, err
	}
	rec.Model, rec.Temperature, rec.Stream = req.Model, req.Temperature, req.Stream
	rec.MaxTokens = max(req.MaxTokens, req.MaxCompletionTokens)
	for _, m := range req.Messages {
		msg := llm.Message{Role: llm.Role(m.Role), Content: string(m.Content)}
		rec.Sent = append(rec.Sent, msg)
		switch m.Role {
		case "system", "developer":
			rec.System += string(m.Content)
		case "user", "assistant", "tool":
			rec.Messages = append(rec.Messages, msg)
		default:
			return rec, fmt.Errorf("messages: unknown role %q", m.Role)
		}
	}
	return rec, nil
}

func (openAI) writeError(w http.ResponseWriter, status int) {
	typ := map[int]string{400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
		429: "rate_limit_exceeded"}[status]
	if typ == "" {
		typ = "server_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": http.StatusText(status) + " (llmtest)", "type": typ, "param": nil, "code": nil}})
}

func openAIUsage(rec Recorded, completionWords int) map[string]any {
	p, c := promptWords(rec), completionWords
	return map[string]any{"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
}

func (openAI) writeJSON(w http.ResponseWriter, rec Recorded, reply string) {
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-llmtest", "object": "chat.completion", "created": time.Now().Unix(), "model": rec.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": reply, "refusal": nil}}},
		"usage": openAIUsage(rec, Words(reply)),
	})
}

func (openAI) writeStream(w http.ResponseWriter, rec Recorded, chunks []string, pause func(int)) {
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": created,
			"model": rec.Model, "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	sse(w, "", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	// Fragments keep their trailing spaces, so words never straddle two
	// chunks and counting per chunk counts the reply's words.
	words := 0
	for i, c := range chunks {
		pause(i)
		words += Words(c)
		sse(w, "", chunk(map[string]any{"content": c}, nil))
	}
	sse(w, "", chunk(map[string]any{}, "stop"))
	// The usage chunk has no choices, as with stream_options.include_usage.
	sse(w, "", map[string]any{"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": created,
		"model": rec.Model, "choices": []any{}, "usage": openAIUsage(rec, words)})
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
}

// anthropic speaks the Messages API.
type anthropic struct{}

func (anthropic) path() string { return "/v1/messages" }

func (anthropic) parse(body []byte, h http.Header) (Recorded, error) {
	var req struct {
		Model       string   `json:"model"`
		Temperature *float64 `json:"temperature"`
		MaxTokens   int      `json:"max_tokens"`
		Stream      bool     `json:"stream"`
		System      blocks   `json:"system"`
		Messages    []struct {
			Role    string  `json:"role"`
			Content content `json:"content"`
		} `json:"messages"`
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
	for _, m := range req.Messages {
		msg := llm.Message{Role: llm.Role(m.Role), Content: string(m.Content)}
		rec.Sent = append(rec.Sent, msg)
		rec.Messages = append(rec.Messages, msg)
		// The Messages API has no system turn: the system prompt is its
		// own parameter.
		if m.Role != "user" && m.Role != "assistant" {
			return rec, fmt.Errorf("messages: unknown role %q", m.Role)
		}
	}
	return rec, nil
}

func (anthropic) writeError(w http.ResponseWriter, status int) {
	typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}[status]
	if typ == "" {
		typ = "api_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error",
		"error": map[string]any{"type": typ, "message": http.StatusText(status) + " (llmtest)"}})
}

func (anthropic) writeJSON(w http.ResponseWriter, rec Recorded, reply string) {
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "msg_llmtest", "type": "message", "role": "assistant", "model": rec.Model,
		"content":     []any{map[string]any{"type": "text", "text": reply}},
		"stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": promptWords(rec), "output_tokens": Words(reply)},
	})
}

func (anthropic) writeStream(w http.ResponseWriter, rec Recorded, chunks []string, pause func(int)) {
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_llmtest", "type": "message", "role": "assistant", "model": rec.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": promptWords(rec), "output_tokens": 1}}})
	sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	sse(w, "ping", map[string]any{"type": "ping"})
	words := 0 // per chunk: see openAI.writeStream
	for i, c := range chunks {
		pause(i)
		words += Words(c)
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": c}})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": words}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}
