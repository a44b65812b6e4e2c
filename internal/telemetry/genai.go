package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// The GenAI spans follow the OpenTelemetry semantic conventions for
// generative AI (semconv v1.40.0 of otel v1.47.0): operation names
// invoke_agent, chat and execute_tool, span names "<operation> <subject>",
// and gen_ai.* attributes.

// Span is one of the platform's spans; the zero Span (tracing off, or the
// span not sampled) does nothing, so call sites need no checks of their own.
type Span struct{ span trace.Span }

// start starts a span when tracing is on; off, ctx unchanged and no span.
func start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, Span) {
	s := current.Load()
	if s == nil {
		return ctx, Span{}
	}
	ctx, span := s.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	if !span.IsRecording() {
		return ctx, Span{}
	}
	return ctx, Span{span}
}

// Recording reports whether the span records (tracing on and sampled):
// callers build costly attributes only then.
func (s Span) Recording() bool { return s.span != nil }

// Capture reports whether message content may go on this span
// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true).
func (s Span) Capture() bool { return s.span != nil && CaptureContent() }

// Set adds attributes.
func (s Span) Set(attrs ...attribute.KeyValue) {
	if s.span != nil {
		s.span.SetAttributes(attrs...)
	}
}

// End ends the span, marking it failed with err's type when err is not nil
// (the message too: errors are the platform's own words, not content).
func (s Span) End(err error) {
	if s.span == nil {
		return
	}
	if err != nil {
		s.span.SetStatus(codes.Error, err.Error())
		s.span.SetAttributes(semconv.ErrorTypeKey.String(fmt.Sprintf("%T", err)))
	}
	s.span.End()
}

// StartJob starts the span of a run of background work that River does
// not run (the local fast path), named like otelriver's: "river.work/<kind>".
func StartJob(ctx context.Context, kind string) (context.Context, Span) {
	if current.Load() == nil {
		return ctx, Span{}
	}
	return start(ctx, "river.work/"+kind, trace.SpanKindConsumer, attribute.String("kind", kind))
}

// StartAgent starts the invoke_agent span of an agent's run (in process:
// kind internal).
func StartAgent(ctx context.Context, agentName, agentID string) (context.Context, Span) {
	if current.Load() == nil {
		return ctx, Span{}
	}
	return start(ctx, "invoke_agent "+agentName, trace.SpanKindInternal,
		semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(agentName), semconv.GenAIAgentID(agentID))
}

// StartChat starts the chat span of one LLM call to provider (the
// provider's type: openai, anthropic…) for model.
func StartChat(ctx context.Context, provider, model string) (context.Context, Span) {
	if current.Load() == nil {
		return ctx, Span{}
	}
	return start(ctx, "chat "+model, trace.SpanKindClient,
		semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(provider), semconv.GenAIRequestModel(model))
}

// SetConversation records the conversation (a chat id) the span belongs
// to, when there is one.
func (s Span) SetConversation(id string) {
	if id != "" {
		s.Set(semconv.GenAIConversationID(id))
	}
}

// ChatResult is what a chat span records of an answer.
type ChatResult struct {
	ResponseModel string
	FinishReason  string
	// InputTokens counts the cached ones too, as the convention does.
	InputTokens, OutputTokens         int
	CacheReadTokens, CacheWriteTokens int
}

// EndChat records an answer (nil: none, err says why) and ends the span.
func (s Span) EndChat(res *ChatResult, err error) {
	if s.span == nil {
		return
	}
	if res != nil {
		attrs := []attribute.KeyValue{semconv.GenAIUsageInputTokens(res.InputTokens), semconv.GenAIUsageOutputTokens(res.OutputTokens)}
		if res.ResponseModel != "" {
			attrs = append(attrs, semconv.GenAIResponseModel(res.ResponseModel))
		}
		if res.FinishReason != "" {
			attrs = append(attrs, semconv.GenAIResponseFinishReasons(res.FinishReason))
		}
		if res.CacheReadTokens > 0 {
			attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokens(res.CacheReadTokens))
		}
		if res.CacheWriteTokens > 0 {
			attrs = append(attrs, semconv.GenAIUsageCacheCreationInputTokens(res.CacheWriteTokens))
		}
		s.span.SetAttributes(attrs...)
	}
	s.End(err)
}

// StartTool starts the execute_tool span of one tool call; toolType is
// the convention's gen_ai.tool.type (function, extension, datastore).
func StartTool(ctx context.Context, name, callID, toolType string) (context.Context, Span) {
	if current.Load() == nil {
		return ctx, Span{}
	}
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(name), semconv.GenAIToolCallID(callID)}
	if toolType != "" {
		attrs = append(attrs, semconv.GenAIToolType(toolType))
	}
	return start(ctx, "execute_tool "+name, trace.SpanKindInternal, attrs...)
}

// Continue is base carrying from's span as its parent: work that runs
// apart from the request that started it (a local run) stays in the
// request's trace. Off, or without a span in from, base itself.
func Continue(base, from context.Context) context.Context {
	if current.Load() == nil {
		return base
	}
	sc := trace.SpanContextFromContext(from)
	if !sc.IsValid() {
		return base
	}
	return trace.ContextWithSpanContext(base, sc)
}
