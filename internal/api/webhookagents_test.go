package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/api"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

// agentReceiver is a webhook agent in the outside world. /run verifies
// the request's signature with the secret of the agent (by id), calls the
// platform back with the request's agent key on each path of
// input_data.calls, and answers {input, statuses}. /fail answers 500,
// /html a page, /slow nothing until the request ends.
type agentReceiver struct {
	url     string
	e       *env
	mu      sync.Mutex
	secrets map[string]string         // by agent id
	got     map[string]map[string]any // request bodies by activation id
	headers map[string]http.Header    // request headers by activation id
	sigErrs map[string]error          // signature checks by activation id
	hits    atomic.Int32
	slow    chan string // a /slow request of this activation has arrived
}

func newAgentReceiver(t *testing.T, e *env) *agentReceiver {
	rc := &agentReceiver{e: e, secrets: map[string]string{}, got: map[string]map[string]any{}, sigErrs: map[string]error{},
		headers: map[string]http.Header{}, slow: make(chan string, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /{agent}/{what}", func(w http.ResponseWriter, r *http.Request) {
		rc.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		id, _ := body["activation_id"].(string)
		rc.mu.Lock()
		secret := rc.secrets[r.PathValue("agent")]
		rc.got[id] = body
		rc.headers[id] = r.Header.Clone()
		rc.sigErrs[id] = webhook.Verify(secret, r.Header, b, time.Minute)
		rc.mu.Unlock()
		switch r.PathValue("what") {
		case "fail":
			http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
			return
		case "html":
			_, _ = io.WriteString(w, "<html>done</html>")
			return
		case "slow":
			rc.slow <- id
			<-r.Context().Done()
			return
		}
		key, _ := body["agent_key"].(string)
		input, _ := body["input_data"].(map[string]any)
		calls, _ := input["calls"].([]any)
		statuses := []int{}
		for _, p := range calls {
			statuses = append(statuses, rc.call(key, p.(string)))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"input": input, "statuses": statuses})
	})
	rc.url = egresstest.NewServer(t, mux).URL
	return rc
}

// call GETs the platform's path with an agent key, from outside the test's
// goroutine (the receiver's handler), and returns the status.
func (rc *agentReceiver) call(key, path string) int {
	req, _ := http.NewRequest(http.MethodGet, rc.e.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	res.Body.Close()
	return res.StatusCode
}

// request is what the receiver got for activation id.
func (rc *agentReceiver) request(t *testing.T, id string) (map[string]any, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	body, ok := rc.got[id]
	require.True(t, ok, "the receiver got no request for %s", id)
	return body, rc.sigErrs[id]
}

// webhookAgent creates a webhook agent in app posting to the receiver's
// path what, and returns its id; its generated secret is the receiver's.
func (rc *agentReceiver) webhookAgent(t *testing.T, token, appID, name, what string, timeout int) string {
	t.Helper()
	r := rc.e.do("POST", "/api/v1/apps/"+appID+"/agents", map[string]any{"name": name, "agent_type_id": "custom", "timeout_seconds": timeout,
		"agent_config": map[string]any{"runtime": "webhook", "url": rc.url + "/" + name + "/" + what + "?token=s3cret"}},
		bearer(token)).expect(t, 201)
	secret := r.str("webhook_secret")
	require.NoError(t, webhook.CheckSecret(secret), "a generated secret is shown once")
	require.Equal(t, map[string]any{"runtime": "webhook", "url": rc.url + "/" + name + "/" + what + "?token=s3cret"}, r.JSON["agent_config"])
	rc.mu.Lock()
	rc.secrets[name] = secret
	rc.mu.Unlock()
	return r.str("agent_id")
}

// probeAppData registers, on e's API only, a stand-in for the app data
// routes (branch appdata): GET /api/v1/data/{app_id}/probe with their rule,
// auth.AppData, answering 200 for an app the caller owns.
func probeAppData(e *env) {
	type in struct {
		AppID string `path:"app_id"`
	}
	type out struct {
		Body struct {
			AppID string `json:"app_id"`
		}
	}
	api.Register(e.srv.API.Huma(), huma.Operation{OperationID: "probe-app-data", Method: http.MethodGet, Path: "/api/v1/data/{app_id}/probe"},
		auth.AppData, func(ctx context.Context, i *in) (*out, error) {
			app, err := e.srv.Apps.OwnedApp(ctx, auth.CallerFrom(ctx), i.AppID)
			if err != nil {
				return nil, err
			}
			o := &out{}
			o.Body.AppID = app.ID
			return o, nil
		})
}

func (e *env) newApp(token, slug string) string {
	e.t.Helper()
	return e.do("POST", "/api/v1/apps", map[string]any{"name": slug, "slug": slug}, bearer(token)).expect(e.t, 201).str("app_id")
}

// TestWebhookAgentRunsWithItsAgentKey: a webhook agent's activation is
// POSTed signed with the secret shown once, with its agent and app ids,
// its input, context, a working agent key and the API's base URL, and
// completes with the receiver's JSON. The key opens its app's data routes
// only (403 elsewhere, 404 for another app, another user's key 404 for
// this user's app) while the run runs, and is refused (401) once it ended.
func TestWebhookAgentRunsWithItsAgentKey(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		probeAppData(e)
		rc := newAgentReceiver(t, e)
		owner, other := e.signup("owner@example.com"), e.signup("other@example.com")
		appA, appA2, appB := e.newApp(owner, "desk"), e.newApp(owner, "notes"), e.newApp(other, "desk")
		agent := rc.webhookAgent(t, owner, appA, "hook", "run", 30)
		probe := func(app string) string { return "/api/v1/data/" + app + "/probe" }

		calls := []string{probe(appA), probe(appA2), "/api/v1/apps", "/api/v1/apps/" + appA + "/agents", "/api/v1/agents/" + agent,
			"/api/v1/users/me", "/api/v1/user/api-keys"}
		id := e.do("POST", "/api/v1/agents/"+agent+"/activate", map[string]any{"input_data": map[string]any{"calls": calls},
			"context": map[string]any{"chat_id": "c1"}}, bearer(owner)).expect(t, 201).str("activation_id")
		done := e.await(owner, id)
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		out := done.JSON["output_data"].(map[string]any)
		require.Equal(t, map[string]any{"calls": toAny(calls)}, out["input"], "the receiver's JSON is the output")
		require.Equal(t, []any{200.0, 404.0, 403.0, 403.0, 403.0, 403.0, 403.0}, out["statuses"],
			"during the run the key opens its app's data only: %v", calls)

		body, sigErr := rc.request(t, id)
		require.NoError(t, sigErr, "the signature verifies with the secret shown at create")
		require.Equal(t, id, body["activation_id"])
		require.Equal(t, agent, body["agent_id"], "the agent learns its own id")
		require.Equal(t, appA, body["app_id"], "and its app's, which the agent key's routes take")
		require.Equal(t, map[string]any{"calls": toAny(calls)}, body["input_data"])
		require.Equal(t, "c1", body["context"].(map[string]any)["chat_id"])
		require.Equal(t, e.srv.Config.PublicURL+"/api/v1", body["base_url"])
		key := body["agent_key"].(string)
		require.Regexp(t, `^agk_`, key)
		for _, p := range []string{probe(appA), "/api/v1/apps"} {
			e.do("GET", p, nil, bearer(key)).expectError(t, 401, "AuthenticationError", "valid only while its activation runs")
		}
		require.NotContains(t, e.logs.String(), "s3cret", "the agent's URL query was logged")
		require.NotContains(t, e.logs.String(), key, "the agent key was logged")

		// Another user's run: its key does not reach this user's app.
		theirs := rc.webhookAgent(t, other, appB, "their-hook", "run", 30)
		id = e.do("POST", "/api/v1/agents/"+theirs+"/activate", map[string]any{"input_data": map[string]any{"calls": []string{probe(appA), probe(appB)}}},
			bearer(other)).expect(t, 201).str("activation_id")
		done = e.await(other, id)
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		require.Equal(t, []any{404.0, 200.0}, done.JSON["output_data"].(map[string]any)["statuses"])
	})
}

// TestInstalledWebhookAgentGetsItsOwnIDs: an installed copy of a webhook
// agent is POSTed the copy's agent and app ids, not the publisher's, and
// its agent key opens the copy's app.
func TestInstalledWebhookAgentGetsItsOwnIDs(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		probeAppData(e)
		rc := newAgentReceiver(t, e)
		author, user := e.signup("author@example.com"), e.signup("user@example.com") // the first user: an admin
		app := e.newApp(author, "hooked")
		agent := rc.webhookAgent(t, author, app, "hook", "run", 30)
		e.do("PATCH", "/api/v1/apps/"+app, map[string]any{"marketplace_status": "published"}, bearer(author)).expect(t, 200)
		installed := e.do("POST", "/api/v1/apps/"+app+"/install", nil, bearer(user)).expect(t, 201)
		copyApp := installed.str("app_id")
		issued := list(installed, "webhook_secrets")
		require.Len(t, issued, 1)
		copyAgent := issued[0]["agent_id"].(string)
		require.NotEqual(t, agent, copyAgent)
		rc.mu.Lock()
		rc.secrets["hook"] = issued[0]["webhook_secret"].(string) // the copy posts to the same URL
		rc.mu.Unlock()

		id := e.do("POST", "/api/v1/agents/"+copyAgent+"/activate", map[string]any{"input_data": map[string]any{
			"calls": []string{"/api/v1/data/" + copyApp + "/probe", "/api/v1/data/" + app + "/probe"}}}, bearer(user)).
			expect(t, 201).str("activation_id")
		done := e.await(user, id)
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		require.Equal(t, []any{200.0, 404.0}, done.JSON["output_data"].(map[string]any)["statuses"],
			"the key opens the copy's app, not the publisher's")
		body, sigErr := rc.request(t, id)
		require.NoError(t, sigErr, "signed with the copy's own secret")
		require.Equal(t, copyAgent, body["agent_id"])
		require.Equal(t, copyApp, body["app_id"])
	})
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestWebhookAgentFailures: a 500, a body that is not JSON, and no answer
// within the agent's timeout each fail the run naming the cause; a cancel
// stops a waiting call. Whatever ended it, the run's key is refused at
// once.
func TestWebhookAgentFailures(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		rc := newAgentReceiver(t, e)
		owner := e.signup("owner@example.com")
		app := e.newApp(owner, "desk")
		keyRefused := func(id string) {
			t.Helper()
			body, sigErr := rc.request(t, id)
			require.NoError(t, sigErr)
			e.do("GET", "/api/v1/apps", nil, bearer(body["agent_key"].(string))).expect(t, 401)
		}
		for _, tc := range []struct{ what, want string }{
			{"fail", "Webhook agent answered 500"},
			{"html", "Webhook agent answered 200 with a body that is not JSON"},
			{"slow", "Activation timed out after 1 s"},
		} {
			agent := rc.webhookAgent(t, owner, app, "hook-"+tc.what, tc.what, 1)
			id := e.do("POST", "/api/v1/agents/"+agent+"/activate", map[string]any{"input_data": map[string]any{}}, bearer(owner)).
				expect(t, 201).str("activation_id")
			done := e.await(owner, id)
			require.Equal(t, "failed", done.str("status"), "body: %s", done.Body)
			require.Equal(t, tc.want, done.str("error"))
			keyRefused(id)
		}

		// Cancelled while the agent has not answered.
		agent := rc.webhookAgent(t, owner, app, "hook-cancel", "slow", 60)
		id := e.do("POST", "/api/v1/agents/"+agent+"/activate", map[string]any{"input_data": map[string]any{}}, bearer(owner)).
			expect(t, 201).str("activation_id")
		for called := ""; called != id; {
			select {
			case called = <-rc.slow:
			case <-time.After(20 * time.Second):
				t.Fatal("the webhook agent was not called")
			}
		}
		body, _ := rc.request(t, id)
		key := body["agent_key"].(string)
		e.do("GET", "/api/v1/apps", nil, bearer(key)).expect(t, 403) // valid, and not for this route
		e.do("POST", "/api/v1/activations/"+id+"/cancel", nil, bearer(owner)).expect(t, 200)
		e.do("GET", "/api/v1/apps", nil, bearer(key)).expect(t, 401)
		require.Equal(t, "Activation cancelled", e.await(owner, id).str("error"))
	})
}

// TestWebhookAgentPrivateAddresses: a literal private address is refused
// when the agent is created (400 naming agent_config.url); a name that
// resolves to loopback (or an address stored before the check) is refused
// when dialled, and nothing is sent.
func TestWebhookAgentPrivateAddresses(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		owner := e.signup("owner@example.com")
		app := e.newApp(owner, "desk")
		for _, url := range []string{"http://127.0.0.1:8080/run", "http://169.254.169.254/latest/meta-data", "http://localhost/run", "http://[::1]/run"} {
			e.do("POST", "/api/v1/apps/"+app+"/agents", map[string]any{"name": "hook", "agent_type_id": "custom",
				"agent_config": map[string]any{"runtime": "webhook", "url": url}}, bearer(owner)).
				expectError(t, 400, "ValidationError", "agent_config.url")
		}
		r := e.do("POST", "/api/v1/apps/"+app+"/agents", map[string]any{"name": "hook", "agent_type_id": "custom",
			"agent_config": map[string]any{"runtime": "webhook", "url": "https://agents.example.com/run"}}, bearer(owner)).expect(t, 201)
		agent := r.str("agent_id")
		e.do("PATCH", "/api/v1/apps/"+app+"/agents/"+agent, map[string]any{"agent_config": map[string]any{"url": "http://10.0.0.1/run"}},
			bearer(owner)).expectError(t, 400, "ValidationError", "agent_config.url")

		var hits atomic.Int32
		in := insideServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
		_, port, err := net.SplitHostPort(in.Listener.Addr().String())
		require.NoError(t, err)
		ag, err := e.srv.Store.AgentGet(context.Background(), agent)
		require.NoError(t, err)
		ag.Config = json.RawMessage(`{"runtime":"webhook","url":"http://localhost:` + port + `/run?token=s3cret"}`)
		require.NoError(t, e.srv.Store.AgentUpdate(context.Background(), ag))
		id := e.do("POST", "/api/v1/agents/"+agent+"/activate", map[string]any{"input_data": map[string]any{}}, bearer(owner)).
			expect(t, 201).str("activation_id")
		done := e.await(owner, id)
		require.Equal(t, "failed", done.str("status"))
		require.Regexp(t, `^Webhook agent call failed: agent_config.url resolves to (127\.0\.0\.1|::1), a private address \(allow it with AP_EGRESS_ALLOW\)$`, done.str("error"))
		require.Zero(t, hits.Load(), "nothing was sent to the private address")
		require.NotContains(t, e.logs.String(), "s3cret")
	})
}
