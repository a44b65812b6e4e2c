package llm

import (
	stdcmp "cmp"
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
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

func (c *openAIClient) params(req Request) (openai.ChatCompletionNewParams, error) {
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch {
		case m.Role == RoleSystem:
			msgs = append(msgs, openai.SystemMessage(m.Content))
		case m.Role == RoleAssistant && len(m.ToolCalls) > 0:
			msgs = append(msgs, openAIToolCalls(m))
		case m.Role == RoleAssistant:
			msgs = append(msgs, openai.AssistantMessage(m.Content))
		case m.Role == RoleTool:
			// One tool message per result, in call order: the API wants an
			// answer to every tool_call_id of the assistant turn before.
			for _, r := range m.Results {
				msgs = append(msgs, openai.ToolMessage(r.Content, r.CallID))
			}
		default:
			msgs = append(msgs, openai.UserMessage(m.Content))
		}
	}
	p := openai.ChatCompletionNewParams{Model: req.Model, Messages: msgs}
	// No tools: no "tools" nor "tool_choice" key, the request as it was
	// before tools (some compatible servers refuse an empty list).
	for _, t := range req.Tools {
		schema, err := t.schema()
		if err != nil {
			return p, err
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if len(req.Tools) > 0 && req.ToolChoice == ToolChoiceNone {
		p.ToolChoice.OfAuto = openai.String(string(openai.ChatCompletionToolChoiceOptionAutoNone))
	}
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
	return p, nil
}

// openAIToolCalls is an assistant turn that called tools: its calls, and
// its text when it had some.
func openAIToolCalls(m Message) openai.ChatCompletionMessageParamUnion {
	a := &openai.ChatCompletionAssistantMessageParam{}
	if m.Content != "" {
		a.Content.OfString = openai.String(m.Content)
	}
	for _, tc := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: tc.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments}}})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: a}
}

func (c *openAIClient) Complete(ctx context.Context, req Request) (*Response, error) {
	p, err := c.params(req)
	if err != nil {
		return nil, badTool(c.name, err)
	}
	if req.OnDelta != nil {
		return c.stream(ctx, req, p)
	}
	a := &answer{}
	res, err := c.chat.New(ctx, p, option.WithMiddleware(a.middleware))
	if err != nil {
		return nil, a.fail(ctx, c.name, false, err)
	}
	// JSON that decodes is not yet a completion: any object does.
	if len(res.Choices) == 0 {
		return nil, a.notCompletion(c.name)
	}
	msg := res.Choices[0].Message
	var calls []ToolCall
	for _, tc := range msg.ToolCalls {
		calls = append(calls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	out := &Response{Model: res.Model, Provider: c.id, Text: msg.Content,
		FinishReason: res.Choices[0].FinishReason, Usage: openAIUsage(res.Usage)}
	return out.withCalls(calls), nil
}

func (c *openAIClient) stream(ctx context.Context, req Request, p openai.ChatCompletionNewParams) (*Response, error) {
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	a := &answer{stream: true}
	s := c.newStream(ctx, p, option.WithMiddleware(a.middleware))
	defer s.Close()
	out := &Response{Model: req.Model, Provider: c.id}
	var text strings.Builder
	var calls streamedCalls
	started := false // a chunk of a completion came: the answer is one
	for s.Next() {
		chunk := s.Current()
		started = started || chunk.hasChoices
		if chunk.model != "" {
			out.Model = chunk.model
		}
		if chunk.usage != nil {
			out.Usage = *chunk.usage
		}
		if !chunk.hasChoice {
			continue
		}
		ch := &chunk.choice
		if ch.FinishReason != "" {
			out.FinishReason = ch.FinishReason
		}
		if ch.Delta.Content != "" {
			if text.Len()+calls.size+len(ch.Delta.Content) > MaxResponseBytes {
				return nil, tooLarge(c.name)
			}
			text.WriteString(ch.Delta.Content)
			req.OnDelta(ch.Delta.Content)
		}
		for _, d := range ch.Delta.ToolCalls {
			if text.Len()+calls.add(d) > MaxResponseBytes {
				return nil, tooLarge(c.name)
			}
		}
	}
	if err := s.Err(); err != nil {
		return nil, a.fail(ctx, c.name, started, err)
	}
	if !started {
		return nil, a.notCompletion(c.name)
	}
	out.Text = text.String()
	return out.withCalls(calls.list()), nil
}

// newStream is ChatCompletionService.NewStreaming with the chunks read as
// openAIChunk (openaichunk.go) rather than the SDK's ChatCompletionChunk:
// the same request (stream: true), the same event decoder and errors.
func (c *openAIClient) newStream(ctx context.Context, p openai.ChatCompletionNewParams, opts ...option.RequestOption) *chunkStream {
	var raw *http.Response
	opts = append(opts, option.WithJSONSet("stream", true), option.WithResponseBodyInto(&raw))
	_, err := c.chat.New(ctx, p, opts...)
	return &chunkStream{dec: ssestream.NewDecoder(raw), err: err}
}

// streamedCalls adds up the tool calls of a stream. Each call arrives in
// pieces under its index: the id and name first, then the arguments in
// fragments. (openai.ChatCompletionAccumulator does the same but keeps
// the whole text too, unbounded; the stream bounds it itself.)
type streamedCalls struct {
	calls []*streamedCall
	index map[int64]*streamedCall // by a delta's index
	size  int                     // bytes held, for MaxResponseBytes
}

// streamedCall is one call being added up; builders, as arguments may
// come in thousands of fragments.
type streamedCall struct {
	index      int64
	id         string
	name, args strings.Builder
}

// callOverhead is what one call counts against the bound besides its
// text: a stream of empty deltas under ever new indexes is bounded too.
const callOverhead = 64

// add takes one delta and returns the bytes held so far.
func (s *streamedCalls) add(d openAIChunkToolCall) int {
	tc, ok := s.index[d.Index]
	if !ok {
		if s.index == nil {
			s.index = map[int64]*streamedCall{}
		}
		tc = &streamedCall{index: d.Index}
		s.index[d.Index] = tc
		s.calls = append(s.calls, tc)
		s.size += callOverhead
	}
	if d.ID != "" {
		s.size += len(d.ID) - len(tc.id)
		tc.id = d.ID
	}
	tc.name.WriteString(d.Function.Name)
	tc.args.WriteString(d.Function.Arguments)
	s.size += len(d.Function.Name) + len(d.Function.Arguments)
	return s.size
}

// list is the calls in the order of their indexes.
func (s *streamedCalls) list() []ToolCall {
	slices.SortStableFunc(s.calls, func(a, b *streamedCall) int { return stdcmp.Compare(a.index, b.index) })
	var out []ToolCall
	for _, tc := range s.calls {
		out = append(out, ToolCall{ID: tc.id, Name: tc.name.String(), Arguments: tc.args.String()})
	}
	return out
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

var defaultHTTPClient = &http.Client{Transport: transport(0)}

// connBuffer is the read and the write buffer of a connection to a
// provider (Go's default is 4 KiB each). Every run waiting on an answer
// holds a connection of its own over HTTP/1.1, thousands at once, and a
// request or an answer is mostly a few hundred bytes; a longer one takes a
// few more system calls (and a body larger than the buffer bypasses it).
const connBuffer = 1 << 10

// transport is the transport of the system providers' calls: Go's default
// with small connection buffers (connBuffer) and, when idle > 0, that many
// idle connections kept, per host and in all.
func transport(idle int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ReadBufferSize, t.WriteBufferSize = connBuffer, connBuffer
	if idle > 0 {
		t.MaxIdleConns, t.MaxIdleConnsPerHost = idle, idle
	}
	return t
}

// openAIUsage is an answer's usage; prompt_tokens include the cached ones.
func openAIUsage(u openai.CompletionUsage) Usage {
	return Usage{PromptTokens: int(u.PromptTokens), CompletionTokens: int(u.CompletionTokens), TotalTokens: int(u.TotalTokens),
		CacheReadTokens: int(u.PromptTokensDetails.CachedTokens)}
}
