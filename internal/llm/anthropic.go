package llm

import (
	"context"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// AnthropicBaseURL is Anthropic's API (the SDK appends v1/messages).
const AnthropicBaseURL = "https://api.anthropic.com"

// anthropicMaxTokens is sent when a request names no limit: the Messages API
// requires one.
const anthropicMaxTokens = 4096

// anthropicClient speaks the Messages API.
type anthropicClient struct {
	id  string
	msg anthropic.MessageService
}

func newAnthropic(cfg Config) *anthropicClient {
	base := cfg.BaseURL
	if base == "" {
		base = AnthropicBaseURL
	}
	// Built from our options only: anthropic.NewClient's defaults read
	// ANTHROPIC_* variables and profile files of the process.
	msg := anthropic.NewMessageService(
		option.WithBaseURL(base),
		option.WithAPIKey(cfg.APIKey),
		option.WithHTTPClient(cfg.httpClient()),
		option.WithMaxRetries(0), // the activation core retries, see newOpenAI
	)
	return &anthropicClient{id: cfg.ID, msg: msg}
}

func (c *anthropicClient) params(req Request) anthropic.MessageNewParams {
	msgs := make([]anthropic.MessageParam, 0, len(req.Messages))
	for _, m := range req.Messages {
		if m.Role == RoleAssistant {
			msgs = append(msgs, anthropic.NewAssistantMessage(anthropic.NewTextBlock(m.Content)))
		} else {
			msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Content)))
		}
	}
	p := anthropic.MessageNewParams{Model: anthropic.Model(req.Model), MaxTokens: anthropicMaxTokens, Messages: msgs}
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	if req.Temperature != nil {
		p.Temperature = anthropic.Float(*req.Temperature)
	}
	return p
}

func (c *anthropicClient) Complete(ctx context.Context, req Request) (*Response, error) {
	var msg *anthropic.Message
	if req.OnDelta != nil {
		s := c.msg.NewStreaming(ctx, c.params(req))
		defer s.Close()
		msg = &anthropic.Message{}
		for s.Next() {
			ev := s.Current()
			if err := msg.Accumulate(ev); err != nil {
				return nil, classify(ctx, c.id, err)
			}
			if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
				req.OnDelta(ev.Delta.Text)
			}
		}
		if err := s.Err(); err != nil {
			return nil, classify(ctx, c.id, err)
		}
	} else {
		var err error
		if msg, err = c.msg.New(ctx, c.params(req)); err != nil {
			return nil, classify(ctx, c.id, err)
		}
	}
	var text strings.Builder
	for _, b := range msg.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	in, out := int(msg.Usage.InputTokens), int(msg.Usage.OutputTokens)
	return &Response{Text: text.String(), Model: string(msg.Model), Provider: c.id, FinishReason: finishReason(msg.StopReason),
		Usage: Usage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out}}, nil
}

// finishReason words Anthropic's stop reasons the way OpenAI does, so
// output_data reads the same whichever provider answered.
func finishReason(r anthropic.StopReason) string {
	switch r {
	case anthropic.StopReasonEndTurn, anthropic.StopReasonStopSequence:
		return "stop"
	case anthropic.StopReasonMaxTokens:
		return "length"
	case anthropic.StopReasonToolUse:
		return "tool_calls"
	}
	return string(r)
}
