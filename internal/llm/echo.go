package llm

import (
	"context"
	"strings"
)

// echo is the system provider that needs no network: deterministic answers
// for development, tests and demos.
type echo struct{ id string }

// Echo returns the echo provider, reporting itself as provider id.
func Echo(id string) Client { return echo{id: id} }

func (e echo) Complete(ctx context.Context, req Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, cancelled(e.id, err)
	}
	text := "echo: " + lastUserMessage(req.Messages)
	if req.OnDelta != nil {
		for _, frag := range Fragments(text) {
			if err := ctx.Err(); err != nil {
				return nil, cancelled(e.id, err)
			}
			req.OnDelta(frag)
		}
	}
	prompt := words(req.System)
	for _, m := range req.Messages {
		prompt += words(m.Content)
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
