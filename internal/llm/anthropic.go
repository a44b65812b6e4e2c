package llm

import (
	"context"
	"encoding/json"
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

func (c *anthropicClient) params(req Request) (anthropic.MessageNewParams, error) {
	msgs := make([]anthropic.MessageParam, 0, len(req.Messages))
	// The Messages API has no system turn: the system prompt and every
	// system message, in order, are blocks of its system parameter.
	var system []anthropic.TextBlockParam
	if req.System != "" {
		system = append(system, anthropic.TextBlockParam{Text: req.System})
	}
	for _, m := range req.Messages {
		switch {
		case m.Role == RoleSystem:
			system = append(system, anthropic.TextBlockParam{Text: m.Content})
		case m.Role == RoleAssistant && len(m.ToolCalls) > 0:
			msgs = append(msgs, anthropicToolUse(m))
		case m.Role == RoleAssistant:
			msgs = append(msgs, anthropic.NewAssistantMessage(anthropic.NewTextBlock(m.Content)))
		case m.Role == RoleTool:
			msgs = append(msgs, anthropicToolResults(m))
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
	for _, t := range req.Tools {
		schema, err := t.schema()
		if err != nil {
			return p, err
		}
		tool := anthropic.ToolUnionParamOfTool(anthropicSchema(schema), t.Name)
		if t.Description != "" {
			tool.OfTool.Description = anthropic.String(t.Description)
		}
		p.Tools = append(p.Tools, tool)
	}
	if len(req.Tools) > 0 && req.ToolChoice == ToolChoiceNone {
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
	}
	return p, nil
}

// anthropicSchema is a JSON Schema as the SDK's type holds it: its
// properties in their field, every other keyword but type (always
// "object") as an extra field.
func anthropicSchema(schema map[string]any) anthropic.ToolInputSchemaParam {
	s := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
	for k, v := range schema {
		if k != "type" && k != "properties" {
			s.ExtraFields[k] = v
		}
	}
	return s
}

// anthropicToolUse is an assistant turn that called tools: its text, when
// it had some (the API refuses empty text blocks), then a tool_use block
// per call.
func anthropicToolUse(m Message) anthropic.MessageParam {
	blocks := make([]anthropic.ContentBlockParamUnion, 0, len(m.ToolCalls)+1)
	if m.Content != "" {
		blocks = append(blocks, anthropic.NewTextBlock(m.Content))
	}
	for _, tc := range m.ToolCalls {
		// The model wrote the arguments; when they are not JSON (the loop
		// answered that call with an error) the block still needs an input.
		var input any = json.RawMessage(tc.Arguments)
		if !json.Valid([]byte(tc.Arguments)) {
			input = map[string]any{}
		}
		blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, input, tc.Name))
	}
	return anthropic.NewAssistantMessage(blocks...)
}

// anthropicToolResults is a tool turn as the API wants it: ONE user
// message with a tool_result block per call, in call order (results split
// over several messages are refused with a 400).
func anthropicToolResults(m Message) anthropic.MessageParam {
	blocks := make([]anthropic.ContentBlockParamUnion, 0, len(m.Results))
	for _, r := range m.Results {
		b := anthropic.NewToolResultBlock(r.CallID, r.Content, r.IsError)
		if r.Content == "" {
			b.OfToolResult.Content = nil // an empty text block is refused
		}
		blocks = append(blocks, b)
	}
	return anthropic.NewUserMessage(blocks...)
}

func (c *anthropicClient) Complete(ctx context.Context, req Request) (*Response, error) {
	p, err := c.params(req)
	if err != nil {
		return nil, badTool(c.name, err)
	}
	var msg *anthropic.Message
	if req.OnDelta != nil {
		a := &answer{stream: true}
		s := c.msg.NewStreaming(ctx, p, option.WithMiddleware(a.middleware))
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
		if msg, err = c.msg.New(ctx, p, option.WithMiddleware(a.middleware)); err != nil {
			return nil, a.fail(ctx, c.name, false, err)
		}
		// JSON that decodes is not yet a completion: any object does.
		if !msg.JSON.Content.Valid() {
			return nil, a.notCompletion(c.name)
		}
	}
	var text strings.Builder
	var calls []ToolCall
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			// Streamed, Accumulate has added the input_json_delta pieces up
			// into Input; a call without arguments keeps the start's {}.
			calls = append(calls, ToolCall{ID: b.ID, Name: b.Name, Arguments: cmp(string(b.Input), "{}")})
		}
	}
	// Anthropic's input_tokens leave out the cache's: they are added, so
	// that input counts every token of the prompt as OpenAI's does.
	read, write := int(msg.Usage.CacheReadInputTokens), int(msg.Usage.CacheCreationInputTokens)
	in, out := int(msg.Usage.InputTokens)+read+write, int(msg.Usage.OutputTokens)
	res := &Response{Text: text.String(), Model: string(msg.Model), Provider: c.id, FinishReason: finishReason(msg.StopReason),
		Usage: Usage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out, CacheReadTokens: read, CacheWriteTokens: write}}
	return res.withCalls(calls), nil
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
