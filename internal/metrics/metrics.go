// Package metrics owns the platform's Prometheus collectors. Each server
// builds its own registry (no global state), so tests can run many servers in
// one process; /metrics serves it.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the registry and the collectors other packages feed. Its
// methods do nothing on a nil *Metrics, so a caller built without metrics
// (a test, a tool) needs no check.
type Metrics struct {
	Registry           *prometheus.Registry
	requests           *prometheus.CounterVec
	requestDuration    *prometheus.HistogramVec
	activations        *prometheus.CounterVec
	activationDuration prometheus.Histogram
	webhooks           *prometheus.CounterVec
	llmCalls           *prometheus.CounterVec
	llmDuration        *prometheus.HistogramVec
	llmTokens          *prometheus.CounterVec
	usageTokens        *prometheus.CounterVec
	usageCost          *prometheus.CounterVec
	models             modelLabels
	connections        *prometheus.GaugeVec
	heartbeats         *prometheus.CounterVec
	lastHeartbeat      prometheus.Gauge
}

// New registers the collectors on a fresh registry.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentplatform_http_requests_total",
			Help: "HTTP requests by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentplatform_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "method"}),
	}
	m.activations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentplatform_activations_total",
		Help: "Activations that ended on this process, by final status.",
	}, []string{"status"})
	m.activationDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "agentplatform_activation_duration_seconds",
		Help:    "Run time of activations, from start to end.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	})
	m.webhooks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentplatform_webhook_deliveries_total",
		Help: "Webhook delivery attempts by outcome: delivered (2xx), retrying (failed, another attempt is scheduled), gave_up (failed, the last attempt).",
	}, []string{"outcome"})
	m.llmCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentplatform_llm_calls_total",
		Help: "LLM provider calls (each retry is a call) by provider type and outcome (ok, error).",
	}, []string{"provider", "outcome"})
	m.llmDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "agentplatform_llm_call_duration_seconds",
		Help:    "Latency of LLM provider calls, whole answer read, by provider type.",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	}, []string{"provider"})
	m.llmTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentplatform_llm_tokens_total",
		Help: "Tokens of successful LLM calls as the provider reported them, by provider type and kind (prompt, completion).",
	}, []string{"provider", "kind"})
	m.connections = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agentplatform_open_connections",
		Help: "Open event connections on this process by kind (websocket, sse).",
	}, []string{"kind"})
	m.heartbeats = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentplatform_worker_heartbeats_total",
		Help: "Heartbeats this worker process wrote (ok) or failed to write (error).",
	}, []string{"outcome"})
	m.lastHeartbeat = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "agentplatform_worker_last_heartbeat_timestamp_seconds",
		Help: "When this worker process last recorded its heartbeat (Unix time); other workers count it dead 30 s later.",
	})
	m.usageTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentplatform_llm_usage_tokens_total",
		Help: "Tokens of LLM answers by provider type, model and type (input, which includes the cached; output; cache_read; cache_write). Models past the " + strconv.Itoa(MaxModelLabels) + " first seen are \"other\".",
	}, []string{"provider", "model", "type"})
	m.usageCost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentplatform_llm_cost_usd_total",
		Help: "Cost in USD of the LLM answers of a priced model, by provider type and model (models past the " + strconv.Itoa(MaxModelLabels) + " first seen are \"other\").",
	}, []string{"provider", "model"})
	// Series present at 0 before their first event, so that dashboards and
	// rate() see them from the start.
	for _, kind := range []string{"websocket", "sse"} {
		m.connections.WithLabelValues(kind)
	}
	for _, outcome := range []string{"delivered", "retrying", "gave_up"} {
		m.webhooks.WithLabelValues(outcome)
	}
	for _, outcome := range []string{"ok", "error"} {
		m.heartbeats.WithLabelValues(outcome)
	}
	m.Registry.MustRegister(m.requests, m.requestDuration, m.activations, m.activationDuration,
		m.webhooks, m.llmCalls, m.llmDuration, m.llmTokens, m.usageTokens, m.usageCost, m.connections, m.heartbeats, m.lastHeartbeat,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveRequest records one HTTP request. Every label comes from a
// closed set, whatever a client sends, so that strangers cannot grow the
// registry: route is the ServeMux pattern (never the raw path; "" for no
// route is "unmatched"), an unknown method is OTHER, and a status outside
// 100..599 is "other".
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	if route == "" {
		route = "unmatched"
	}
	if !knownMethods[method] {
		method = "OTHER"
	}
	code := "other"
	if status >= 100 && status <= 599 {
		code = strconv.Itoa(status)
	}
	m.requests.WithLabelValues(route, method, code).Inc()
	m.requestDuration.WithLabelValues(route, method).Observe(d.Seconds())
}

// knownMethods are the methods of RFC 9110 and PATCH; any other is OTHER.
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true,
	http.MethodDelete: true, http.MethodConnect: true, http.MethodOptions: true, http.MethodTrace: true,
}

// ActivationEnded records an activation's end on this process: its final
// status (a cancelled or timed-out one is failed) and, when it had started,
// its run time. A nil m records nothing, so callers need no check.
func (m *Metrics) ActivationEnded(status string, durationMS *int64) {
	if m == nil {
		return
	}
	m.activations.WithLabelValues(status).Inc()
	if durationMS != nil {
		m.activationDuration.Observe(float64(*durationMS) / 1000)
	}
}

// WebhookAttempt records one delivery attempt: ok when the receiver
// answered 2xx; last when no attempt follows a failed one.
func (m *Metrics) WebhookAttempt(ok, last bool) {
	if m == nil {
		return
	}
	outcome := "delivered"
	switch {
	case ok:
	case last:
		outcome = "gave_up"
	default:
		outcome = "retrying"
	}
	m.webhooks.WithLabelValues(outcome).Inc()
}

// LLMObserver records the calls of one provider type; its collectors are
// resolved once, so a call costs no label lookup.
type LLMObserver struct {
	ok, failed         prometheus.Counter
	duration           prometheus.Observer
	prompt, completion prometheus.Counter
	m                  *Metrics
	provider           string
}

// LLM returns the observer of a provider type (nil on a nil m: its
// methods then do nothing).
func (m *Metrics) LLM(provider string) *LLMObserver {
	if m == nil {
		return nil
	}
	return &LLMObserver{ok: m.llmCalls.WithLabelValues(provider, "ok"), failed: m.llmCalls.WithLabelValues(provider, "error"),
		duration: m.llmDuration.WithLabelValues(provider), prompt: m.llmTokens.WithLabelValues(provider, "prompt"),
		completion: m.llmTokens.WithLabelValues(provider, "completion"), m: m, provider: provider}
}

// Call records one call: its latency, its outcome and, when it succeeded,
// its tokens.
func (o *LLMObserver) Call(d time.Duration, err error, promptTokens, completionTokens int) {
	if o == nil {
		return
	}
	o.duration.Observe(d.Seconds())
	if err != nil {
		o.failed.Inc()
		return
	}
	o.ok.Inc()
	o.prompt.Add(float64(max(promptTokens, 0)))
	o.completion.Add(float64(max(completionTokens, 0)))
}

// Usage records the tokens of one answer of model and its cost in
// micro-USD (nil: the model has no price, and no cost is added). Input
// includes the cached tokens.
func (o *LLMObserver) Usage(model string, input, output, cacheRead, cacheWrite int64, costMicroUSD *int64) {
	if o == nil {
		return
	}
	model = o.m.models.label(model)
	for _, t := range [...]struct {
		kind string
		n    int64
	}{{"input", input}, {"output", output}, {"cache_read", cacheRead}, {"cache_write", cacheWrite}} {
		if t.n > 0 {
			o.m.usageTokens.WithLabelValues(o.provider, model, t.kind).Add(float64(t.n))
		}
	}
	if costMicroUSD != nil {
		o.m.usageCost.WithLabelValues(o.provider, model).Add(float64(*costMicroUSD) / 1e6)
	}
}

// MaxModelLabels bounds the model label's values: models are named by
// whoever configures a provider (or by what its server answers), so past
// this many the rest count as "other".
const MaxModelLabels = 100

// modelLabels is the set of model label values given so far.
type modelLabels struct {
	mu   sync.Mutex
	seen map[string]bool
}

// label is model as a label value: itself while the set has room for
// it, else "other".
func (l *modelLabels) label(model string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[model] {
		return model
	}
	if len(l.seen) >= MaxModelLabels {
		return "other"
	}
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	l.seen[model] = true
	return model
}

// ConnectionOpened counts an open WebSocket or SSE connection (kind
// "websocket" or "sse") until the returned func is called: defer it.
func (m *Metrics) ConnectionOpened(kind string) (closed func()) {
	if m == nil {
		return func() {}
	}
	g := m.connections.WithLabelValues(kind)
	g.Inc()
	return g.Dec
}

// WorkerHeartbeat records a heartbeat of this worker process, written or
// not.
func (m *Metrics) WorkerHeartbeat(err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.heartbeats.WithLabelValues("error").Inc()
		return
	}
	m.heartbeats.WithLabelValues("ok").Inc()
	m.lastHeartbeat.SetToCurrentTime()
}

// QueueDepth exposes the number of activations by state, read at scrape
// time by depth.
func (m *Metrics) QueueDepth(depth func() (queued, running int, err error)) {
	read := func(pick func(q, r int) int) func() float64 {
		return func() float64 {
			q, r, err := depth()
			if err != nil {
				return -1
			}
			return float64(pick(q, r))
		}
	}
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentplatform_queue_depth", Help: "Activations queued (all users).",
			ConstLabels: prometheus.Labels{"state": "queued"}}, read(func(q, _ int) int { return q })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentplatform_queue_depth", Help: "Activations queued (all users).",
			ConstLabels: prometheus.Labels{"state": "running"}}, read(func(_, r int) int { return r })),
	)
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}
