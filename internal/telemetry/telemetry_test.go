package telemetry

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestWanted: the SDK's rule for "traces on".
func TestWanted(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "TRUE"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "false"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		require.Equal(t, tc.want, wanted(func(k string) string { return tc.env[k] }), "%v", tc.env)
	}
}

// TestSetupRefusesGRPC: the exporter speaks OTLP/HTTP; asking for gRPC
// is a loud start-up error, not silence.
func TestSetupRefusesGRPC(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	tr, err := Setup(context.Background())
	require.ErrorContains(t, err, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc")
	require.Nil(t, tr)
	require.False(t, Enabled())
}

// TestSetupAndStop: Setup installs the provider (globally too), shared by
// the process's servers; the last Stop uninstalls it and is safe twice; a
// nil Tracing is a service that does nothing.
func TestSetupAndStop(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv(CaptureVariable, "true")
	before := otel.GetTracerProvider()
	tr, err := Setup(context.Background())
	require.NoError(t, err)
	require.True(t, Enabled())
	require.True(t, CaptureContent())
	_, isSDK := otel.GetTracerProvider().(*sdktrace.TracerProvider)
	require.True(t, isSDK)
	// A second server of the process shares the provider; its stop
	// leaves it to the first.
	second, err := Setup(context.Background())
	require.NoError(t, err)
	require.Same(t, tr.st, second.st)
	require.NoError(t, second.Stop(context.Background()))
	require.True(t, Enabled())

	ctx, span := StartChat(context.Background(), "openai", "gpt-x")
	require.True(t, span.Recording())
	require.True(t, span.Capture())
	h := http.Header{}
	Inject(ctx, h)
	require.NotEmpty(t, h.Get("Traceparent"))
	span.EndChat(&ChatResult{InputTokens: 1}, nil)

	// Nothing listens on the endpoint: the flush fails, the stop goes on.
	stopCtx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = tr.Stop(stopCtx)
	require.NoError(t, tr.Stop(context.Background()))
	require.False(t, Enabled())
	require.Equal(t, before, otel.GetTracerProvider())

	var none *Tracing
	require.NoError(t, none.Start(context.Background()))
	require.NoError(t, none.ForceFlush(context.Background()))
	require.NoError(t, none.Stop(context.Background()))
}

// BenchmarkOff: the spans of a run when tracing is off cost nothing.
func BenchmarkOff(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, s := StartAgent(ctx, "agent", "id")
		c, chat := StartChat(c, "openai", "gpt")
		chat.EndChat(&ChatResult{InputTokens: 1, OutputTokens: 2}, nil)
		_, tool := StartTool(c, "t", "call_1", "extension")
		tool.EndTool("{}", nil, nil)
		s.End(nil)
	}
}

// TestOffAllocatesNothing: the same, as a test.
func TestOffAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	n := testing.AllocsPerRun(100, func() {
		c, s := StartAgent(ctx, "agent", "id")
		c, chat := StartChat(c, "openai", "gpt")
		chat.EndChat(&ChatResult{InputTokens: 1, OutputTokens: 2}, nil)
		_, tool := StartTool(c, "t", "call_1", "extension")
		tool.EndTool("{}", nil, nil)
		s.End(nil)
		_ = Continue(ctx, c)
	})
	require.Zero(t, n)
}

// TestRedactAttrs: url.full loses userinfo, query and fragment; other
// attributes, and spans without any of those, are left alone.
func TestRedactAttrs(t *testing.T) {
	in := []attribute.KeyValue{attribute.String("http.request.method", "GET"),
		attribute.String("url.full", "https://u:p@api.example.com/v1/x?key=s3cret#frag")}
	out, changed := redactAttrs(in)
	require.True(t, changed)
	require.Equal(t, "https://api.example.com/v1/x", out[1].Value.AsString())
	require.Equal(t, "https://u:p@api.example.com/v1/x?key=s3cret#frag", in[1].Value.AsString(), "the span's own attributes are untouched")
	plain := []attribute.KeyValue{attribute.String("url.full", "https://api.example.com/v1/x")}
	_, changed = redactAttrs(plain)
	require.False(t, changed)
}
