package metrics_test

import (
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/metrics"
)

func TestNilMetricsRecordNothing(t *testing.T) {
	t.Parallel()
	var m *metrics.Metrics
	d := int64(5)
	m.ActivationEnded("failed", &d)
	m.ObserveRequest("GET /x", "GET", 200, time.Millisecond)
	m.WebhookAttempt(true, false)
	m.LLM("openai").Call(time.Second, nil, 1, 2)
	m.LLM("openai").Usage("gpt-4o", 1, 2, 0, 0, nil)
	m.ConnectionOpened("websocket")()
	m.WorkerHeartbeat(nil)
}

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	return string(b)
}

func TestOutcomes(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.WebhookAttempt(true, false)
	m.WebhookAttempt(true, true) // a success on the last attempt is a delivery
	m.WebhookAttempt(false, false)
	m.WebhookAttempt(false, true)
	o := m.LLM("anthropic")
	o.Call(time.Second, nil, 10, 20)
	o.Call(time.Second, errors.New("503"), 0, 0)
	m.WorkerHeartbeat(nil)
	m.WorkerHeartbeat(errors.New("db down"))
	closeWS := m.ConnectionOpened("websocket")
	d := int64(1500)
	m.ActivationEnded("failed", &d)
	m.ActivationEnded("failed", nil) // cancelled while queued: no run time

	s := scrape(t, m)
	for _, line := range []string{
		`agentplatform_webhook_deliveries_total{outcome="delivered"} 2`,
		`agentplatform_webhook_deliveries_total{outcome="retrying"} 1`,
		`agentplatform_webhook_deliveries_total{outcome="gave_up"} 1`,
		`agentplatform_llm_calls_total{outcome="error",provider="anthropic"} 1`,
		`agentplatform_llm_calls_total{outcome="ok",provider="anthropic"} 1`,
		`agentplatform_llm_tokens_total{kind="completion",provider="anthropic"} 20`,
		`agentplatform_llm_tokens_total{kind="prompt",provider="anthropic"} 10`,
		`agentplatform_llm_call_duration_seconds_count{provider="anthropic"} 2`,
		`agentplatform_open_connections{kind="sse"} 0`,
		`agentplatform_open_connections{kind="websocket"} 1`,
		`agentplatform_worker_heartbeats_total{outcome="error"} 1`,
		`agentplatform_worker_heartbeats_total{outcome="ok"} 1`,
		`agentplatform_activations_total{status="failed"} 2`,
		`agentplatform_activation_duration_seconds_count 1`,
		`agentplatform_activation_duration_seconds_sum 1.5`,
	} {
		require.Contains(t, s, line+"\n")
	}
	closeWS()
	require.Contains(t, scrape(t, m), `agentplatform_open_connections{kind="websocket"} 0`+"\n")
}

// TestUsageCountersByModel: tokens by type and cost in USD by provider
// type and model; past MaxModelLabels models the rest are "other", so a
// provider answering with ever new model names cannot grow the registry.
func TestUsageCountersByModel(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	o := m.LLM("anthropic")
	cost := int64(1_500_000)
	o.Usage("claude-sonnet-4-5", 130, 7, 100, 20, &cost)
	o.Usage("claude-sonnet-4-5", 10, 3, 0, 0, nil) // unpriced: no cost added
	out := scrape(t, m)
	for _, line := range []string{
		`agentplatform_llm_usage_tokens_total{model="claude-sonnet-4-5",provider="anthropic",type="input"} 140`,
		`agentplatform_llm_usage_tokens_total{model="claude-sonnet-4-5",provider="anthropic",type="output"} 10`,
		`agentplatform_llm_usage_tokens_total{model="claude-sonnet-4-5",provider="anthropic",type="cache_read"} 100`,
		`agentplatform_llm_usage_tokens_total{model="claude-sonnet-4-5",provider="anthropic",type="cache_write"} 20`,
		`agentplatform_llm_cost_usd_total{model="claude-sonnet-4-5",provider="anthropic"} 1.5`,
	} {
		require.Contains(t, out, line)
	}
	for i := range 2 * metrics.MaxModelLabels {
		o.Usage(fmt.Sprintf("model-%d", i), 1, 1, 0, 0, nil)
	}
	out = scrape(t, m)
	require.Contains(t, out, `model="other"`)
	require.Equal(t, metrics.MaxModelLabels+1, strings.Count(out, `type="output"}`)) // the first 100 models and "other"
	require.NotContains(t, out, fmt.Sprintf(`model="model-%d"`, metrics.MaxModelLabels))
}
