package llm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// echo is the system provider that needs no network: deterministic answers
// for development, tests and demos. It calls tools too: a prompt whose
// lines are all `call <tool> <json arguments>` naming offered tools asks
// for those calls, and a tool turn is answered `echo: ` and its results.
type echo struct{ id string }

// Echo returns the echo provider, reporting itself as provider id.
func Echo(id string) Client { return echo{id: id} }

func (e echo) Complete(ctx context.Context, req Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, cancelled(e.id, err)
	}
	prompt := words(req.System)
	for _, m := range req.Messages {
		prompt += words(m.Content) + argumentWords(m.ToolCalls)
		for _, r := range m.Results {
			prompt += words(r.Content)
		}
	}
	if calls := echoCalls(req); calls != nil {
		completion := argumentWords(calls)
		return &Response{Model: "echo", Provider: e.id, FinishReason: "tool_calls", ToolCalls: calls,
			Usage: Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}}, nil
	}
	text := "echo: " + lastUserMessage(req.Messages)
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == RoleTool {
		results := make([]string, 0, len(req.Messages[n-1].Results))
		for _, r := range req.Messages[n-1].Results {
			results = append(results, r.Content)
		}
		text = "echo: " + strings.Join(results, "\n")
	}
	if req.OnDelta != nil {
		for _, frag := range Fragments(text) {
			if err := ctx.Err(); err != nil {
				return nil, cancelled(e.id, err)
			}
			req.OnDelta(frag)
		}
	}
	completion := words(text)
	return &Response{Text: text, Model: "echo", Provider: e.id, FinishReason: "stop",
		Usage: Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}}, nil
}

// Fragments splits text into word-sized pieces that keep their trailing
// spaces, so the pieces concatenate back to text: how echo and the test
// servers stream.
func Fragments(text string) []string {
	var out []string
	for _, f := range strings.SplitAfter(text, " ") {
		if f == "" {
			continue
		}
		if f == " " && len(out) > 0 {
			out[len(out)-1] += f
			continue
		}
		out = append(out, f)
	}
	return out
}

func words(s string) int { return len(strings.Fields(s)) }

func lastUserMessage(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser {
			return msgs[i].Content
		}
	}
	return ""
}

// echoCalls is the calls the request's last message asks for, nil for
// none: it is a user message whose every (non-blank) line is `call <tool>
// [<arguments>]`, every tool offered and calls allowed. The arguments are
// kept as written (no arguments: {}), JSON or not, so a test can make the
// model write bad ones. Ids are unique in the conversation: call_<n>_<i>
// for the i-th call of the n-th assistant turn that calls tools.
func echoCalls(req Request) []ToolCall {
	n := len(req.Messages)
	if n == 0 || req.Messages[n-1].Role != RoleUser || len(req.Tools) == 0 || req.ToolChoice == ToolChoiceNone {
		return nil
	}
	turn := 1
	for _, m := range req.Messages {
		if m.Role == RoleAssistant && len(m.ToolCalls) > 0 {
			turn++
		}
	}
	var calls []ToolCall
	for line := range strings.Lines(req.Messages[n-1].Content) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		rest, ok := strings.CutPrefix(line, "call ")
		if !ok {
			return nil
		}
		rest = strings.TrimSpace(rest)
		name, args := rest, ""
		if i := strings.IndexFunc(rest, unicode.IsSpace); i >= 0 {
			name, args = rest[:i], rest[i:]
		}
		if !slices.ContainsFunc(req.Tools, func(t Tool) bool { return t.Name == name }) {
			return nil
		}
		calls = append(calls, ToolCall{ID: fmt.Sprintf("call_%d_%d", turn, len(calls)+1), Name: name,
			Arguments: cmp(strings.TrimSpace(args), "{}")})
	}
	return calls
}

// argumentWords counts the words of the calls' arguments.
func argumentWords(calls []ToolCall) int {
	n := 0
	for _, c := range calls {
		n += words(c.Arguments)
	}
	return n
}
