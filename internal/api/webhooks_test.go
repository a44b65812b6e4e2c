package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

func TestWebhookSecretAndDeliveries(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		alice := e.signup("alice@example.com") // the first user: an admin
		bob := e.signup("bob@example.com")
		bobID := e.do("GET", "/api/v1/users/me", nil, bearer(bob)).expect(t, 200).str("id")
		now := store.Now()
		app := &store.App{ID: uuid.NewString(), UserID: bobID, Name: "B", Slug: "b", Version: "1.0.0", Status: "active", CreatedAt: now, UpdatedAt: now}
		require.NoError(t, e.srv.Store.AppCreate(context.Background(), app))
		path := "/api/v1/apps/" + app.ID + "/webhook-secret"

		first := e.do("GET", path, nil, bearer(bob)).expect(t, 200).str("secret")
		require.True(t, strings.HasPrefix(first, "whsec_"), first)
		require.Equal(t, first, e.do("GET", path, nil, bearer(bob)).expect(t, 200).str("secret"))
		rotated := e.do("POST", path, nil, bearer(bob)).expect(t, 200).str("secret")
		require.NotEqual(t, first, rotated)
		require.Equal(t, rotated, e.do("GET", path, nil, cookie(bob)).expect(t, 200).str("secret"))

		// Another user's app does not exist for them, even for an admin
		// without a reason; with one, the access is audited.
		e.do("GET", path, nil, bearer(alice)).expectError(t, 404, "NotFoundError", "App not found")
		e.do("POST", path, nil, bearer(alice)).expectError(t, 404, "NotFoundError", "App not found")
		require.Equal(t, rotated, e.do("GET", path, nil, bearer(alice), header("X-Admin-Reason", "ticket 9")).expect(t, 200).str("secret"))
		e.do("GET", "/api/v1/apps/"+uuid.NewString()+"/webhook-secret", nil, bearer(bob)).expectError(t, 404, "NotFoundError", "App not found")
		e.do("GET", "/api/v1/apps/nope/webhook-secret", nil, bearer(bob)).expectError(t, 404, "NotFoundError", "App not found")
		e.do("GET", path, nil).expect(t, 401)
		// Managing an app is not using it: an app:access key may not read
		// the secret, a read key may read but not rotate.
		e.do("GET", path, nil, bearer(e.keyWith(bob, "app:access"))).expect(t, 403)
		reader := e.keyWith(bob, "read:all")
		e.do("GET", path, nil, bearer(reader)).expect(t, 200)
		e.do("POST", path, nil, bearer(reader)).expect(t, 403)

		// Deliveries of an unknown activation, or of a bad id: 404; a bad
		// page size: 400 naming it.
		e.do("GET", "/api/v1/activations/"+uuid.NewString()+"/deliveries", nil, bearer(bob)).expectError(t, 404, "NotFoundError", "Activation not found")
		e.do("GET", "/api/v1/activations/x/deliveries", nil, bearer(bob)).expectError(t, 404, "NotFoundError", "Activation not found")
		e.do("GET", "/api/v1/activations/"+uuid.NewString()+"/deliveries?limit=0", nil, bearer(bob)).expectError(t, 400, "ValidationError", "limit")
	})
}

// TestActivationEventsReachSocketAndWebhook is the whole path: an
// activation run by the real worker announces itself on the WebSocket, and
// its final event is POSTed, signed, to metadata.webhook_url and recorded.
func TestActivationEventsReachSocketAndWebhook(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("u@example.com")
		f := e.llmAgent(token, nil, 0)
		hooks := make(chan *http.Request, 4)
		bodies := make(chan []byte, 4)
		rcv := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			hooks <- r
			bodies <- body
		}))
		ws, _ := e.socket("app_id="+f.appID, http.Header{"Authorization": {"Bearer " + token}})

		id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{
			"input_data": map[string]any{"prompt": "hi"}, "metadata": map[string]any{"webhook_url": rcv.URL + "/done"},
		}, bearer(token)).expect(t, 201).str("activation_id")

		var types []string
		var last float64
		for len(types) == 0 || types[len(types)-1] != "activation_completed" {
			ev := readEvent(t, ws)
			require.Equal(t, id, ev["activation_id"])
			require.Greater(t, ev["seq"], last, "seq increases")
			last = ev["seq"].(float64)
			types = append(types, ev["type"].(string))
			if ev["type"] == "activation_completed" {
				require.Equal(t, "echo: hi", ev["output_data"].(map[string]any)["response"])
				require.Equal(t, f.appID, ev["context"].(map[string]any)["app_id"])
			}
		}
		require.Equal(t, []string{"activation_created", "activation_started", "activation_completed"}, types)

		var hook *http.Request
		select {
		case hook = <-hooks:
		case <-time.After(30 * time.Second):
			t.Fatal("the webhook never came")
		}
		body := <-bodies
		secret := e.do("GET", "/api/v1/apps/"+f.appID+"/webhook-secret", nil, bearer(token)).expect(t, 200).str("secret")
		require.NoError(t, webhook.Verify(secret, hook.Header, body, time.Minute))
		require.Equal(t, "/done", hook.URL.Path)
		var ev map[string]any
		require.NoError(t, json.Unmarshal(body, &ev))
		require.Equal(t, "activation_completed", ev["type"])
		require.Equal(t, id, ev["activation_id"])
		require.Equal(t, last, ev["seq"], "the webhook carries the event's seq, as the socket did")

		deadline := time.Now().Add(10 * time.Second)
		for {
			r := e.do("GET", "/api/v1/activations/"+id+"/deliveries", nil, bearer(token)).expect(t, 200)
			if r.JSON["total_count"] == float64(1) {
				dl := r.JSON["deliveries"].([]any)[0].(map[string]any)
				require.Equal(t, float64(200), dl["status_code"])
				require.Equal(t, float64(1), dl["attempt"])
				require.Equal(t, hook.Header.Get("webhook-id"), dl["webhook_id"])
				require.Equal(t, false, r.JSON["has_more"])
				break
			}
			require.True(t, time.Now().Before(deadline), "delivery not recorded: %s", r.Body)
			time.Sleep(10 * time.Millisecond) //nolint:forbidigo // polling with a deadline
		}
		other := e.signup("other@example.com")
		e.do("GET", "/api/v1/activations/"+id+"/deliveries", nil, bearer(other)).expectError(t, 404, "NotFoundError", "Activation not found")
	})
}

// TestAgentWebhookURL: without metadata.webhook_url, an ended activation is
// POSTed to its agent's webhook_url (failed ones too); metadata's wins.
func TestAgentWebhookURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	token := e.signup("u@example.com")
	paths := make(chan string, 4)
	rcv := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev map[string]any
		_ = json.Unmarshal(body, &ev)
		paths <- r.URL.Path + " " + ev["type"].(string)
	}))
	f := e.llmAgent(token, nil, 0)
	ag, err := e.srv.Store.AgentGet(context.Background(), f.agentID)
	require.NoError(t, err)
	ag.WebhookURL = rcv.URL + "/agent"
	require.NoError(t, e.srv.Store.AgentUpdate(context.Background(), ag))
	await := func() string {
		select {
		case p := <-paths:
			return p
		case <-time.After(30 * time.Second):
			t.Fatal("no webhook")
			return ""
		}
	}

	e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "a"}}, bearer(token)).expect(t, 201)
	require.Equal(t, "/agent activation_completed", await())

	e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "b"},
		"metadata": map[string]any{"webhook_url": rcv.URL + "/meta"}}, bearer(token)).expect(t, 201)
	require.Equal(t, "/meta activation_completed", await())

	// A cancelled activation (no run, so no agent loaded) still reaches it,
	// and with activations paused: deliveries run on their own queue.
	e.do("POST", "/api/v1/worker/pause", nil, bearer(token)).expect(t, 200) // first user: admin
	for try := 1; ; try++ {
		time.Sleep(150 * time.Millisecond) //nolint:forbidigo // River applies a pause asynchronously
		id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "c"}}, bearer(token)).expect(t, 201).str("activation_id")
		r := e.do("POST", "/api/v1/activations/"+id+"/cancel", nil, bearer(token))
		if r.Status == 200 {
			break
		}
		// Under load, River may take the job before it hears of the pause.
		r.expect(t, 409)
		require.Less(t, try, 10, "the pause never took hold")
		require.Equal(t, "/agent activation_completed", await())
	}
	require.Equal(t, "/agent activation_failed", await())
}
