package api_test

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/oauthtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestHTTPToolConnection: an HTTP tool with `connection` sends the
// connected account's access token, fresh from the credential service, as
// Bearer: the outside world checks it at the provider.
func TestHTTPToolConnection(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		fx := newCRMApp(t, d, oauthtest.Options{}, nil)
		p, e, alice, appID := fx.p, fx.e, fx.alice, fx.appID
		check := &http.Client{}
		t.Cleanup(check.CloseIdleConnections)
		var got atomic.Value
		target := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got.Store(r.Header.Get("Authorization"))
			req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, p.UserinfoURL(), nil)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			req.Header.Set("Authorization", r.Header.Get("Authorization"))
			res, err := check.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer res.Body.Close()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(res.StatusCode)
			_, _ = io.Copy(w, res.Body)
		}))
		agentID := e.do("POST", "/api/v1/apps/"+appID+"/agents", map[string]any{"name": "clerk", "agent_type_id": "llm",
			"agent_config": map[string]any{"provider_id": "echo", "model": "echo", "tools": []any{map[string]any{
				"type": "http", "name": "whoami", "method": "GET", "url": target.URL + "/me", "connection": "crm"}}}},
			bearer(alice)).expect(t, 201).str("agent_id")
		e.connect(alice, appID, p, "alice", "/").expect(t, 303)

		id := e.do("POST", "/api/v1/agents/"+agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "call whoami {}"}},
			bearer(alice)).expect(t, 201).str("activation_id")
		done := e.await(alice, id)
		require.Equal(t, "completed", done.str("status"), done.Body)
		st := steps(e, alice, id)
		require.Equal(t, []string{"llm:completed", "tool:completed", "llm:completed"}, kinds(st))
		require.EqualValues(t, 200, st[1]["output"].(map[string]any)["status"], "the provider accepted the token: %v", st[1]["output"])
		require.True(t, strings.HasPrefix(got.Load().(string), "Bearer "), got.Load())
	})
}
