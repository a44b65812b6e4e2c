package api_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/telemetry"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/tool/mcptest"
)

// otlpReceiver is a real OTLP/HTTP trace receiver: it decodes the
// protobuf export requests the platform's exporter posts to /v1/traces.
type otlpReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests int
	spans    []*tracepb.Span
	services []string // service.name of each resource received
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rcv := &otlpReceiver{}
	rcv.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = gz
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rcv.mu.Lock()
		rcv.requests++
		for _, rs := range req.GetResourceSpans() {
			rcv.services = append(rcv.services, attr(rs.GetResource().GetAttributes(), "service.name"))
			for _, ss := range rs.GetScopeSpans() {
				rcv.spans = append(rcv.spans, ss.GetSpans()...)
			}
		}
		rcv.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(rcv.srv.Close)
	return rcv
}

func (rcv *otlpReceiver) snapshot() (spans []*tracepb.Span, requests int, services []string) {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	return append([]*tracepb.Span(nil), rcv.spans...), rcv.requests, append([]string(nil), rcv.services...)
}

// attr is the string form of attribute key among attrs ("" when absent).
func attr(attrs []*commonpb.KeyValue, key string) string {
	for _, kv := range attrs {
		if kv.GetKey() != key {
			continue
		}
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_IntValue:
			return fmt.Sprint(v.IntValue)
		case *commonpb.AnyValue_ArrayValue:
			var parts []string
			for _, e := range v.ArrayValue.GetValues() {
				parts = append(parts, e.GetStringValue())
			}
			return strings.Join(parts, ",")
		default:
			return kv.GetValue().String()
		}
	}
	return ""
}

func hasAttr(s *tracepb.Span, key string) bool {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return true
		}
	}
	return false
}

// contentKeys are the GenAI attributes that carry users' content.
var contentKeys = []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
	"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}

// tracedRun is what one traced run left: the spans received and the
// traceparent headers the outside world saw (the tool's call, the
// webhook delivery).
type tracedRun struct {
	spans      []*tracepb.Span
	services   []string
	tool, hook []string
	targetURL  string // where the tool and the webhook post
}

// runTraced starts a platform exporting to a fresh receiver (the OTEL_*
// variables set, plus extra), runs an echo agent that calls an HTTP tool
// on the outside world with a secret in its arguments, and returns what
// was exported once the spans of the run's request are in.
func runTraced(t *testing.T, d store.Dialect, extra map[string]string) *tracedRun {
	rcv := traceTo(t, extra)
	var mu sync.Mutex
	var run tracedRun
	target := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.URL.Path == "/hook" {
			run.hook = append(run.hook, r.Header.Get("Traceparent"))
		} else {
			run.tool = append(run.tool, r.Header.Get("Traceparent"))
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"pong":true}`)
	}))
	e := newEnv(t, d, nil)
	require.NotNil(t, e.srv.Tracing, "OTEL_EXPORTER_OTLP_ENDPOINT turns tracing on")
	tok := e.signup("traced@example.com")
	tools := []map[string]any{{"type": "http", "name": "ping", "method": "POST", "url": target.URL + "/ping?key=s3cret",
		"parameters": map[string]any{"type": "object"}}}
	appID := e.importManifest(tok, toolsManifest(tools, nil)).expect(t, 201).str("app_id")
	clerk := e.agentNamed(tok, appID, "clerk")
	r := e.do("POST", "/api/v1/activations", map[string]any{"agent_id": clerk,
		"input_data": map[string]any{"prompt": `call ping {"secret":"zebra-42"}`},
		"metadata":   map[string]any{"webhook_url": target.URL + "/hook"}},
		bearer(tok), header("Prefer", "wait=10")).expect(t, 201)
	require.Equal(t, "completed", r.str("status"), r.JSON)
	run.targetURL = target.URL

	// The request's server span ends just after its answer, the webhook
	// is delivered after the run: flush until they are in.
	require.Eventually(t, func() bool {
		spans, services := flush(t, e, rcv)
		mu.Lock()
		defer mu.Unlock()
		run.spans, run.services = spans, services
		return named(spans, "POST /api/v1/activations") != nil && named(spans, "invoke_agent clerk") != nil &&
			named(spans, "river.work/webhook_delivery") != nil && len(run.hook) > 0
	}, 20*time.Second, 50*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	out := run
	return &out
}

// traceTo points the OTEL_* variables (and extra ones) at a fresh
// receiver, for the env the test starts next.
func traceTo(t *testing.T, extra map[string]string) *otlpReceiver {
	rcv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "ap-traced")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	for k, v := range extra {
		t.Setenv(k, v)
	}
	return rcv
}

// flush exports e's ended spans and answers all rcv has received.
func flush(t *testing.T, e *env, rcv *otlpReceiver) ([]*tracepb.Span, []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, e.srv.Tracing.ForceFlush(ctx))
	spans, _, services := rcv.snapshot()
	return spans, services
}

// clientUnder is the HTTP client span whose parent is parent.
func clientUnder(spans []*tracepb.Span, parent *tracepb.Span) *tracepb.Span {
	for _, s := range spans {
		if s.GetKind() == tracepb.Span_SPAN_KIND_CLIENT && hasAttr(s, "http.request.method") &&
			bytes.Equal(s.GetParentSpanId(), parent.GetSpanId()) {
			return s
		}
	}
	return nil
}

// traceparent is the W3C header that names span (sampled).
func traceparent(s *tracepb.Span) string {
	return "00-" + hex.EncodeToString(s.GetTraceId()) + "-" + hex.EncodeToString(s.GetSpanId()) + "-01"
}

func named(spans []*tracepb.Span, name string) *tracepb.Span {
	for _, s := range spans {
		if s.GetName() == name {
			return s
		}
	}
	return nil
}

// childNamed is the span named name whose parent is parent, in its trace.
func childNamed(spans []*tracepb.Span, parent *tracepb.Span, name string) *tracepb.Span {
	for _, s := range spans {
		if s.GetName() == name && bytes.Equal(s.GetTraceId(), parent.GetTraceId()) && bytes.Equal(s.GetParentSpanId(), parent.GetSpanId()) {
			return s
		}
	}
	return nil
}

func allNamed(spans []*tracepb.Span, name string) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range spans {
		if s.GetName() == name {
			out = append(out, s)
		}
	}
	return out
}

// requireChild asserts that child's parent is parent, in parent's trace.
func requireChild(t *testing.T, parent, child *tracepb.Span) {
	t.Helper()
	require.Equal(t, hex.EncodeToString(parent.GetTraceId()), hex.EncodeToString(child.GetTraceId()), "%s in the trace of %s", child.GetName(), parent.GetName())
	require.Equal(t, hex.EncodeToString(parent.GetSpanId()), hex.EncodeToString(child.GetParentSpanId()), "%s is a child of %s", child.GetName(), parent.GetName())
}

// TestTracingExportsOTLP: with OTEL_EXPORTER_OTLP_ENDPOINT set, a run
// exports over OTLP/HTTP an HTTP server span named by its route, the
// invoke_agent span of the run under it, chat spans with the GenAI
// attributes and token usage and an execute_tool span under that, and the
// tool's HTTP call carries a traceparent of the same trace; no prompt,
// answer or arguments on any span.
func TestTracingExportsOTLP(t *testing.T) {
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			run := runTraced(t, d, nil)
			spans := run.spans
			require.Contains(t, run.services, "ap-traced", "OTEL_SERVICE_NAME names the service")

			server := named(spans, "POST /api/v1/activations")
			require.Equal(t, tracepb.Span_SPAN_KIND_SERVER, server.GetKind())
			require.Equal(t, "/api/v1/activations", attr(server.GetAttributes(), "http.route"))
			require.Equal(t, "201", attr(server.GetAttributes(), "http.response.status_code"))

			agent := named(spans, "invoke_agent clerk")
			// The run is claimed by the request and needs no job; the job
			// of its webhook, inserted as it ends, is in its span (otelriver).
			// (The periodic jobs the queue's leader inserts once elected
			// are spans of their own traces.)
			require.NotNil(t, childNamed(spans, agent, "river.insert_many"), "River's inserts are spans: the webhook's job's in the run's span")

			require.Equal(t, "invoke_agent", attr(agent.GetAttributes(), "gen_ai.operation.name"))
			require.Equal(t, "clerk", attr(agent.GetAttributes(), "gen_ai.agent.name"))
			require.NotEmpty(t, attr(agent.GetAttributes(), "gen_ai.agent.id"))
			requireChild(t, server, agent)

			chats := allNamed(spans, "chat echo")
			require.Len(t, chats, 2, "the call's step and the answer's")
			for _, c := range chats {
				requireChild(t, agent, c)
				require.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, c.GetKind())
				require.Equal(t, "chat", attr(c.GetAttributes(), "gen_ai.operation.name"))
				require.Equal(t, "echo", attr(c.GetAttributes(), "gen_ai.provider.name"))
				require.Equal(t, "echo", attr(c.GetAttributes(), "gen_ai.request.model"))
				require.Equal(t, "echo", attr(c.GetAttributes(), "gen_ai.response.model"))
				require.NotEqual(t, "", attr(c.GetAttributes(), "gen_ai.usage.input_tokens"))
				require.NotEqual(t, "0", attr(c.GetAttributes(), "gen_ai.usage.input_tokens"))
				require.NotEqual(t, "", attr(c.GetAttributes(), "gen_ai.usage.output_tokens"))
			}
			reasons := []string{attr(chats[0].GetAttributes(), "gen_ai.response.finish_reasons"), attr(chats[1].GetAttributes(), "gen_ai.response.finish_reasons")}
			require.ElementsMatch(t, []string{"tool_calls", "stop"}, reasons)

			tool := named(spans, "execute_tool ping")
			require.NotNil(t, tool)
			requireChild(t, agent, tool)
			require.Equal(t, "execute_tool", attr(tool.GetAttributes(), "gen_ai.operation.name"))
			require.Equal(t, "ping", attr(tool.GetAttributes(), "gen_ai.tool.name"))
			require.Equal(t, "call_1_1", attr(tool.GetAttributes(), "gen_ai.tool.call.id"))

			// The tool's HTTP call: a client span under the tool's, whose
			// traceparent the target received.
			client := clientUnder(spans, tool)
			require.NotNil(t, client, "the tool's call is a client span")
			require.Equal(t, []string{traceparent(client)}, run.tool, "the target hears the call's trace")
			require.Equal(t, run.targetURL+"/ping", attr(client.GetAttributes(), "url.full"), "no query (credentials) on spans")

			// The webhook delivery is a River job: its work span links
			// to the trace that enqueued it (the run's), and its POST
			// carries the job's trace.
			work := named(spans, "river.work/webhook_delivery")
			require.Equal(t, tracepb.Span_SPAN_KIND_CONSUMER, work.GetKind())
			require.NotEmpty(t, work.GetLinks())
			require.Equal(t, hex.EncodeToString(server.GetTraceId()), hex.EncodeToString(work.GetLinks()[0].GetTraceId()),
				"the delivery links to the run's trace")
			post := clientUnder(spans, work)
			require.NotNil(t, post, "the delivery is a client span")
			require.Contains(t, run.hook, traceparent(post))

			// No content by default.
			for _, s := range spans {
				for _, k := range contentKeys {
					require.False(t, hasAttr(s, k), "%s carries %s", s.GetName(), k)
				}
				for _, kv := range s.GetAttributes() {
					require.NotContains(t, kv.GetValue().String(), "zebra-42", "%s.%s", s.GetName(), kv.GetKey())
				}
			}
		})
	}
}

// TestTracingJavaScript: a custom agent's ctx.llm.complete is a chat span
// of its run, and its ctx.http.fetch carries the run's trace.
func TestTracingJavaScript(t *testing.T) {
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			rcv := traceTo(t, nil)
			got := make(chan string, 1)
			target := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got <- r.Header.Get("Traceparent")
			}))
			e := newEnv(t, d, nil)
			tok := e.signup("js-traced@example.com")
			ag := e.jsAgent(tok, fmt.Sprintf(`async function run(input, ctx) {
				const answer = await ctx.llm.complete({prompt: "hello", provider_id: "echo"});
				await ctx.http.fetch(%q, {method: "POST", body: "x"});
				return answer.text;
			}`, target.URL+"/fetched"), 10)
			done := e.await(tok, e.activateJS(tok, ag, map[string]any{}))
			require.Equal(t, "completed", done.str("status"), done.str("error"))
			var tp string
			select {
			case tp = <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("no fetch")
			}
			var spans []*tracepb.Span
			require.Eventually(t, func() bool {
				spans, _ = flush(t, e, rcv)
				return named(spans, "invoke_agent script") != nil
			}, 10*time.Second, 50*time.Millisecond)
			agent := named(spans, "invoke_agent script")
			chat := named(spans, "chat echo")
			require.NotNil(t, chat, "ctx.llm.complete is a chat span")
			requireChild(t, agent, chat)
			require.True(t, strings.HasPrefix(tp, "00-"+hex.EncodeToString(agent.GetTraceId())+"-"), "fetch carries the run's trace: %q", tp)
			fetch := clientUnder(spans, agent)
			require.NotNil(t, fetch, "the fetch is a client span of the run")
			require.Equal(t, traceparent(fetch), tp)
		})
	}
}

// TestTracingMCP: a remote MCP server's tool called by an OpenAI model:
// the chat spans name the provider (and its cache reads), and the MCP requests carry the run's
// trace, the tools/call request under the call's execute_tool span.
func TestTracingMCP(t *testing.T) {
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			rcv := traceTo(t, nil)
			f := newFakeEnv(t, d, llm.TypeOpenAI)
			var mu sync.Mutex
			var seen []string
			srv := mcptest.New(t, mcptest.Options{Check: func(r *http.Request) error {
				mu.Lock()
				seen = append(seen, r.Header.Get("Traceparent"))
				mu.Unlock()
				return nil
			}})
			_, clerk := f.mcpApp(map[string]string{"docs": srv.URL}, map[string]any{"type": "mcp", "server": "docs"})
			f.fake.Queue(llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", "docs_echo", `{"text":"hi"}`)}}, llmtest.Reply{Text: "done", CacheRead: 7})
			done := f.await(f.tok, f.start(clerk, "go"))
			require.Equal(t, "completed", done.str("status"), done.Body)

			var spans []*tracepb.Span
			require.Eventually(t, func() bool {
				spans, _ = flush(t, f.env, rcv)
				return named(spans, "invoke_agent clerk") != nil && named(spans, "execute_tool docs_echo") != nil
			}, 10*time.Second, 50*time.Millisecond)
			agent := named(spans, "invoke_agent clerk")
			chats := allNamed(spans, "chat m")
			require.Len(t, chats, 2)
			var cached []string
			for _, c := range chats {
				requireChild(t, agent, c)
				require.Equal(t, "openai", attr(c.GetAttributes(), "gen_ai.provider.name"))
				cached = append(cached, attr(c.GetAttributes(), "gen_ai.usage.cache_read.input_tokens"))
			}
			require.ElementsMatch(t, []string{"", "7"}, cached, "cache reads where the provider reports them")
			tool := named(spans, "execute_tool docs_echo")
			requireChild(t, agent, tool)
			call := clientUnder(spans, tool)
			require.NotNil(t, call, "the tools/call request is a client span of the tool's")
			mu.Lock()
			defer mu.Unlock()
			require.Contains(t, seen, traceparent(call))
			for _, tp := range seen {
				require.True(t, strings.HasPrefix(tp, "00-"+hex.EncodeToString(agent.GetTraceId())+"-"), "every MCP request is in the run's trace: %q", tp)
			}
		})
	}
}

// TestTracingCapturesContentWhenAsked: with
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true the spans carry
// the conversation and the tool's arguments and result.
func TestTracingCapturesContentWhenAsked(t *testing.T) {
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			run := runTraced(t, d, map[string]string{telemetry.CaptureVariable: "true"})
			agent := named(run.spans, "invoke_agent clerk")
			require.Contains(t, attr(agent.GetAttributes(), "gen_ai.input.messages"), "zebra-42")
			require.Contains(t, attr(agent.GetAttributes(), "gen_ai.output.messages"), "pong")
			chats := allNamed(run.spans, "chat echo")
			require.Len(t, chats, 2)
			for _, c := range chats {
				require.Contains(t, attr(c.GetAttributes(), "gen_ai.input.messages"), "zebra-42")
				require.NotEmpty(t, attr(c.GetAttributes(), "gen_ai.output.messages"))
			}
			tool := named(run.spans, "execute_tool ping")
			require.JSONEq(t, `{"secret":"zebra-42"}`, attr(tool.GetAttributes(), "gen_ai.tool.call.arguments"))
			require.Contains(t, attr(tool.GetAttributes(), "gen_ai.tool.call.result"), "pong")
		})
	}
}

// TestTracingOffByDefault: without an OTLP endpoint (or with
// OTEL_SDK_DISABLED=true) nothing is set up, nothing is exported, the
// platform's spans are no-ops and outbound calls carry no traceparent.
func TestTracingOffByDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
	}{
		{"unset", nil},
		{"disabled", map[string]string{"OTEL_SDK_DISABLED": "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := newOTLPReceiver(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
			if tc.vars != nil {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.srv.URL)
				for k, v := range tc.vars {
					t.Setenv(k, v)
				}
			}
			var mu sync.Mutex
			var traceparents []string
			target := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				traceparents = append(traceparents, r.Header.Get("Traceparent"))
				mu.Unlock()
				_, _ = io.WriteString(w, `{}`)
			}))
			e := newEnv(t, testdb.Dialects[0], nil)
			require.Nil(t, e.srv.Tracing)
			require.False(t, telemetry.Enabled())
			_, isSDK := otel.GetTracerProvider().(*sdktrace.TracerProvider)
			require.False(t, isSDK, "the global provider stays OpenTelemetry's no-op")
			ctx, span := telemetry.StartAgent(context.Background(), "a", "b")
			require.False(t, span.Recording())
			require.Equal(t, context.Background(), ctx, "no span, not even in the context")

			tok := e.signup("untraced@example.com")
			tools := []map[string]any{{"type": "http", "name": "ping", "method": "POST", "url": target.URL + "/ping",
				"parameters": map[string]any{"type": "object"}}}
			appID := e.importManifest(tok, toolsManifest(tools, nil)).expect(t, 201).str("app_id")
			r := e.activateWait(tok, e.agentNamed(tok, appID, "clerk"), `call ping {}`)
			require.Equal(t, "completed", r.str("status"), r.JSON)
			mu.Lock()
			require.Equal(t, []string{""}, traceparents, "no traceparent when tracing is off")
			mu.Unlock()
			_, requests, _ := rcv.snapshot()
			require.Zero(t, requests, "nothing exported")
		})
	}
}
