package telemetry

import (
	"context"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// redacting keeps credentials out of exported spans: otelhttp records a
// call's url.full with its query string (only userinfo removed), and the
// URLs of HTTP tools, webhooks and ctx.http.fetch are users' and may
// carry keys there. otelhttp sets the attribute after the span started,
// so no span processor can rewrite it; the exporter's input is rewritten
// instead, as egress.Redact does for records: without userinfo, query or
// fragment.
type redacting struct{ sdktrace.SpanExporter }

func (r redacting) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	var out []sdktrace.ReadOnlySpan
	for i, s := range spans {
		attrs, changed := redactAttrs(s.Attributes())
		if !changed {
			if out != nil {
				out = append(out, s)
			}
			continue
		}
		if out == nil {
			out = append(make([]sdktrace.ReadOnlySpan, 0, len(spans)), spans[:i]...)
		}
		out = append(out, redactedSpan{ReadOnlySpan: s, attrs: attrs})
	}
	if out == nil {
		out = spans
	}
	return r.SpanExporter.ExportSpans(ctx, out)
}

// redactAttrs is attrs with url.full redacted, and whether that changed
// anything.
func redactAttrs(attrs []attribute.KeyValue) ([]attribute.KeyValue, bool) {
	for i, kv := range attrs {
		if kv.Key != semconv.URLFullKey {
			continue
		}
		raw := kv.Value.AsString()
		if !strings.ContainsAny(raw, "?#@") {
			return attrs, false
		}
		out := append([]attribute.KeyValue(nil), attrs...)
		out[i] = semconv.URLFull(redactURL(raw))
		return out, true
	}
	return attrs, false
}

// redactedSpan is a span with other attributes.
type redactedSpan struct {
	sdktrace.ReadOnlySpan
	attrs []attribute.KeyValue
}

func (s redactedSpan) Attributes() []attribute.KeyValue { return s.attrs }

// redactURL is raw without userinfo, query or fragment.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
