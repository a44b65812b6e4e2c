package api_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/llm/llmtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// privateURLs are webhook or provider URLs on the platform's own machine
// or network, as an attacker would spell them.
var privateURLs = []string{
	"http://127.0.0.1:8080/hook",
	"http://localhost:8080/hook",
	"http://[::1]:8080/hook",
	"http://0.0.0.0:8080/hook",
	"http://[::ffff:127.0.0.1]:8080/hook",
	"http://2130706433:8080/hook",
	"http://169.254.169.254/latest/meta-data/",
	"http://10.0.0.7/hook",
}

// TestPrivateURLsRefusedAtCreate: a literal private address in a webhook
// URL or a provider's base_url is a 400 naming the field and
// AP_EGRESS_ALLOW, wherever it is given; the allowed address is accepted.
func TestPrivateURLsRefusedAtCreate(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("u@example.com")
		f := e.llmAgent(token, nil, 0)
		m := exampleManifest(t)
		agents := m["agents"].([]any)
		agentsPath := "/api/v1/apps/" + f.appID + "/agents"

		for _, u := range privateURLs {
			e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{},
				"metadata": map[string]any{"webhook_url": u}}, bearer(token)).
				expectError(t, 400, "ValidationError", "Invalid value for field metadata.webhook_url: ").
				expectError(t, 400, "ValidationError", "(allow it with AP_EGRESS_ALLOW)")
			e.do("POST", "/api/v1/apps/"+f.appID+"/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{},
				"metadata": map[string]any{"webhook_url": u}}, bearer(token)).expectError(t, 400, "ValidationError", "metadata.webhook_url")
			e.do("POST", "/api/v1/activations", map[string]any{"agent_id": f.agentID, "input_data": map[string]any{},
				"metadata": map[string]any{"webhook_url": u}}, bearer(token)).expectError(t, 400, "ValidationError", "metadata.webhook_url")

			e.do("POST", agentsPath, map[string]any{"name": "n", "agent_type_id": "llm", "webhook_url": u,
				"agent_config": map[string]any{"model": "echo"}}, bearer(token)).
				expectError(t, 400, "ValidationError", "Invalid value for field webhook_url: ")
			e.do("PATCH", agentsPath+"/"+f.agentID, map[string]any{"webhook_url": u}, bearer(token)).
				expectError(t, 400, "ValidationError", "Invalid value for field webhook_url: ")

			agents[0].(map[string]any)["webhook_url"] = u
			e.importManifest(token, m).expectError(t, 400, "ValidationError", "Invalid value for field agents[0].webhook_url: ")
			e.do("POST", "/api/v1/apps", map[string]any{"name": "x", "slug": "x", "manifest_data": m}, bearer(token)).
				expectError(t, 400, "ValidationError", "Invalid value for field manifest_data.agents[0].webhook_url: ")

			e.do("POST", providersPath, map[string]any{"name": "p", "provider_type": "openai_compatible", "base_url": u + "/v1"},
				bearer(token)).expectError(t, 400, "ValidationError", "Invalid value for field base_url: ").
				expectError(t, 400, "ValidationError", "AP_EGRESS_ALLOW")
		}
		r := e.do("POST", agentsPath, map[string]any{"name": "hooked", "agent_type_id": "llm", "webhook_url": "http://hooks.example.com/x",
			"agent_config": map[string]any{"model": "echo"}}, bearer(token)).expect(t, 201)
		e.do("PATCH", agentsPath+"/"+r.str("id"), map[string]any{"webhook_url": "http://127.0.0.1/x"}, bearer(token)).expect(t, 400)
		e.do("POST", agentsPath, map[string]any{"name": "agent-hook", "agent_type_id": "custom",
			"agent_config": map[string]any{"runtime": "webhook", "url": "http://[::1]/run"}}, bearer(token)).
			expectError(t, 400, "ValidationError", "agent_config.url")

		p := e.do("POST", providersPath, map[string]any{"name": "p", "provider_type": "openai_compatible", "base_url": "https://llm.example.com/v1"},
			bearer(token)).expect(t, 201)
		e.do("PATCH", providersPath+"/"+p.str("id"), map[string]any{"base_url": "http://[::ffff:7f00:1]/v1"}, bearer(token)).
			expectError(t, 400, "ValidationError", "base_url")

		// The allowed address (AP_EGRESS_ALLOW=127.0.0.2/32 in tests) is fine.
		allowed := "http://" + egresstest.Addr + ":9/hook"
		e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{},
			"metadata": map[string]any{"webhook_url": allowed}}, bearer(token)).expect(t, 201)
		e.do("PATCH", agentsPath+"/"+f.agentID, map[string]any{"webhook_url": allowed}, bearer(token)).expect(t, 200)
		e.do("PATCH", providersPath+"/"+p.str("id"), map[string]any{"base_url": allowed}, bearer(token)).expect(t, 200)
	})
}

// insideServer is an internal service on 127.0.0.1 (where the platform
// itself listens): nothing a user supplies may reach it.
func insideServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// awaitDeliveries polls an activation's delivery records until there are n.
func (e *env) awaitDeliveries(token, activationID string, n int) []map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := e.do("GET", "/api/v1/activations/"+activationID+"/deliveries", nil, bearer(token)).expect(e.t, 200)
		if got := list(r, "deliveries"); len(got) >= n {
			return got
		}
		require.True(e.t, time.Now().Before(deadline), "deliveries: %s", r.Body)
		time.Sleep(10 * time.Millisecond) //nolint:forbidigo // polling with a deadline
	}
}

// TestWebhookNeverReachesPrivateAddresses: a webhook URL stored before the
// guard (or through a name that resolves to loopback) is refused when
// dialled: nothing is POSTed, the refusal is recorded, and no raw dial
// error or query string shows.
func TestWebhookNeverReachesPrivateAddresses(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("u@example.com")
		var hits atomic.Int32
		in := insideServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
		_, port, err := net.SplitHostPort(in.Listener.Addr().String())
		require.NoError(t, err)

		for _, target := range []string{
			in.URL + "/hook?token=s3cret",
			"http://localhost:" + port + "/hook?token=s3cret",
			"http://[::ffff:127.0.0.1]:" + port + "/hook?token=s3cret",
		} {
			f := e.llmAgent(token, nil, 0)
			ag, err := e.srv.Store.AgentGet(context.Background(), f.agentID)
			require.NoError(t, err)
			ag.WebhookURL = target // as stored before the create-time check existed
			require.NoError(t, e.srv.Store.AgentUpdate(context.Background(), ag))
			id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "x"}},
				bearer(token)).expect(t, 201).str("activation_id")
			dl := e.awaitDeliveries(token, id, 1)[0]
			require.Equal(t, "gave_up", dl["state"], "a refusal is not retried: %v", dl)
			require.Contains(t, dl["error"], "a private address (allow it with AP_EGRESS_ALLOW)")
			require.Contains(t, dl["error"], "webhook_url")
			require.Equal(t, float64(0), dl["status_code"])
			require.NotContains(t, dl["url"], "s3cret")
			require.NotContains(t, dl["error"], "dial")
		}
		require.Zero(t, hits.Load(), "a webhook reached the internal service")
		require.NotContains(t, e.logs.String(), "s3cret", "a webhook URL's query was logged")
	})
}

// TestUserProviderCannotReachInternalServices: a user's provider whose
// base_url is on 127.0.0.1 (stored before the check, or reached by name)
// is refused when dialled; the internal service's answer never comes back.
// The system provider, configured by the operator, is not guarded.
func TestUserProviderCannotReachInternalServices(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		internal := llmtest.NewOpenAI(t)
		internal.SetReply("internal secrets")
		target, err := url.Parse(internal.URL)
		require.NoError(t, err)
		target.Path = ""
		inside := insideServer(t, httputil.NewSingleHostReverseProxy(target))
		e := newEnv(t, d, map[string]string{"AP_OPENAI_BASE_URL": inside.URL + "/v1"})
		token := e.signup("u@example.com")
		me := e.do("GET", "/api/v1/users/me", nil, bearer(token)).expect(t, 200).str("id")
		now := store.Now()
		p := &store.LLMProvider{ID: uuid.NewString(), UserID: me, Name: "sneaky", ProviderType: "openai_compatible",
			BaseURL: inside.URL + "/v1", Models: []string{"m"}, DefaultModel: "m", CreatedAt: now, UpdatedAt: now}
		require.NoError(t, e.srv.Store.LLMProviderCreate(context.Background(), p))

		r := e.do("POST", providersPath+"/"+p.ID+"/test", nil, bearer(token)).expect(t, 200)
		require.Equal(t, false, r.JSON["ok"], "body: %s", r.Body)
		require.Contains(t, r.str("error"), "base_url resolves to 127.0.0.1, a private address (allow it with AP_EGRESS_ALLOW)")
		require.NotContains(t, string(r.Body), "internal secrets")
		require.Zero(t, internal.Calls(), "the internal service was reached")

		f := e.llmAgent(token, map[string]any{"model": "m", "provider_id": p.ID}, 0)
		id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "x"}},
			bearer(token)).expect(t, 201).str("activation_id")
		done := e.await(token, id)
		require.Equal(t, "failed", done.str("status"))
		require.Contains(t, done.str("error"), "AP_EGRESS_ALLOW")
		require.Zero(t, internal.Calls())

		// The operator's system provider on the same address works.
		r = e.do("POST", providersPath+"/openai/test", nil, bearer(token)).expect(t, 200)
		require.Equal(t, true, r.JSON["ok"], "body: %s", r.Body)
		require.Equal(t, 1, internal.Calls())
	})
}

// TestWebhookRedirectIsAFailedAttempt: a 3xx is not followed (neither as a
// re-sent POST nor as a bodiless GET): the attempt failed, recorded with
// its status, and is retried.
func TestWebhookRedirectIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		token := e.signup("u@example.com")
		var followed atomic.Int32
		mux := http.NewServeMux()
		mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		})
		mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		})
		mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) { followed.Add(1) })
		rcv := egresstest.NewServer(t, mux)
		f := e.llmAgent(token, nil, 0)
		for path, status := range map[string]float64{"/hook": 307, "/moved": 302} {
			id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "x"},
				"metadata": map[string]any{"webhook_url": rcv.URL + path}}, bearer(token)).expect(t, 201).str("activation_id")
			dl := e.awaitDeliveries(token, id, 1)[0]
			require.Equal(t, status, dl["status_code"], "%v", dl)
			require.Equal(t, "retrying", dl["state"])
			require.NotEmpty(t, dl["next_attempt_at"])
			require.Contains(t, dl["error"], "redirect")
		}
		require.Zero(t, followed.Load(), "a redirect was followed")
	})
}
