package runtimes

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"slices"
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
	// Budgets is asked before every LLM call of a run; nil checks none.
	Budgets executor.Budgets
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
	_, callerTools, _, err := messagesOf(c.Input)
	if err != nil {
		return err
	}
	if len(callerTools) > 0 && bytes.Contains(c.Config, []byte(`"tools"`)) {
		if own, err := tool.ParseConfig(c.Config); err == nil && own != nil {
			// The names the config states; a name taken from a function,
			// an agent or an MCP server is checked when the run starts
			// (runLoop), where the tools are built.
			names := map[string]bool{}
			for _, s := range own.Tools {
				names[cmp.Or(s.Name, s.Function, s.Agent)] = true
			}
			if err := clashes(callerTools, names); err != nil {
				return err
			}
		}
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
	msgs, callerTools, hasMessages, err := messagesOf(run.Input)
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
			return e.runLoop(ctx, run, p, req, tools, callerTools)
		}
	}
	// The caller's tools are the caller's to run: a call ends the run.
	req.Tools = callerTools
	if err := e.allow(ctx, run); err != nil {
		return nil, err
	}
	res, err := e.Complete(ctx, p.Client, req)
	if err != nil {
		return nil, err
	}
	if res.Provider == "" {
		res.Provider = p.ProviderID
	}
	output := map[string]any{
		"response": res.Text, "model": res.Model, "provider": res.Provider,
		"usage": res.Usage, "finish_reason": res.FinishReason,
	}
	if len(res.ToolCalls) > 0 {
		output["tool_calls"] = res.ToolCalls
	}
	out, err := json.Marshal(output)
	if err != nil {
		return nil, err
	}
	return &executor.Result{Output: out, Usage: []*store.UsageRecord{Bill(res)}}, nil
}

// Bill is the usage record of an answer: its provider, model, tokens and
// cost, for the ledger; whoever records it says who spent it.
func Bill(res *llm.Response) *store.UsageRecord {
	u := res.Usage
	return &store.UsageRecord{Provider: res.Provider, Model: res.Model, InputTokens: int64(u.PromptTokens),
		OutputTokens: int64(u.CompletionTokens), CacheReadTokens: int64(u.CacheReadTokens),
		CacheWriteTokens: int64(u.CacheWriteTokens), CostMicroUSD: res.CostMicroUSD}
}

// allow asks the budgets whether run may make its next LLM call.
func (e *LLM) allow(ctx context.Context, run *executor.Run) error {
	if e.Budgets == nil {
		return nil
	}
	return e.Budgets.Allow(ctx, run)
}

// afterUsage hands recs, recorded, to the budgets: a budget they take past
// its warning line warns with them. A warning that fails is logged; the
// call is answered and recorded, the run goes on.
func (e *LLM) afterUsage(ctx context.Context, recs ...*store.UsageRecord) {
	if e.Budgets == nil {
		return
	}
	if err := e.Budgets.AfterUsage(ctx, recs...); err != nil {
		e.Log.Warn("budget warning failed", "user_id", recs[0].UserID, "err", err)
	}
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

// conversation is what a caller that holds the conversation sends in
// input_data (the OpenAI-compatible endpoint): messages instead of a
// prompt, and tools of its own, which it runs itself.
type conversation struct {
	Messages json.RawMessage `json:"messages"`
	Tools    []callerTool    `json:"tools"`
}

// callerTool is a tool of the caller's: when the model calls one, the run
// ends with the calls (finish_reason tool_calls) for the caller to run.
type callerTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// inputMessage is one turn of input_data.messages: an assistant turn may
// hold the tool calls it made, and a tool turn answers one of them.
type inputMessage struct {
	Role       *string        `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []llm.ToolCall `json:"tool_calls"`
	ToolCallID string         `json:"tool_call_id"`
}

// messagesOf reads input_data.messages, the whole conversation a caller
// may send instead of a prompt: [{role, content}], roles system, user,
// assistant (with tool_calls) or tool (with tool_call_id; consecutive ones
// make one turn of results), and the caller's tools. has is false when
// the input has no messages (most inputs: they are not decoded).
func messagesOf(input json.RawMessage) (msgs []llm.Message, tools []llm.Tool, has bool, err error) {
	if !bytes.Contains(input, []byte(`"messages"`)) {
		return nil, nil, false, nil
	}
	var in conversation
	if json.Unmarshal(input, &in) != nil || len(in.Messages) == 0 || string(in.Messages) == "null" {
		return nil, nil, false, nil
	}
	var raw []json.RawMessage
	if json.Unmarshal(in.Messages, &raw) != nil || len(raw) == 0 {
		return nil, nil, true, apperr.Invalid("input_data.messages", "Invalid value for field input_data.messages: expected a non-empty array of {role, content}")
	}
	for i, r := range raw {
		var m inputMessage
		field := fmt.Sprintf("input_data.messages[%d]", i)
		if json.Unmarshal(r, &m) != nil {
			return nil, nil, true, apperr.Invalid(field, "Invalid value for field "+field+": expected {role, content} with string values")
		}
		if m.Role == nil || (*m.Role != string(llm.RoleTool) && !llm.Role(*m.Role).Valid()) {
			return nil, nil, true, apperr.Invalid(field+".role", "Invalid value for field "+field+".role: expected system, user, assistant or tool")
		}
		role := llm.Role(*m.Role)
		switch {
		case role == llm.RoleTool:
			if m.ToolCallID == "" || m.Content == nil {
				return nil, nil, true, apperr.Invalid(field+".tool_call_id", "Missing required field: "+field+".tool_call_id (and content)")
			}
			res := llm.ToolResult{CallID: m.ToolCallID, Content: *m.Content}
			if n := len(msgs); n > 0 && msgs[n-1].Role == llm.RoleTool {
				msgs[n-1].Results = append(msgs[n-1].Results, res)
			} else {
				msgs = append(msgs, llm.Message{Role: llm.RoleTool, Results: []llm.ToolResult{res}})
			}
			continue
		case m.Content == nil && !(role == llm.RoleAssistant && len(m.ToolCalls) > 0):
			return nil, nil, true, apperr.Invalid(field+".content", "Missing required field: "+field+".content")
		case len(m.ToolCalls) > 0 && role != llm.RoleAssistant:
			return nil, nil, true, apperr.Invalid(field+".tool_calls", "Invalid value for field "+field+".tool_calls: only an assistant turn calls tools")
		}
		msg := llm.Message{Role: role, ToolCalls: m.ToolCalls}
		if m.Content != nil {
			msg.Content = *m.Content
		}
		msgs = append(msgs, msg)
	}
	for i, t := range in.Tools {
		field := fmt.Sprintf("input_data.tools[%d].name", i)
		if !toolName.MatchString(t.Name) {
			return nil, nil, true, apperr.Invalid(field, "Invalid value for field "+field+": expected ^[a-zA-Z0-9_-]{1,64}$")
		}
		if slices.ContainsFunc(tools, func(o llm.Tool) bool { return o.Name == t.Name }) {
			return nil, nil, true, apperr.Invalid(field, fmt.Sprintf("Invalid value for field %s: duplicate tool name %q", field, t.Name))
		}
		tools = append(tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return msgs, tools, true, nil
}

// clashes refuses a caller's tool named like one of the agent's own
// (own): the model could not tell them apart, nor the loop whose call it
// runs.
func clashes(callerTools []llm.Tool, own map[string]bool) error {
	for i, t := range callerTools {
		if own[t.Name] {
			field := fmt.Sprintf("input_data.tools[%d].name", i)
			return apperr.Invalid(field, fmt.Sprintf("Invalid value for field %s: the agent has a tool of its own named %q", field, t.Name))
		}
	}
	return nil
}

// toolName is what providers accept as a tool's name.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
