// Package telemetry is the platform's OpenTelemetry tracing: off unless the
// standard OTEL_* variables ask for it, and then HTTP server spans, job
// spans, GenAI spans (invoke_agent, chat, execute_tool with gen_ai.*
// attributes) and a W3C traceparent on every outbound call made through
// the egress guard.
//
// Configuration is the SDK's own, from the environment: an exporter
// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// turns tracing on; OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none
// keeps it off; OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_* and OTEL_EXPORTER_OTLP_* (headers,
// timeout, compression) are read by the SDK. Traces go out over OTLP/HTTP
// (protobuf). Prompts, answers and tool arguments are recorded only with
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
//
// Off, everything here is a check of one atomic pointer: no tracer, no
// span, no context allocated, handlers and transports left unwrapped, so
// the platform pays nothing for tracing it does not do.
//
// The state is the process's (like OpenTelemetry's own global provider):
// Setup installs it and Tracing.Stop removes it.
package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentplatform/agentplatform/internal/version"
)

// ScopeName names the platform's own spans' instrumentation scope.
const ScopeName = "github.com/agentplatform/agentplatform"

// CaptureVariable is the GenAI convention's switch for recording message
// content (prompts, answers, tool arguments and results) on spans.
const CaptureVariable = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// state is what an enabled process traces with.
type state struct {
	tp      *sdktrace.TracerProvider
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	capture bool
	prev    trace.TracerProvider // the global provider before Setup
	users   int                  // Tracings sharing it (under mu)
}

// current is the installed state, nil when tracing is off; mu orders its
// installs and removals.
var (
	current atomic.Pointer[state]
	mu      sync.Mutex
)

// Enabled reports whether this process exports traces.
func Enabled() bool { return current.Load() != nil }

// CaptureContent reports whether spans may carry message content.
func CaptureContent() bool {
	s := current.Load()
	return s != nil && s.capture
}

// Tracing is the tracer provider of an enabled process, a lifecycle
// service: Start does nothing (Setup already installed it, so that the
// parts built after it are wrapped), Stop flushes the spans still queued
// and shuts the exporter down. A nil *Tracing (tracing off) is a valid
// service that does nothing.
type Tracing struct {
	st   *state
	once sync.Once
}

// Setup reads the environment and, when it asks for traces, installs a
// tracer provider exporting them over OTLP/HTTP; otherwise it returns nil
// and the process traces nothing. Servers of one process (tests) share
// the provider: the last one's Stop shuts it down.
func Setup(ctx context.Context) (*Tracing, error) {
	getenv := os.Getenv
	if !wanted(getenv) {
		return nil, nil
	}
	if p := protocol(getenv); p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: only http/protobuf is supported", p)
	}
	mu.Lock()
	defer mu.Unlock()
	if st := current.Load(); st != nil {
		st.users++
		return &Tracing{st: st}, nil
	}
	// The exporter reads OTEL_EXPORTER_OTLP_* itself.
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// Defaults first: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// (WithFromEnv) override them. A schema URL conflict between the
	// detectors still yields a usable resource.
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceNameKey.String("agentplatform"), semconv.ServiceVersionKey.String(version.Version)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if res == nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	// The sampler comes from OTEL_TRACES_SAMPLER (default: parent-based
	// always-on), the batching from OTEL_BSP_*.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(redacting{exp}), sdktrace.WithResource(res))
	st := &state{tp: tp, tracer: tp.Tracer(ScopeName, trace.WithInstrumentationVersion(version.Version)),
		prop:    propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		capture: strings.EqualFold(strings.TrimSpace(getenv(CaptureVariable)), "true"),
		prev:    otel.GetTracerProvider(), users: 1}
	t := &Tracing{st: st}
	// Libraries that use the global provider and propagator (and any
	// instrumentation added later) trace into the same pipeline.
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(st.prop)
	current.Store(st)
	return t, nil
}

// wanted is the SDK's rule for "traces on": an OTLP endpoint configured,
// and neither the SDK nor the traces exporter switched off.
func wanted(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

func protocol(getenv func(string) string) string {
	if p := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p != "" {
		return p
	}
	return getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
}

// Start does nothing: Setup installed the provider.
func (t *Tracing) Start(context.Context) error { return nil }

// Stop exports the spans still queued within ctx; the last Tracing of
// the process then shuts the exporter down and uninstalls the provider
// (the process traces nothing after). It is safe to call more than once,
// and on nil.
func (t *Tracing) Stop(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var err error
	t.once.Do(func() {
		mu.Lock()
		defer mu.Unlock()
		if t.st.users--; t.st.users > 0 {
			err = t.st.tp.ForceFlush(ctx)
			return
		}
		if ctx.Err() != nil {
			// The SDK's Shutdown on an ended context returns at once and
			// leaves the batcher running: give it a moment of its own.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
		}
		err = t.st.tp.Shutdown(ctx)
		current.CompareAndSwap(t.st, nil)
		otel.SetTracerProvider(t.st.prev)
	})
	return err
}

// ForceFlush exports the spans ended so far (tests, before they look).
func (t *Tracing) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.st.tp.ForceFlush(ctx)
}

// Handler wraps the HTTP server's handler with server spans (named by the
// method until RouteName names them by the route: never the raw path,
// which would make span names unbounded). Off, h itself.
func Handler(h http.Handler) http.Handler {
	s := current.Load()
	if s == nil {
		return h
	}
	return otelhttp.NewHandler(h, "http.server", otelhttp.WithTracerProvider(s.tp), otelhttp.WithPropagators(s.prop),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))
}

// RouteName names the current server span by its route pattern (e.g.
// "POST /api/v1/activations") once the router knows it.
func RouteName(r *http.Request, pattern string) {
	if current.Load() == nil || pattern == "" {
		return
	}
	span := trace.SpanFromContext(r.Context())
	if !span.IsRecording() {
		return
	}
	route := pattern
	if i := strings.IndexByte(route, ' '); i >= 0 {
		route = route[i+1:]
	}
	span.SetName(r.Method + " " + route)
	span.SetAttributes(semconv.HTTPRoute(route))
}

// Transport wraps an outbound transport with client spans and the W3C
// traceparent (and baggage) header of the calling span. Off, rt itself.
func Transport(rt http.RoundTripper) http.RoundTripper {
	s := current.Load()
	if s == nil {
		return rt
	}
	return otelhttp.NewTransport(rt, otelhttp.WithTracerProvider(s.tp), otelhttp.WithPropagators(s.prop),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))
}

// Inject writes the current span's traceparent into h, for outbound
// messages that do not go through Transport. Off, nothing.
func Inject(ctx context.Context, h http.Header) {
	if s := current.Load(); s != nil {
		s.prop.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// JobMiddleware is River's OpenTelemetry middleware (rivercontrib/otelriver,
// which builds with our River version): a span for each job inserted and
// each job worked ("river.work/<kind>"), the work span linked to the
// insert's trace through the job's metadata. Off, none.
func JobMiddleware() []rivertype.Middleware {
	s := current.Load()
	if s == nil {
		return nil
	}
	return []rivertype.Middleware{otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
		TracerProvider: s.tp,
		// Metrics are Prometheus's (/metrics); no meter provider here.
		MeterProvider:               metricnoop.NewMeterProvider(),
		EnableTracePropagation:      true,
		EnableWorkSpanJobKindSuffix: true,
	})}
}
