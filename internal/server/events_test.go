package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/server"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// runNode runs a platform process on dsn until the test ends: an API node
// (serve --no-worker) or a worker node.
func runNode(t *testing.T, dsn string, api bool) *server.Server {
	t.Helper()
	return runNodeWith(t, dsn, api, nil)
}

// TestEventsCrossNodes is the scale-out path: a client on an API node gets
// the events a worker node commits, through PostgreSQL NOTIFY, each node
// with its own pool and LISTEN connection on one schema.
func TestEventsCrossNodes(t *testing.T) {
	t.Parallel()
	dsn := testdb.URL(t, store.Postgres)
	apiNode := runNode(t, dsn, true)
	worker := runNode(t, dsn, false)
	base := apiNode.URL()

	// Run serves only after its event listener is up: readiness means that
	// every event committed from now on reaches this node.
	waitReady(t, base)

	post := func(path string, form url.Values) map[string]any {
		req, err := http.NewRequest("POST", base+path, strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var m map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&m))
		return m
	}
	creds := url.Values{"email": {"x@example.com"}, "password": {"password1"}, "confirm_password": {"password1"}}
	userID, _ := post("/api/v1/auth/register", creds)["id"].(string)
	require.NotEmpty(t, userID)
	token, _ := post("/api/v1/auth/login", creds)["access_token"].(string)
	require.NotEmpty(t, token)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/api/v1/ws?token="+token, nil)
	require.NoError(t, err)
	defer c.CloseNow()

	// The worker node commits and publishes, as the activation core does.
	ev := events.Event{Type: events.ActivationCompleted, UserID: userID, ActivationID: uuid.NewString(),
		AgentID: uuid.NewString(), Status: "completed", Context: map[string]any{"app_id": "a"},
		OutputData: json.RawMessage(`{"response":"` + strings.Repeat("y", 9000) + `"}`)} // by reference
	require.NoError(t, worker.Store.InTx(ctx, func(tx *store.Store) error { return worker.Events.Append(ctx, tx, &ev) }))
	worker.Events.Publish(ctx, ev)
	small := ev
	small.ActivationID, small.OutputData = uuid.NewString(), nil // inline
	require.NoError(t, worker.Store.InTx(ctx, func(tx *store.Store) error { return worker.Events.Append(ctx, tx, &small) }))
	worker.Events.Publish(ctx, small)

	for _, want := range []events.Event{ev, small} {
		_, data, err := c.Read(ctx)
		require.NoError(t, err)
		var got events.Event
		require.NoError(t, json.Unmarshal(data, &got))
		require.Equal(t, want.Seq, got.Seq)
		require.Equal(t, want.ActivationID, got.ActivationID)
		require.Equal(t, len(want.OutputData), len(got.OutputData))
	}
}

// waitReady waits until the node at base answers /readyz with 200.
func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		require.True(t, time.Now().Before(deadline), "API node never ready: %v", err)
		time.Sleep(20 * time.Millisecond) //nolint:forbidigo // polling readiness with a deadline
	}
}
