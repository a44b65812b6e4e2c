package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// socket opens /api/v1/ws with query and headers; it returns the HTTP
// status when the handshake is refused.
func (e *env) socket(query string, h http.Header) (*websocket.Conn, int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.url, "http")+"/api/v1/ws?"+query, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		require.NotNil(e.t, res, "dial: %v", err)
		return nil, res.StatusCode
	}
	e.t.Cleanup(func() { c.CloseNow() })
	return c, http.StatusSwitchingProtocols
}

// emit stores and publishes an activation event of user, as the activation
// core does.
func (e *env) emit(user, typ, app string) events.Event {
	e.t.Helper()
	ctx := context.Background()
	ev := events.Event{Type: typ, UserID: user, ActivationID: uuid.NewString(), AgentID: uuid.NewString(),
		Status: "completed", Context: map[string]any{"app_id": app, "chat_id": "c1"}, OutputData: json.RawMessage(`{"response":"hi"}`)}
	require.NoError(e.t, e.srv.Store.InTx(ctx, func(tx *store.Store) error { return e.srv.Events.Append(ctx, tx, &ev) }))
	e.srv.Events.Publish(ctx, ev)
	return ev
}

func readEvent(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, data, err := c.Read(ctx)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

func TestEventsSocket(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		alice := e.signup("alice@example.com")
		bob := e.signup("bob@example.com")
		aliceID := e.do("GET", "/api/v1/users/me", nil, bearer(alice)).expect(t, 200).str("id")
		bobID := e.do("GET", "/api/v1/users/me", nil, bearer(bob)).expect(t, 200).str("id")
		key := e.keyWith(alice, "read:all")
		auth := func(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }
		app1 := e.llmAgent(alice, nil, 0).appID // a filter names one of the caller's apps

		// Refusals answer with the error body before any upgrade.
		e.do("GET", "/api/v1/ws", nil).expectError(t, 401, "AuthenticationError", "Authentication required")
		e.do("GET", "/api/v1/ws?token=ak_nope", nil).expectError(t, 401, "AuthenticationError", "Invalid API key")
		e.do("GET", "/api/v1/ws", nil, bearer(alice)).expectError(t, 400, "ValidationError", "WebSocket")
		_, status := e.socket("since=-1", auth(alice))
		require.Equal(t, 400, status)
		_, status = e.socket("since=abc", auth(alice))
		require.Equal(t, 400, status)
		// A cookie from another site's page is refused; the platform's own
		// pages may use it.
		_, status = e.socket("", http.Header{"Cookie": {"ap_session=" + alice}, "Origin": {"https://evil.example"}})
		require.Equal(t, 403, status)

		byHeader, _ := e.socket("", auth(key))
		byQuery, _ := e.socket("token="+alice+"&app_id="+app1, nil)
		byCookie, _ := e.socket("", http.Header{"Cookie": {"ap_session=" + alice}, "Origin": {e.url}})
		bobs, _ := e.socket("", auth(bob))

		bobsOwn := e.emit(bobID, events.ActivationCompleted, app1)
		skipped := e.emit(aliceID, events.ActivationFailed, "app2")
		ev := e.emit(aliceID, events.ActivationCompleted, app1)
		for _, c := range []*websocket.Conn{byHeader, byCookie} {
			require.Equal(t, skipped.ActivationID, readEvent(t, c)["activation_id"])
			got := readEvent(t, c)
			require.Equal(t, ev.ActivationID, got["activation_id"])
			require.Equal(t, "activation_completed", got["type"])
			require.EqualValues(t, ev.Seq, got["seq"])
			require.Equal(t, map[string]any{"response": "hi"}, got["output_data"])
			require.Equal(t, map[string]any{"app_id": app1, "chat_id": "c1"}, got["context"])
			require.NotEmpty(t, got["timestamp"])
		}
		require.Equal(t, ev.ActivationID, readEvent(t, byQuery)["activation_id"], "app_id filter skipped app2")
		got := readEvent(t, bobs)
		require.EqualValues(t, bobsOwn.Seq, got["seq"], "bob sees only his own event")
		require.NotEqual(t, ev.ActivationID, got["activation_id"])

		// Reconnecting with since replays what was missed.
		replay, _ := e.socket("since="+itoa(skipped.Seq), auth(alice))
		require.Equal(t, ev.ActivationID, readEvent(t, replay)["activation_id"])
	})
}

func TestEventsSocketInOpenAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	r := e.do("GET", "/api/v1/openapi.json", nil).expect(t, 200)
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct{ Name string } `json:"parameters"`
			Responses  map[string]any          `json:"responses"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &doc))
	op, ok := doc.Paths["/api/v1/ws"]["get"]
	require.True(t, ok, "GET /api/v1/ws is documented")
	var names []string
	for _, p := range op.Parameters {
		names = append(names, p.Name)
	}
	require.ElementsMatch(t, []string{"app_id", "chat_id", "activation_id", "since", "token"}, names)
	require.Contains(t, op.Responses, "101")
}

// TestSocketSubscribeToAnotherApp: a subscribe message naming an app that
// is not the caller's (another user's, none, not an id) is refused with an
// error frame carrying the 404 the HTTP API gives for it (detail,
// status_code, error_type), and the filter in effect stays; one of the
// caller's apps is subscribed to.
func TestSocketSubscribeToAnotherApp(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		alice := e.signup("alice@example.com")
		bob := e.signup("bob@example.com")
		aliceID := e.do("GET", "/api/v1/users/me", nil, bearer(alice)).expect(t, 200).str("id")
		mine, theirs := e.llmAgent(alice, nil, 0).appID, e.llmAgent(bob, nil, 0).appID
		c, _ := e.socket("app_id="+mine, http.Header{"Authorization": {"Bearer " + alice}})
		subscribe := func(appID string) map[string]any {
			t.Helper()
			msg, err := json.Marshal(map[string]any{"type": "subscribe", "app_id": appID})
			require.NoError(t, err)
			require.NoError(t, c.Write(context.Background(), websocket.MessageText, msg))
			return readEvent(t, c)
		}
		for _, appID := range []string{theirs, uuid.NewString(), "not-a-uuid"} {
			got := subscribe(appID)
			require.Equal(t, "error", got["type"], appID)
			require.Equal(t, "App not found", got["detail"], appID)
			require.EqualValues(t, http.StatusNotFound, got["status_code"], appID)
			require.Equal(t, "NotFoundError", got["error_type"], appID)
			require.Equal(t, "App not found", got["error"], appID)
		}
		// The filter in effect is still the query's: an event of another
		// app of alice's does not come through, one of hers does.
		e.emit(aliceID, events.ActivationCompleted, uuid.NewString())
		ev := e.emit(aliceID, events.ActivationCompleted, mine)
		require.Equal(t, ev.ActivationID, readEvent(t, c)["activation_id"])

		got := subscribe(mine)
		require.Equal(t, "subscribed", got["type"])
		require.Equal(t, mine, got["app_id"])
	})
}

// TestSocketActivationFilterOfAnother: an activation_id filter names one of
// the caller's activations, as GET /api/v1/activations/{id} does: another
// user's, or none, is 404 at the handshake and an error frame on a
// subscribe message; the caller's own is accepted.
func TestSocketActivationFilterOfAnother(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		alice := e.signup("alice@example.com")
		bob := e.signup("bob@example.com")
		activate := func(token string) string {
			f := e.llmAgent(token, nil, 0)
			return e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "hi"}},
				bearer(token)).expect(t, 201).str("activation_id")
		}
		mine, theirs := activate(alice), activate(bob)
		auth := http.Header{"Authorization": {"Bearer " + alice}}
		for _, id := range []string{theirs, uuid.NewString(), "not-a-uuid"} {
			_, status := e.socket("activation_id="+id, auth)
			require.Equal(t, http.StatusNotFound, status, id)
		}
		c, status := e.socket("activation_id="+mine, auth)
		require.Equal(t, http.StatusSwitchingProtocols, status)
		msg, err := json.Marshal(map[string]any{"type": "subscribe", "activation_id": theirs})
		require.NoError(t, err)
		require.NoError(t, c.Write(context.Background(), websocket.MessageText, msg))
		got := readEvent(t, c)
		require.Equal(t, "error", got["type"])
		require.EqualValues(t, http.StatusNotFound, got["status_code"])
	})
}
