// Package metrics owns the platform's Prometheus collectors. Each server
// builds its own registry (no global state), so tests can run many servers in
// one process; /metrics serves it.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the registry and the collectors other packages feed.
type Metrics struct {
	Registry           *prometheus.Registry
	requests           *prometheus.CounterVec
	requestDuration    *prometheus.HistogramVec
	activations        *prometheus.CounterVec
	activationDuration prometheus.Histogram
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
	m.Registry.MustRegister(m.requests, m.requestDuration, m.activations, m.activationDuration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveRequest records one HTTP request. route is the ServeMux pattern,
// never the raw path, so the label set stays bounded.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.requestDuration.WithLabelValues(route, method).Observe(d.Seconds())
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
