package llm

import (
	"context"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// OpenAIBaseURL is OpenAI's API; other OpenAI-compatible servers (Ollama,
// vLLM, llama.cpp, LM Studio…) are reached by their own base URL.
const OpenAIBaseURL = "https://api.openai.com/v1"

// openAIClient speaks the Chat Completions API.
type openAIClient struct {
	id   string
	name string // in errors
	chat openai.ChatCompletionService
	// legacyMaxTokens sends max_tokens, which every compatible server
	// understands; OpenAI itself wants max_completion_tokens (its reasoning
	// models refuse max_tokens).
	legacyMaxTokens bool
}

func newOpenAI(cfg Config) *openAIClient {
	base := cfg.BaseURL
	if base == "" {
		base = OpenAIBaseURL
	}
	// The service is built from our options only, not openai.NewClient's
	// defaults: those read OPENAI_* variables of the process environment,
	// which must not leak into users' providers.
	chat := openai.NewChatCompletionService(
		option.WithBaseURL(base),
		option.WithAPIKey(cfg.APIKey),
		option.WithHTTPClient(cfg.httpClient()),
		// The activation core retries transient failures with its own
		// backoff; SDK retries would multiply them and hide the count.
		option.WithMaxRetries(0),
	)
	return &openAIClient{id: cfg.ID, name: cfg.name(), chat: chat, legacyMaxTokens: cfg.Type != TypeOpenAI}
}

func (c *openAIClient) params(req Request) openai.ChatCompletionNewParams {
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			msgs = append(msgs, openai.SystemMessage(m.Content))
		case RoleAssistant:
			msgs = append(msgs, openai.AssistantMessage(m.Content))
		default:
			msgs = append(msgs, openai.UserMessage(m.Content))
		}
	}
	p := openai.ChatCompletionNewParams{Model: req.Model, Messages: msgs}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		if c.legacyMaxTokens {
			p.MaxTokens = openai.Int(int64(req.MaxTokens))
		} else {
			p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	return p
}

func (c *openAIClient) Complete(ctx context.Context, req Request) (*Response, error) {
	if req.OnDelta != nil {
		return c.stream(ctx, req)
	}
	a := &answer{}
	res, err := c.chat.New(ctx, c.params(req), option.WithMiddleware(a.middleware))
	if err != nil {
		return nil, a.fail(ctx, c.name, false, err)
	}
	// JSON that decodes is not yet a completion: any object does.
	if len(res.Choices) == 0 {
		return nil, a.notCompletion(c.name)
	}
	return &Response{Model: res.Model, Provider: c.id, Text: res.Choices[0].Message.Content,
		FinishReason: res.Choices[0].FinishReason, Usage: Usage{PromptTokens: int(res.Usage.PromptTokens),
			CompletionTokens: int(res.Usage.CompletionTokens), TotalTokens: int(res.Usage.TotalTokens)}}, nil
}

func (c *openAIClient) stream(ctx context.Context, req Request) (*Response, error) {
	p := c.params(req)
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	a := &answer{stream: true}
	s := c.chat.NewStreaming(ctx, p, option.WithMiddleware(a.middleware))
	defer s.Close()
	out := &Response{Model: req.Model, Provider: c.id}
	var text strings.Builder
	started := false // a chunk of a completion came: the answer is one
	for s.Next() {
		chunk := s.Current()
		started = started || chunk.JSON.Choices.Valid()
		if chunk.Model != "" {
			out.Model = chunk.Model
		}
		if chunk.JSON.Usage.Valid() {
			u := chunk.Usage
			out.Usage = Usage{PromptTokens: int(u.PromptTokens), CompletionTokens: int(u.CompletionTokens), TotalTokens: int(u.TotalTokens)}
		}
		if len(chunk.Choices) == 0 {
			continue
		}
		ch := chunk.Choices[0]
		if ch.FinishReason != "" {
			out.FinishReason = ch.FinishReason
		}
		if ch.Delta.Content != "" {
			if text.Len()+len(ch.Delta.Content) > MaxResponseBytes {
				return nil, tooLarge(c.name)
			}
			text.WriteString(ch.Delta.Content)
			req.OnDelta(ch.Delta.Content)
		}
	}
	if err := s.Err(); err != nil {
		return nil, a.fail(ctx, c.name, started, err)
	}
	if !started {
		return nil, a.notCompletion(c.name)
	}
	out.Text = text.String()
	return out, nil
}

// name is how errors call the provider.
func (cfg Config) name() string { return cmp(cfg.Name, cfg.ID) }

// httpClient is the client provider calls use: no overall timeout (the
// caller's context bounds each call, and a long streamed answer is fine).
func (cfg Config) httpClient() *http.Client {
	if cfg.HTTPClient != nil {
		return cfg.HTTPClient
	}
	return defaultHTTPClient
}

var defaultHTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
