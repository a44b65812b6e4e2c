package api_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// metric reads one series of a scrape: series is the name with its labels
// as the text format prints them (sorted), e.g. x_total{status="failed"}.
// Absent, it is -1.
func metric(t *testing.T, scrape []byte, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(scrape)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	return v
}

func (e *env) scrape() []byte { return e.do("GET", "/metrics", nil).expect(e.t, 200).Body }

// waitMetric polls the scrape until series satisfies ok. A failure shows
// the last value read (a message given to Eventually would be formatted
// before the first poll).
func (e *env) waitMetric(series string, ok func(float64) bool) {
	e.t.Helper()
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		v := metric(e.t.(*testing.T), e.scrape(), series)
		assert.True(c, ok(v), "%s = %v", series, v)
	}, 20*time.Second, 10*time.Millisecond)
}

// The operations metrics of DESIGN §4: every activation end by status
// (cancelled and timed-out ones are failed), webhook deliveries by outcome,
// LLM calls by provider with latency and tokens, open WebSocket and SSE
// connections, and worker heartbeats; the scrape passes promtool's lint.
func TestMetricsCountWhatOperatorsWatch(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		fake := llmtest.NewOpenAI(t)
		e := newEnv(t, d, map[string]string{"AP_OPENAI_BASE_URL": fake.URL, "AP_OPENAI_API_KEY": "sk-test", "AP_EGRESS_ALLOW": "127.0.0.2/32"})
		token := e.signup("u@example.com")

		// A webhook receiver, the test's outside world on 127.0.0.2.
		ln, err := net.Listen("tcp", "127.0.0.2:0")
		require.NoError(t, err)
		rcv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/fail" {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		rcv.Listener = ln
		rcv.Start()
		t.Cleanup(rcv.Close)

		// Heartbeats: the worker's registration is its first.
		require.GreaterOrEqual(t, metric(t, e.scrape(), `agentplatform_worker_heartbeats_total{outcome="ok"}`), 1.0)
		require.Greater(t, metric(t, e.scrape(), `agentplatform_worker_last_heartbeat_timestamp_seconds`), float64(time.Now().Add(-time.Hour).Unix()))

		// An open WebSocket counts while it is open.
		require.Equal(t, 0.0, metric(t, e.scrape(), `agentplatform_open_connections{kind="websocket"}`))
		c, status := e.socket("token="+token, nil)
		require.Equal(t, http.StatusSwitchingProtocols, status)
		e.waitMetric(`agentplatform_open_connections{kind="websocket"}`, func(v float64) bool { return v == 1 })
		c.CloseNow()
		e.waitMetric(`agentplatform_open_connections{kind="websocket"}`, func(v float64) bool { return v == 0 })

		// A completed LLM run with tokens, and its webhook delivered.
		f := e.llmAgent(token, map[string]any{"model": "gpt", "provider_id": "openai"}, 1)
		id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "count these words"},
			"metadata": map[string]any{"webhook_url": rcv.URL + "/ok"}}, bearer(token)).expect(t, 201).str("activation_id")
		require.Equal(t, "completed", e.await(token, id).str("status"))
		e.waitMetric(`agentplatform_webhook_deliveries_total{outcome="delivered"}`, func(v float64) bool { return v == 1 })
		s := e.scrape()
		require.Equal(t, 1.0, metric(t, s, `agentplatform_activations_total{status="completed"}`))
		require.Equal(t, 1.0, metric(t, s, `agentplatform_llm_calls_total{outcome="ok",provider="openai"}`))
		require.Equal(t, 3.0, metric(t, s, `agentplatform_llm_tokens_total{kind="prompt",provider="openai"}`), "the fake counts words")
		require.Equal(t, 5.0, metric(t, s, `agentplatform_llm_tokens_total{kind="completion",provider="openai"}`))
		require.Equal(t, 1.0, metric(t, s, `agentplatform_llm_call_duration_seconds_count{provider="openai"}`))

		// A timed-out run is failed, and its webhook's failed attempt is
		// retrying.
		release := fake.Block()
		defer release()
		id = e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "slow"},
			"metadata": map[string]any{"webhook_url": rcv.URL + "/fail"}}, bearer(token)).expect(t, 201).str("activation_id")
		require.Equal(t, "Activation timed out after 1 s", e.await(token, id).str("error"))
		e.waitMetric(`agentplatform_webhook_deliveries_total{outcome="retrying"}`, func(v float64) bool { return v >= 1 })
		require.Equal(t, 1.0, metric(t, e.scrape(), `agentplatform_activations_total{status="failed"}`))

		// A cancelled run is failed too; an SSE stream of it counts while
		// open. The stream's head comes once the stream is open and counted
		// (it is flushed at once), and the stream stays open until the
		// gauge has been read: a client that closed it on receiving the
		// head left it counted for a few milliseconds, which polling
		// scrapes missed.
		g := e.llmAgent(token, map[string]any{"model": "gpt", "provider_id": "openai"}, 60)
		id = e.do("POST", "/api/v1/agents/"+g.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "hang"}}, bearer(token)).expect(t, 201).str("activation_id")
		fake.WaitCalls(t, 3)
		ctx, stopStream := context.WithCancel(context.Background())
		defer stopStream()
		req, err := http.NewRequestWithContext(ctx, "GET", e.url+"/api/v1/activations/"+id+"/stream", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		if v := metric(t, e.scrape(), `agentplatform_open_connections{kind="sse"}`); res.StatusCode != http.StatusOK || v != 1 {
			stopStream()
			b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
			t.Fatalf("open SSE connections: %v with the stream open; the stream answered %d: %s", v, res.StatusCode, b)
		}
		stopStream()
		e.waitMetric(`agentplatform_open_connections{kind="sse"}`, func(v float64) bool { return v == 0 })
		e.do("POST", "/api/v1/activations/"+id+"/cancel", nil, bearer(token)).expect(t, 200)
		s = e.scrape()
		require.Equal(t, 2.0, metric(t, s, `agentplatform_activations_total{status="failed"}`), "cancelled counts as failed")
		require.Equal(t, 1.0, metric(t, s, `agentplatform_activations_total{status="completed"}`))
		require.GreaterOrEqual(t, metric(t, s, `agentplatform_llm_calls_total{outcome="error",provider="openai"}`), 1.0)

		// promtool's lint of the exposition, where it is installed
		// (Debian: apt-get install prometheus).
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			if testdb.RequireAll() {
				t.Fatal("promtool is not installed (apt-get install prometheus)")
			}
			t.Log("promtool not installed: the scrape was not linted")
			return
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(s)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool check metrics:\n%s", out)
	})
}
