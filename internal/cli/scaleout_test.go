package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestScaleOutOnPostgres runs the scale-out shape with real processes on
// one PostgreSQL database: an API node (serve --no-worker) and a worker
// process (agentplatform worker). The API node only queues; the worker runs
// the activation; its events reach a WebSocket client of the API node
// through LISTEN/NOTIFY.
func TestScaleOutOnPostgres(t *testing.T) {
	t.Parallel()
	dsn := testdb.URL(t, store.Postgres)
	env := environ(t.TempDir(), "AP_DATABASE_URL="+dsn, "AP_SECRET_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "AP_RATE_LIMIT=1000000")
	api := startServe(t, env, "--no-worker")
	require.Contains(t, api.Banner[2], "off (--no-worker)")
	p := setupEchoPlatform(t, api.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, strings.Replace(api.URL, "http", "ws", 1)+"/api/v1/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + p.key}}})
	require.NoError(t, err)
	defer ws.CloseNow()

	// No worker yet: the activation waits, queued.
	var a struct {
		ID string `json:"activation_id"`
	}
	p.call("POST", "/api/v1/agents/"+p.agent+"/activate", p.key, map[string]any{"input_data": map[string]any{"prompt": "scale out"}}, &a)
	var st struct {
		Status string `json:"status"`
	}
	p.call("GET", "/api/v1/activations/"+a.ID, p.key, nil, &st)
	require.Equal(t, "queued", st.Status)

	worker := start(t, env, "worker")
	defer worker.stop()

	types := []string{}
	for {
		_, data, err := ws.Read(ctx)
		require.NoError(t, err, "events so far: %v", types)
		var ev struct {
			Type         string         `json:"type"`
			ActivationID string         `json:"activation_id"`
			OutputData   map[string]any `json:"output_data"`
		}
		require.NoError(t, json.Unmarshal(data, &ev))
		if ev.ActivationID != a.ID {
			continue
		}
		types = append(types, ev.Type)
		if ev.Type == "activation_completed" {
			require.Equal(t, "echo: scale out", ev.OutputData["response"])
			break
		}
	}
	require.Equal(t, []string{"activation_created", "activation_started", "activation_completed"}, types)

	var status struct {
		Workers []struct {
			PID int `json:"pid"`
		} `json:"workers"`
	}
	p.call("GET", "/api/v1/worker/status", p.key, nil, &status)
	require.Len(t, status.Workers, 1, "the worker process is registered; the API node is not a worker")
	require.Equal(t, worker.cmd.Process.Pid, status.Workers[0].PID)
	api.stop()
}

// setupEchoPlatform is setupPlatform with an agent on the echo provider.
func setupEchoPlatform(t *testing.T, base string) *platform {
	return setupPlatformWith(t, base, map[string]any{"model": "echo", "provider_id": "echo"})
}
