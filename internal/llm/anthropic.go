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
	id   string
	name string // in errors
	msg  anthropic.MessageService
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
	return &anthropicClient{id: cfg.ID, name: cfg.name(), msg: msg}
}

func (c *anthropicClient) params(req Request) anthropic.MessageNewParams {
	msgs := make([]anthropic.MessageParam, 0, len(req.Messages))
	// The Messages API has no system turn: the system prompt and every
	// system message, in order, are blocks of its system parameter.
	var system []anthropic.TextBlockParam
	if req.System != "" {
		system = append(system, anthropic.TextBlockParam{Text: req.System})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			system = append(system, anthropic.TextBlockParam{Text: m.Content})
		case RoleAssistant:
			msgs = append(msgs, anthropic.NewAssistantMessage(anthropic.NewTextBlock(m.Content)))
		default:
			msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Content)))
		}
	}
	p := anthropic.MessageNewParams{Model: anthropic.Model(req.Model), MaxTokens: anthropicMaxTokens, Messages: msgs, System: system}
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	if req.Temperature != nil {
		p.Temperature = anthropic.Float(*req.Temperature)
	}
	return p
}

func (c *anthropicClient) Complete(ctx context.Context, req Request) (*Response, error) {
	var msg *anthropic.Message
	if req.OnDelta != nil {
		a := &answer{stream: true}
		s := c.msg.NewStreaming(ctx, c.params(req), option.WithMiddleware(a.middleware))
		defer s.Close()
		msg = &anthropic.Message{}
		started := false // message_start came: the answer is a completion
		size := 0        // what Accumulate keeps, bounded like the text
		for s.Next() {
			ev := s.Current()
			started = started || ev.Type == "message_start"
			switch ev.Type {
			case "content_block_start":
				size += len(ev.ContentBlock.RawJSON())
			case "content_block_delta":
				d := ev.Delta
				size += len(d.Text) + len(d.PartialJSON) + len(d.Thinking) + len(d.Signature) + len(d.Citation.RawJSON())
			}
			if size > MaxResponseBytes {
				return nil, tooLarge(c.name)
			}
			if err := msg.Accumulate(ev); err != nil {
				return nil, a.fail(ctx, c.name, started, err)
			}
			if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
				req.OnDelta(ev.Delta.Text)
			}
		}
		if err := s.Err(); err != nil {
			return nil, a.fail(ctx, c.name, started, err)
		}
		if !started {
			return nil, a.notCompletion(c.name)
		}
	} else {
		a := &answer{}
		var err error
		if msg, err = c.msg.New(ctx, c.params(req), option.WithMiddleware(a.middleware)); err != nil {
			return nil, a.fail(ctx, c.name, false, err)
		}
		// JSON that decodes is not yet a completion: any object does.
		if !msg.JSON.Content.Valid() {
			return nil, a.notCompletion(c.name)
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
