package runtimes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/tool"
)

// ResolveFunc turns a provider_id ("" for the default) into its client, id
// and default model: llm.Service.Resolve.
type ResolveFunc func(ctx context.Context, userID, providerID string) (*llm.Resolved, error)

// LLM runs LLM agents: one completion, with the chat's earlier turns as
// history, transient provider errors retried while the run's time lasts.
type LLM struct {
	Resolve ResolveFunc
	Store   *store.Store
	Log     *slog.Logger
	// RetryBackoff is the first delay between retries of a transient
	// provider error (then doubled); ProviderRetries how many are made.
	RetryBackoff    time.Duration
	ProviderRetries int
	// Tools builds the tools of agents that have some; nil runs none.
	Tools *tool.Kit
}

// NewLLM returns the LLM executor with the default retries.
func NewLLM(resolve ResolveFunc, st *store.Store, log *slog.Logger) *LLM {
	return &LLM{Resolve: resolve, Store: st, Log: log, RetryBackoff: 500 * time.Millisecond, ProviderRetries: 3}
}

// Runtime is "llm".
func (e *LLM) Runtime() string { return executor.LLMRuntime }

// NeedsAgentKey: a completion never calls the platform back.
func (e *LLM) NeedsAgentKey() bool { return false }

// Validate checks that metadata.provider_id, if given, names a provider
// the caller may use, and that input_data.messages, if given, is a
// conversation.
func (e *LLM) Validate(ctx context.Context, c *executor.Check) error {
	if _, _, err := messagesOf(c.Input); err != nil {
		return err
	}
	pid, _ := c.Metadata["provider_id"].(string)
	if pid == "" {
		return nil
	}
	if _, err := e.Resolve(ctx, c.UserID, pid); err != nil {
		return prefixField(err, "metadata.")
	}
	return nil
}

// prefixField puts prefix before the field a validation error names.
func prefixField(err error, prefix string) error {
	if ae, ok := apperr.As(err); ok && ae.Kind == apperr.Validation && ae.Field != "" {
		field := prefix + ae.Field
		return apperr.Invalid(field, "Invalid value for field "+field+": "+ae.Detail)
	}
	return err
}

// llmConfig is an LLM agent's agent_config, overridden per activation by
// metadata.
type llmConfig struct {
	Model         string   `json:"model"`
	Temperature   *float64 `json:"temperature"`
	SystemMessage string   `json:"system_message"`
	SystemPrompt  string   `json:"system_prompt"` // metadata's name for it
	ProviderID    string   `json:"provider_id"`
	MaxTokens     int      `json:"max_tokens"`
}

// historyTurns bounds how many earlier turns of a chat are sent.
const historyTurns = 50

// Execute completes the run's prompt; its output_data is {response, model,
// provider, usage, finish_reason}. A provider's error comes back as the
// *llm.Error itself, unwrapped: its text (naming the provider and the
// status) is the activation's public error.
func (e *LLM) Execute(ctx context.Context, run *executor.Run) (*executor.Result, error) {
	res, err := e.execute(ctx, run)
	var pe *llm.Error
	if errors.As(err, &pe) {
		return nil, pe
	}
	return res, err
}

func (e *LLM) execute(ctx context.Context, run *executor.Run) (*executor.Result, error) {
	var cfg, meta llmConfig
	_ = json.Unmarshal(run.Config, &cfg)
	_ = json.Unmarshal(run.Metadata, &meta)
	if meta.ProviderID != "" {
		cfg.ProviderID = meta.ProviderID
	}
	if meta.Model != "" {
		cfg.Model = meta.Model
	}
	if meta.Temperature != nil {
		cfg.Temperature = meta.Temperature
	}
	if meta.MaxTokens > 0 {
		cfg.MaxTokens = meta.MaxTokens
	}
	if meta.SystemPrompt != "" {
		cfg.SystemMessage = meta.SystemPrompt
	}
	p, err := e.Resolve(ctx, run.UserID, cfg.ProviderID)
	if err != nil {
		return nil, err
	}
	if cfg.Model == "" {
		cfg.Model = p.DefaultModel
	}
	req := llm.Request{Model: cfg.Model, System: cfg.SystemMessage, Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens,
		OnDelta: run.OnDelta}
	msgs, hasMessages, err := messagesOf(run.Input)
	if err != nil {
		return nil, err
	}
	if hasMessages {
		// The caller holds the conversation (the OpenAI-compatible
		// endpoint): it is the request, with no prompt and no chat history.
		req.Messages = msgs
	} else if run.ChatID != "" {
		turns, err := e.Store.ActivationChatHistory(ctx, run.UserID, run.AgentID, run.ChatID, run.CreatedAt, historyTurns)
		if err != nil {
			return nil, err
		}
		for _, t := range turns {
			var out struct {
				Response string `json:"response"`
			}
			_ = json.Unmarshal(t.OutputData, &out)
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: promptOf(t.InputData)},
				llm.Message{Role: llm.RoleAssistant, Content: out.Response})
		}
	}
	if !hasMessages {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: promptOf(run.Input)})
	}

	// Most agents have no tools: they do not pay for parsing them.
	if bytes.Contains(run.Config, []byte(`"tools"`)) {
		tools, err := tool.ParseConfig(run.Config)
		if err != nil {
			return nil, err
		}
		if tools != nil && len(tools.Tools) > 0 {
			return e.runLoop(ctx, run, p, req, tools)
		}
	}
	res, err := e.Complete(ctx, p.Client, req)
	if err != nil {
		return nil, err
	}
	if res.Provider == "" {
		res.Provider = p.ProviderID
	}
	out, err := json.Marshal(map[string]any{
		"response": res.Text, "model": res.Model, "provider": res.Provider,
		"usage": res.Usage, "finish_reason": res.FinishReason,
	})
	if err != nil {
		return nil, err
	}
	return &executor.Result{Output: out}, nil
}

// Complete calls client, retrying transient provider errors with growing,
// jittered delays while ctx lasts. JavaScript's ctx.llm.complete uses it
// too, so both see providers alike.
func (e *LLM) Complete(ctx context.Context, client llm.Client, req llm.Request) (*llm.Response, error) {
	delay := e.RetryBackoff
	for attempt := 0; ; attempt++ {
		res, err := client.Complete(ctx, req)
		var pe *llm.Error
		if err == nil || ctx.Err() != nil || !errors.As(err, &pe) || !pe.Transient || attempt >= e.ProviderRetries {
			return res, err
		}
		wait := delay/2 + rand.N(delay)
		e.Log.Warn("transient provider error, retrying", "provider", pe.Provider, "status", pe.Status, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		delay *= 2
	}
}

// promptOf is the user message of an input: prompt (with additional_context
// appended), or the input's JSON when it has no prompt.
func promptOf(input json.RawMessage) string {
	var in struct {
		Prompt            string `json:"prompt"`
		AdditionalContext any    `json:"additional_context"`
	}
	if json.Unmarshal(input, &in) != nil || in.Prompt == "" {
		return string(input)
	}
	switch extra := in.AdditionalContext.(type) {
	case nil:
		return in.Prompt
	case string:
		return in.Prompt + "\n\n" + extra
	default:
		b, _ := json.Marshal(extra)
		return strings.TrimSpace(in.Prompt + "\n\n" + string(b))
	}
}

// messagesOf reads input_data.messages, the whole conversation a caller
// may send instead of a prompt: [{role, content}], roles system, user or
// assistant. has is false when the input has no messages (most inputs:
// they are not decoded).
func messagesOf(input json.RawMessage) (msgs []llm.Message, has bool, err error) {
	if !bytes.Contains(input, []byte(`"messages"`)) {
		return nil, false, nil
	}
	var in struct {
		Messages json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(input, &in) != nil || len(in.Messages) == 0 || string(in.Messages) == "null" {
		return nil, false, nil
	}
	var raw []json.RawMessage
	if json.Unmarshal(in.Messages, &raw) != nil || len(raw) == 0 {
		return nil, true, apperr.Invalid("input_data.messages", "Invalid value for field input_data.messages: expected a non-empty array of {role, content}")
	}
	msgs = make([]llm.Message, len(raw))
	for i, r := range raw {
		var m struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		}
		field := fmt.Sprintf("input_data.messages[%d]", i)
		if json.Unmarshal(r, &m) != nil {
			return nil, true, apperr.Invalid(field, "Invalid value for field "+field+": expected {role, content} with string values")
		}
		if m.Role == nil || !llm.Role(*m.Role).Valid() {
			return nil, true, apperr.Invalid(field+".role", "Invalid value for field "+field+".role: expected system, user or assistant")
		}
		if m.Content == nil {
			return nil, true, apperr.Invalid(field+".content", "Missing required field: "+field+".content")
		}
		msgs[i] = llm.Message{Role: llm.Role(*m.Role), Content: *m.Content}
	}
	return msgs, true, nil
}
