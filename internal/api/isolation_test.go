package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// receiver is a webhook endpoint of the outside world (on 127.0.0.2, which
// the egress guard is told to allow): it records the activation ids of the
// events POSTed to it.
type receiver struct {
	url string
	mu  sync.Mutex
	ids []string
	got chan string
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err)
	rc := &receiver{got: make(chan string, 16)}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			ActivationID string `json:"activation_id"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &ev)
		rc.mu.Lock()
		rc.ids = append(rc.ids, ev.ActivationID)
		rc.mu.Unlock()
		rc.got <- ev.ActivationID
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	rc.url = srv.URL + "/hook"
	return rc
}

func (rc *receiver) received() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.ids...)
}

var egressForTests = map[string]string{"AP_EGRESS_ALLOW": "127.0.0.2/32"}

// TestInstallDropsWebhookURLsAndListsExternalEndpoints: an installed copy
// never sends the installer's results to the publisher's endpoint, and the
// answer names the webhook-runtime agents whose code is someone's URL.
func TestInstallDropsWebhookURLsAndListsExternalEndpoints(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, egressForTests)
		author := e.signup("author@example.com") // the first user: an admin
		user := e.signup("user@example.com")
		rcv := newReceiver(t)
		const agentURL = "https://agents.example.com/run?tenant=author"
		m := map[string]any{"name": "Hooked", "slug": "hooked", "version": "1.0.0", "agents": []any{
			map[string]any{"name": "triage", "agent_type_id": "llm", "webhook_url": rcv.url,
				"agent_config": map[string]any{"model": "echo", "provider_id": "echo"}},
			map[string]any{"name": "hook", "agent_type_id": "custom", "webhook_url": rcv.url,
				"agent_config": map[string]any{"runtime": "webhook", "url": agentURL, "secret": "whsec_YXV0aG9yLXNlY3JldC1vZi0yNC1ieXRl"}},
		}}
		m["authenticators"] = exampleManifest(t)["authenticators"]
		appID := e.importManifest(author, m).expect(t, 201).str("app_id")
		e.do("PATCH", "/api/v1/apps/"+appID, map[string]any{"marketplace_status": "published"}, bearer(author)).expect(t, 200)
		// The publisher's other secrets: the app's webhook secret and an
		// authenticator's client secret.
		e.do("GET", "/api/v1/apps/"+appID+"/webhook-secret", nil, bearer(author)).expect(t, 200)
		ctx := context.Background()
		auths, err := e.srv.Store.AuthenticatorListByApp(ctx, appID)
		require.NoError(t, err)
		require.Len(t, auths, 1)
		auths[0].ClientSecretEnc, err = e.srv.Secrets.Seal("client-secret")
		require.NoError(t, err)
		require.NoError(t, e.srv.Store.AuthenticatorUpdate(ctx, &auths[0]))

		r := e.do("POST", "/api/v1/apps/"+appID+"/install", nil, bearer(user)).expect(t, 201)
		copyID := r.str("app_id")
		app, err := e.srv.Store.AppGet(ctx, copyID)
		require.NoError(t, err)
		require.Empty(t, app.WebhookSecretEnc, "the app's webhook secret is not copied")
		auths, err = e.srv.Store.AuthenticatorListByApp(ctx, copyID)
		require.NoError(t, err)
		require.Len(t, auths, 1)
		require.Empty(t, auths[0].ClientSecretEnc, "no client secret is copied")
		copied, err := e.srv.Store.AgentListByApp(ctx, copyID)
		require.NoError(t, err)
		require.Len(t, copied, 2)
		for _, a := range copied {
			require.Empty(t, a.WebhookURL, "agent %s keeps no webhook_url", a.Name)
			if a.Name == "hook" {
				// A webhook-runtime copy signs with a secret of its own,
				// never the publisher's.
				own, err := e.srv.Secrets.Open(a.SecretEnc)
				require.NoError(t, err)
				require.NotEqual(t, "whsec_YXV0aG9yLXNlY3JldC1vZi0yNC1ieXRl", own, "agent %s keeps its publisher's secret", a.Name)
			} else {
				require.Empty(t, a.SecretEnc, "agent %s has no secret", a.Name)
			}
			require.NotContains(t, string(a.Config), "whsec_", "agent %s", a.Name)
		}
		require.Equal(t, []any{map[string]any{"agent_id": copied[1].ID, "name": "hook", "url": agentURL}}, r.JSON["external_endpoints"])
		// The copy's manifest says so too, and the original is untouched.
		require.NotContains(t, string(e.do("GET", "/api/v1/apps/"+copyID+"/manifest", nil, bearer(user)).expect(t, 200).Body), "webhook_url")
		original, err := e.srv.Store.AgentListByApp(ctx, appID)
		require.NoError(t, err)
		require.Equal(t, rcv.url, original[0].WebhookURL)
		require.NotEmpty(t, original[1].SecretEnc)

		// The installer's activation ends without a delivery; the author's
		// still reaches the author's receiver.
		mine := e.do("POST", "/api/v1/agents/"+copied[0].ID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "private"}}, bearer(user)).expect(t, 201).str("activation_id")
		require.Equal(t, "completed", e.await(user, mine).str("status"))
		theirs := e.do("POST", "/api/v1/agents/"+original[0].ID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "hi"}}, bearer(author)).expect(t, 201).str("activation_id")
		select {
		case got := <-rcv.got:
			require.Equal(t, theirs, got)
		case <-time.After(20 * time.Second):
			t.Fatal("the author's delivery never arrived")
		}
		// A delivery is queued in the transaction that ends the activation:
		// had the installer's been queued, its job would be there by now.
		jobs := e.do("GET", "/api/v1/worker/jobs", nil, bearer(author)).expect(t, 200)
		for _, j := range list(jobs, "jobs") {
			require.NotEqual(t, mine, j["activation_id"], "job %v", j)
		}
		require.Empty(t, list(e.do("GET", "/api/v1/activations/"+mine+"/deliveries", nil, bearer(user)).expect(t, 200), "deliveries"))
		require.Equal(t, []string{theirs}, rcv.received())

		// An app without webhook-runtime agents lists none: an empty array.
		plain := e.importManifest(author, map[string]any{"name": "Plain", "slug": "plain", "version": "1.0.0"}).expect(t, 201).str("app_id")
		e.do("PATCH", "/api/v1/apps/"+plain, map[string]any{"marketplace_status": "published"}, bearer(author)).expect(t, 200)
		r = e.do("POST", "/api/v1/apps/"+plain+"/install", nil, bearer(user)).expect(t, 201)
		require.Equal(t, []any{}, r.JSON["external_endpoints"])
	})
}

// TestWorkerEndpointsShowNoPrivateData: the admin's job list names jobs,
// never an activation's input or output; worker processes (host, pid) are
// for admins, queue depth and throughput for everyone.
func TestWorkerEndpointsShowNoPrivateData(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, egressForTests)
		admin := e.signup("admin@example.com")
		user := e.signup("user@example.com")
		rcv := newReceiver(t)
		f := e.llmAgent(user, nil, 0)
		const secretWord = "sesame-7f3a"
		id := e.do("POST", "/api/v1/agents/"+f.agentID+"/activate", map[string]any{
			"input_data": map[string]any{"prompt": secretWord},
			"metadata":   map[string]any{"webhook_url": rcv.url}}, bearer(user)).expect(t, 201).str("activation_id")
		done := e.await(user, id)
		require.Contains(t, string(done.Body), secretWord, "input and output carry it")
		select {
		case <-rcv.got: // the delivery job, whose payload is the final event, has run
		case <-time.After(20 * time.Second):
			t.Fatal("no delivery")
		}

		jobs := e.do("GET", "/api/v1/worker/jobs", nil, bearer(admin)).expect(t, 200)
		require.NotContains(t, string(jobs.Body), secretWord)
		kinds := map[string]bool{}
		for _, j := range list(jobs, "jobs") {
			if j["activation_id"] != id {
				continue
			}
			kinds[j["kind"].(string)] = true
			for _, k := range []string{"id", "kind", "state", "attempt", "max_attempts", "errors", "created_at", "scheduled_at"} {
				require.Contains(t, j, k)
			}
			require.NotContains(t, j, "args")
		}
		require.True(t, kinds["webhook_delivery"], "the delivery job is listed with its activation: %s", jobs.Body)
		e.do("GET", "/api/v1/worker/jobs", nil, bearer(user)).expect(t, 403)

		// Everyone sees the queue and the throughput; only admins the
		// processes.
		st := e.do("GET", "/api/v1/worker/status", nil, bearer(user)).expect(t, 200)
		require.NotContains(t, st.JSON, "workers")
		require.Contains(t, st.JSON, "queue")
		require.GreaterOrEqual(t, st.JSON["throughput"].(map[string]any)["last_hour"].(map[string]any)["completed"], 1.0)
		host, _ := os.Hostname()
		require.NotContains(t, string(st.Body), `"hostname"`)
		require.NotContains(t, string(st.Body), `"pid"`)
		st = e.do("GET", "/api/v1/worker/status", nil, bearer(admin)).expect(t, 200)
		workers := list(st, "workers")
		require.NotEmpty(t, workers)
		require.Equal(t, host, workers[0]["hostname"])
		require.Contains(t, workers[0], "pid")
		require.Contains(t, workers[0], "heartbeat_at")
		// An admin's key without the admin scope is not an admin's view.
		st = e.do("GET", "/api/v1/worker/status", nil, bearer(e.keyWith(admin, "read:all"))).expect(t, 200)
		require.NotContains(t, st.JSON, "workers")
	})
}

// TestBoundKeyRouteTable is what a key bound to app A gets on every route
// of the OpenAPI document (a route added without a row here fails the
// test): another app's things, of the same user (B) or of another user
// reached with X-Admin-Reason (C), answer 404 as if absent; account-level
// things answer 403; lists hold only A's things, and a list's filter
// naming another app is as absent as the app. Each refused call has a
// control on A's things with the same key where that makes sense, so a
// 404 is the binding's, not a bad request's. The key is the strongest
// there is: admin and write:all scopes of an admin.
func TestBoundKeyRouteTable(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		// Over a hundred calls in a burst: the rate limit is not under test.
		e := newEnv(t, d, map[string]string{"AP_EGRESS_ALLOW": "127.0.0.2/32", "AP_RATE_LIMIT": "1000000000"})
		ctx := context.Background()
		owner := e.signup("owner@example.com") // the first user: an admin
		other := e.signup("other@example.com")
		ownerID := e.do("GET", "/api/v1/users/me", nil, bearer(owner)).expect(t, 200).str("id")
		otherID := e.do("GET", "/api/v1/users/me", nil, bearer(other)).expect(t, 200).str("id")
		rcv := newReceiver(t)
		fa, fb, fc := e.llmAgent(owner, nil, 0), e.llmAgent(owner, nil, 0), e.llmAgent(other, nil, 0)
		spare := &store.Agent{ID: uuid.NewString(), AppID: fa.appID, UserID: ownerID, Name: "spare", AgentTypeID: "llm", Version: "1.0.0",
			Status: "active", TimeoutSeconds: 60, Config: json.RawMessage(`{"model":"echo","provider_id":"echo"}`), CreatedAt: store.Now(), UpdatedAt: store.Now()}
		require.NoError(t, e.srv.Store.AgentCreate(ctx, spare))
		run := func(token, agentID string) string {
			id := e.do("POST", "/api/v1/agents/"+agentID+"/activate", map[string]any{"input_data": map[string]any{"prompt": "p"},
				"metadata": map[string]any{"webhook_url": rcv.url}}, bearer(token)).expect(t, 201).str("activation_id")
			require.Equal(t, "completed", e.await(token, id).str("status"))
			return id
		}
		actA, actB, actC := run(owner, fa.agentID), run(owner, fb.agentID), run(other, fc.agentID)
		for range 3 {
			select {
			case <-rcv.got:
			case <-time.After(20 * time.Second):
				t.Fatal("deliveries did not arrive")
			}
		}
		require.Eventually(t, func() bool { // recorded just after the answer
			r := e.do("GET", "/api/v1/activations/"+actB+"/deliveries", nil, bearer(owner)).expect(t, 200)
			return len(list(r, "deliveries")) == 1
		}, 10*time.Second, 10*time.Millisecond)
		providerID := e.do("POST", "/api/v1/llm-providers", map[string]any{"name": "mine", "provider_type": "echo"}, bearer(owner)).expect(t, 201).str("id")
		_, otherKeyID := e.key(owner, map[string]any{"name": "unbound", "scopes": []string{"read:all"}})
		bound, _ := e.key(owner, map[string]any{"name": "bound", "scopes": []string{"admin", "write:all"}, "app_id": fa.appID})
		budget := map[string]string{"budget_id": e.do("POST", "/api/v1/budgets", map[string]any{"scope": "user", "period": "day", "limit_usd": 5},
			bearer(owner)).expect(t, 201).str("id")}
		slugA := e.do("GET", "/api/v1/apps/"+fa.appID, nil, bearer(owner)).expect(t, 200).str("slug")
		slugB := e.do("GET", "/api/v1/apps/"+fb.appID, nil, bearer(owner)).expect(t, 200).str("slug")

		// Each app has a model "note" with a record.
		record := func(appID, userID string) string {
			ctx := context.Background()
			_, err := e.srv.Data.CreateModel(ctx, appID, json.RawMessage(`{"slug":"note","fields":[{"name":"text","type":"text"}]}`))
			require.NoError(t, err)
			r, err := e.srv.Data.CreateRecord(ctx, userID, appID, "note", json.RawMessage(`{"text":"t"}`), userID)
			require.NoError(t, err)
			return r.ItemID
		}
		recA, recB, recC := record(fa.appID, ownerID), record(fb.appID, ownerID), record(fc.appID, otherID)
		fnOf := map[string]string{}
		for app, user := range map[string]string{fa.appID: ownerID, fb.appID: ownerID, fc.appID: otherID} {
			now := store.Now()
			f := &store.Function{ID: uuid.NewString(), AppID: app, UserID: user, Name: "echo", Code: "async function run(input) { return input; }",
				InputSchema: json.RawMessage(`{"type":"object"}`), TimeoutSeconds: 5, CreatedAt: now, UpdatedAt: now}
			require.NoError(t, e.srv.Store.FunctionCreate(context.Background(), f))
			fnOf[app] = f.ID
		}
		// Each app has a pipeline running its function, and a run of it.
		pipeOf, runOf := map[string]string{}, map[string]string{}
		for app, token := range map[string]string{fa.appID: owner, fb.appID: owner, fc.appID: other} {
			p := e.do("POST", "/api/v1/pipelines", map[string]any{"app_id": app, "name": "pipe",
				"steps": []any{map[string]any{"id": "s1", "type": "function", "ref": "echo", "input": map[string]any{"x": "{{input.x}}"}}}},
				bearer(token)).expect(t, 201).str("pipeline_id")
			pipeOf[app] = p
			runOf[app] = e.do("POST", "/api/v1/pipelines/"+p+"/run", map[string]any{"input": map[string]any{"x": 1}}, bearer(token)).expect(t, 201).str("run_id")
		}
		// Each app has an OAuth authenticator.
		authOf := map[string]string{}
		newAuthenticator := func(name string) map[string]any {
			return map[string]any{"name": name, "authenticator_type": "custom", "client_id": "c", "client_secret": "s", "scopes": []string{"read"},
				"authorize_url": "https://idp.example.com/authorize", "token_url": "https://idp.example.com/token"}
		}
		for app, token := range map[string]string{fa.appID: owner, fb.appID: owner, fc.appID: other} {
			authOf[app] = e.do("POST", "/api/v1/oauth/authenticators/"+app, newAuthenticator("idp"), bearer(token)).expect(t, 201).str("id")
		}
		// Each app has an MCP server.
		mcpOf := map[string]string{}
		for app := range authOf {
			now := store.Now()
			ms := &store.MCPServer{ID: uuid.NewString(), AppID: app, Name: "docs", URL: "https://mcp.example.com/mcp", CreatedAt: now, UpdatedAt: now}
			require.NoError(t, e.srv.Store.MCPServerCreate(ctx, ms))
			mcpOf[app] = ms.ID
		}
		data := func(appID, item string) map[string]string {
			return map[string]string{"slug": "note", "item_id": item, "appId": appID, "modelSlug": "note", "function_id": fnOf[appID],
				"pipeline_id": pipeOf[appID], "run_id": runOf[appID], "authenticator_id": authOf[appID], "server_id": mcpOf[appID]}
		}
		with := func(a, b map[string]string) map[string]string {
			for k, v := range b {
				a[k] = v
			}
			return a
		}
		A := with(map[string]string{"app_id": fa.appID, "agent_id": fa.agentID, "activation_id": actA}, data(fa.appID, recA))
		B := with(map[string]string{"app_id": fb.appID, "agent_id": fb.agentID, "activation_id": actB}, data(fb.appID, recB))
		C := with(map[string]string{"app_id": fc.appID, "agent_id": fc.agentID, "activation_id": actC}, data(fc.appID, recC))
		AwithB := map[string]string{"app_id": fa.appID, "agent_id": fb.agentID, "activation_id": actB}
		spareA := map[string]string{"app_id": fa.appID, "agent_id": spare.ID}
		none := map[string]string{}
		user := map[string]string{"id": otherID}
		provider := map[string]string{"id": providerID}
		key := map[string]string{"key_id": itoa(otherKeyID)}
		const assistant = "00000000-0000-7000-8000-000000000001"
		activate := map[string]any{"input_data": map[string]any{"prompt": "p"}}
		decide := map[string]any{"decisions": []any{map[string]any{"tool_call_id": "c1", "type": "approve"}}}

		type call struct {
			ids    map[string]string
			query  string
			body   any // a func() any is called when the call is made
			status int
			// only, when set, are the ids (activation or agent) every item
			// of the answer's list must belong to.
			only map[string]string
		}
		const forbidden, absent = http.StatusForbidden, http.StatusNotFound
		mcpList := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
		chat := func(model string) map[string]any {
			return map[string]any{"model": model, "messages": []map[string]any{{"role": "user", "content": "hi"}}}
		}
		newMCPServer := map[string]any{"name": "made", "url": "https://mcp.example.com/mcp"}
		credentialCalls := func(body any) []call {
			at := func(ids map[string]string) map[string]string { return with(map[string]string{"provider": "crm"}, ids) }
			return []call{{ids: at(A), body: body, status: http.StatusBadRequest}, {ids: at(B), body: body, status: absent},
				{ids: at(C), body: body, status: absent}}
		}
		routes := []struct {
			route string
			calls []call
		}{
			// Public: a key changes nothing.
			{"POST /api/v1/auth/register", nil},
			{"POST /api/v1/auth/login", nil},
			{"POST /api/v1/auth/logout", nil},
			{"GET /api/v1/version", []call{{ids: none, status: 200}}},
			{"GET /healthz", []call{{ids: none, status: 200}}},
			{"GET /readyz", []call{{ids: none, status: 200}}},

			// The account: who the key belongs to is readable, nothing is
			// changeable; admin rights do not survive the binding.
			{"GET /api/v1/users/me", []call{{ids: none, status: 200}}},
			{"PATCH /api/v1/users/me", []call{{ids: none, body: map[string]any{"email": "thief@example.com"}, status: forbidden}}},
			{"POST /api/v1/users/me/password", []call{{ids: none, body: map[string]any{"current_password": "password1", "new_password": "password2"}, status: forbidden}}},
			{"GET /api/v1/users", []call{{ids: none, status: forbidden}}},
			{"GET /api/v1/users/{id}", []call{{ids: user, status: forbidden}}},
			{"PATCH /api/v1/users/{id}", []call{{ids: user, body: map[string]any{"is_active": false}, status: forbidden}}},
			{"GET /api/v1/users/audit-log", []call{{ids: none, status: forbidden}}},
			{"POST /api/v1/user/api-keys", []call{{ids: none, body: map[string]any{"name": "x", "scopes": []string{"admin"}}, status: forbidden}}},
			{"GET /api/v1/user/api-keys", []call{{ids: none, status: forbidden}}},
			{"DELETE /api/v1/user/api-keys/{key_id}", []call{{ids: key, status: forbidden}}},
			{"GET /api/v1/llm-providers", []call{{ids: none, status: forbidden}}},
			{"POST /api/v1/llm-providers", []call{{ids: none, body: map[string]any{"name": "evil", "provider_type": "echo", "is_default": true}, status: forbidden}}},
			{"GET /api/v1/llm-providers/{id}", []call{{ids: provider, status: forbidden}}},
			{"PATCH /api/v1/llm-providers/{id}", []call{{ids: provider, body: map[string]any{"is_default": true}, status: forbidden}}},
			{"DELETE /api/v1/llm-providers/{id}", []call{{ids: provider, status: forbidden}}},
			{"POST /api/v1/llm-providers/{id}/test", []call{{ids: provider, status: forbidden}}},
			{"GET /api/v1/budgets", []call{{ids: none, status: forbidden}}},
			{"POST /api/v1/budgets", []call{{ids: none, body: map[string]any{"scope": "app", "scope_id": fa.appID, "period": "day", "limit_usd": 1}, status: forbidden}}},
			{"GET /api/v1/budgets/{budget_id}", []call{{ids: budget, status: forbidden}}},
			{"PATCH /api/v1/budgets/{budget_id}", []call{{ids: budget, body: map[string]any{"limit_usd": 100}, status: forbidden}}},
			{"DELETE /api/v1/budgets/{budget_id}", []call{{ids: budget, status: forbidden}}},
			// Usage: the app's only; another app is absent, another user too.
			{"GET /api/v1/usage", []call{{ids: none, status: 200}, {ids: none, query: "app_id=" + fa.appID, status: 200},
				{ids: none, query: "app_id=" + fb.appID, status: absent}, {ids: none, query: "app_id=" + fc.appID, status: absent},
				{ids: none, query: "user_id=" + otherID, status: absent}}},
			{"GET /api/v1/worker/status", []call{{ids: none, status: 200}}}, // queue figures; no processes (checked below)
			{"POST /api/v1/worker/pause", []call{{ids: none, status: forbidden}}},
			{"POST /api/v1/worker/resume", []call{{ids: none, status: forbidden}}},
			{"GET /api/v1/worker/jobs", []call{{ids: none, status: forbidden}}},

			// Apps: new ones are the account's; other ones are absent.
			{"GET /api/v1/apps", []call{{ids: none, status: 200, only: map[string]string{"app_id": fa.appID}}}},
			{"POST /api/v1/apps", []call{{ids: none, body: map[string]any{"name": "B", "slug": slugB}, status: forbidden}}},
			{"GET /api/v1/apps/marketplace", []call{{ids: none, status: forbidden}}},
			{"GET /api/v1/apps/{app_id}", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"PATCH /api/v1/apps/{app_id}", []call{{ids: A, body: map[string]any{"description": "a"}, status: 200},
				{ids: B, body: map[string]any{"status": "disabled"}, status: absent}, {ids: C, body: map[string]any{"status": "disabled"}, status: absent}}},
			{"DELETE /api/v1/apps/{app_id}", []call{{ids: B, status: absent}, {ids: C, status: absent}}},
			{"POST /api/v1/apps/{app_id}/install", []call{{ids: A, body: map[string]any{"slug": "copy-a"}, status: forbidden}, {ids: B, body: map[string]any{"slug": "copy-b"}, status: forbidden}}},
			{"GET /api/v1/apps/{app_id}/manifest", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"GET /api/v1/apps/{app_id}/models", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"GET /api/v1/apps/{app_id}/webhook-secret", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"POST /api/v1/apps/{app_id}/webhook-secret", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"GET /api/v1/apps/{app_id}/model-providers", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},

			// Agents: A's only; the system agents belong to no app.
			{"GET /api/v1/agents", []call{{ids: none, status: 200, only: map[string]string{"agent_id": fa.agentID + " " + spare.ID}}}},
			{"GET /api/v1/agents/{agent_id}", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent},
				{ids: map[string]string{"agent_id": assistant}, status: absent}}},
			{"GET /api/v1/apps/{app_id}/agents", []call{{ids: A, status: 200, only: map[string]string{"agent_id": fa.agentID + " " + spare.ID}},
				{ids: B, status: absent}, {ids: C, status: absent}}},
			{"POST /api/v1/apps/{app_id}/agents", []call{
				{ids: A, body: map[string]any{"name": "made", "agent_type_id": "llm", "agent_config": map[string]any{"model": "echo"}}, status: 201},
				{ids: B, body: map[string]any{"name": "made", "agent_type_id": "llm", "agent_config": map[string]any{"model": "echo"}}, status: absent},
				{ids: C, body: map[string]any{"name": "made", "agent_type_id": "llm", "agent_config": map[string]any{"model": "echo"}}, status: absent}}},
			{"GET /api/v1/apps/{app_id}/agents/{agent_id}", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}, {ids: AwithB, status: absent}}},
			{"PATCH /api/v1/apps/{app_id}/agents/{agent_id}", []call{{ids: A, body: map[string]any{"description": "a"}, status: 200},
				{ids: B, body: map[string]any{"status": "disabled"}, status: absent}, {ids: C, body: map[string]any{"status": "disabled"}, status: absent},
				{ids: AwithB, body: map[string]any{"status": "disabled"}, status: absent}}},
			{"DELETE /api/v1/apps/{app_id}/agents/{agent_id}", []call{{ids: B, status: absent}, {ids: C, status: absent}, {ids: AwithB, status: absent},
				{ids: spareA, status: 204}}},

			// Activations.
			{"POST /api/v1/agents/{agent_id}/activate", []call{{ids: A, body: activate, status: 201}, {ids: B, body: activate, status: absent},
				{ids: C, body: activate, status: absent}, {ids: map[string]string{"agent_id": assistant}, body: activate, status: absent}}},
			{"POST /api/v1/apps/{app_id}/agents/{agent_id}/activate", []call{{ids: A, body: activate, status: 201}, {ids: B, body: activate, status: absent},
				{ids: C, body: activate, status: absent}, {ids: AwithB, body: activate, status: absent}}},
			{"POST /api/v1/activations", []call{
				{ids: none, body: map[string]any{"agent_id": fa.agentID, "input_data": map[string]any{"prompt": "p"}}, status: 201},
				{ids: none, body: map[string]any{"agent_id": fb.agentID, "input_data": map[string]any{"prompt": "p"}}, status: absent},
				{ids: none, body: map[string]any{"agent_id": fc.agentID, "input_data": map[string]any{"prompt": "p"}}, status: absent},
				{ids: none, body: map[string]any{"agent_id": assistant, "input_data": map[string]any{"prompt": "p"}}, status: absent}}},
			{"GET /api/v1/activations", []call{{ids: none, status: 200, only: map[string]string{"app_id": fa.appID}},
				{ids: none, query: "app_id=" + fa.appID, status: 200, only: map[string]string{"app_id": fa.appID}},
				{ids: none, query: "app_id=" + fb.appID, status: absent}, {ids: none, query: "app_id=" + fc.appID, status: absent},
				// Another app's agent is not found for a key bound to A, as
				// another app is.
				{ids: none, query: "agent_id=" + fb.agentID, status: absent}}},
			{"GET /api/v1/activations/{activation_id}", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"GET /api/v1/activations/{activation_id}/stream", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"POST /api/v1/activations/{activation_id}/cancel", []call{{ids: A, status: http.StatusConflict}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"GET /api/v1/activations/{activation_id}/deliveries", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"GET /api/v1/activations/{activation_id}/logs", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"GET /api/v1/activations/{activation_id}/steps", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			// A's run waits on nothing: its answer is the waitpoint's 404
			// (TestWaitpointOfAnotherApp answers a real one with a bound key).
			{"POST /api/v1/activations/{activation_id}/waitpoints/{waitpoint_id}", []call{
				{ids: with(map[string]string{"waitpoint_id": assistant}, A), body: decide, status: absent},
				{ids: with(map[string]string{"waitpoint_id": assistant}, B), body: decide, status: absent},
				{ids: with(map[string]string{"waitpoint_id": assistant}, C), body: decide, status: absent}}},
			{"GET /api/v1/agents/{agent_id}/activations", []call{{ids: A, status: 200, only: map[string]string{"app_id": fa.appID}},
				{ids: B, status: absent}, {ids: C, status: absent}}},
			{"GET /api/v1/apps/{app_id}/activations", []call{{ids: A, status: 200, only: map[string]string{"app_id": fa.appID}},
				{ids: B, status: absent}, {ids: C, status: absent}}},
			{"GET /api/v1/apps/{app_id}/agents/activations/{activation_id}", []call{{ids: A, status: 200}, {ids: B, status: absent},
				{ids: C, status: absent}, {ids: AwithB, status: absent}}},

			// Functions: A's; another app's are absent.
			{"GET /api/v1/functions", []call{{ids: none, status: 200, only: map[string]string{"app_id": fa.appID}},
				{ids: none, query: "app_id=" + fa.appID, status: 200, only: map[string]string{"app_id": fa.appID}},
				{ids: none, query: "app_id=" + fb.appID, status: absent}, {ids: none, query: "app_id=" + fc.appID, status: absent}}},
			{"POST /api/v1/functions", []call{{ids: none, body: map[string]any{"app_id": fa.appID, "name": "made", "code": "async function run() {}"}, status: 201},
				{ids: none, body: map[string]any{"app_id": fb.appID, "name": "made", "code": "async function run() {}"}, status: absent},
				{ids: none, body: map[string]any{"app_id": fc.appID, "name": "made", "code": "async function run() {}"}, status: absent}}},
			{"GET /api/v1/functions/{function_id}", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"PATCH /api/v1/functions/{function_id}", []call{{ids: A, body: map[string]any{"description": "d"}, status: 200},
				{ids: B, body: map[string]any{"description": "d"}, status: absent}, {ids: C, body: map[string]any{"description": "d"}, status: absent}}},
			{"DELETE /api/v1/functions/{function_id}", []call{{ids: B, status: absent}, {ids: C, status: absent}}},
			{"POST /api/v1/functions/{function_id}/execute", []call{{ids: A, body: map[string]any{"input": map[string]any{}}, status: 200},
				{ids: B, body: map[string]any{"input": map[string]any{}}, status: absent}, {ids: C, body: map[string]any{"input": map[string]any{}}, status: absent}}},
			{"POST /api/v1/apps/{app_id}/functions/{function_id}/execute", []call{{ids: A, body: map[string]any{"input": map[string]any{}}, status: 200},
				{ids: B, body: map[string]any{"input": map[string]any{}}, status: absent}, {ids: C, body: map[string]any{"input": map[string]any{}}, status: absent},
				{ids: with(data(fb.appID, recB), map[string]string{"app_id": fa.appID}), body: map[string]any{"input": map[string]any{}}, status: absent}}},
			{"GET /api/v1/apps/{app_id}/functions/history", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"GET /api/v1/apps/{app_id}/functions/{function_id}/history", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},

			// Pipelines: A's; another app's, and their runs, are absent.
			{"GET /api/v1/pipelines", []call{{ids: none, status: 200, only: map[string]string{"app_id": fa.appID}},
				{ids: none, query: "app_id=" + fa.appID, status: 200, only: map[string]string{"app_id": fa.appID}},
				{ids: none, query: "app_id=" + fb.appID, status: absent}, {ids: none, query: "app_id=" + fc.appID, status: absent}}},
			{"POST /api/v1/pipelines", []call{
				{ids: none, body: map[string]any{"app_id": fa.appID, "name": "made", "steps": []any{map[string]any{"id": "s", "type": "function", "ref": "echo"}}}, status: 201},
				{ids: none, body: map[string]any{"app_id": fb.appID, "name": "made", "steps": []any{map[string]any{"id": "s", "type": "function", "ref": "echo"}}}, status: absent},
				{ids: none, body: map[string]any{"app_id": fc.appID, "name": "made", "steps": []any{map[string]any{"id": "s", "type": "function", "ref": "echo"}}}, status: absent}}},
			{"GET /api/v1/pipelines/{pipeline_id}", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"PATCH /api/v1/pipelines/{pipeline_id}", []call{{ids: A, body: map[string]any{"description": "d"}, status: 200},
				{ids: B, body: map[string]any{"description": "d"}, status: absent}, {ids: C, body: map[string]any{"description": "d"}, status: absent}}},
			{"DELETE /api/v1/pipelines/{pipeline_id}", []call{{ids: B, status: absent}, {ids: C, status: absent}}},
			{"POST /api/v1/pipelines/{pipeline_id}/run", []call{{ids: A, body: map[string]any{"input": map[string]any{"x": 2}}, status: 201},
				{ids: B, body: map[string]any{"input": map[string]any{}}, status: absent}, {ids: C, body: map[string]any{"input": map[string]any{}}, status: absent}}},
			{"GET /api/v1/pipelines/runs", []call{{ids: none, query: "pipeline_id=" + pipeOf[fa.appID], status: 200, only: map[string]string{"app_id": fa.appID}},
				{ids: none, query: "pipeline_id=" + pipeOf[fb.appID], status: absent}, {ids: none, query: "pipeline_id=" + pipeOf[fc.appID], status: absent}}},
			{"GET /api/v1/pipelines/runs/{run_id}", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},

			// App data: A's; another app's models and records are absent.
			{"GET /api/v1/data/{app_id}/models", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"POST /api/v1/data/{app_id}/models", []call{{ids: A, body: map[string]any{"slug": "made", "fields": []any{}}, status: 201},
				{ids: B, body: map[string]any{"slug": "made", "fields": []any{}}, status: absent}, {ids: C, body: map[string]any{"slug": "made", "fields": []any{}}, status: absent}}},
			{"GET /api/v1/data/{app_id}/models/{slug}", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"PATCH /api/v1/data/{app_id}/models/{slug}", []call{{ids: A, body: map[string]any{"name": "Note"}, status: 200},
				{ids: B, body: map[string]any{"name": "x"}, status: absent}, {ids: C, body: map[string]any{"name": "x"}, status: absent}}},
			{"DELETE /api/v1/data/{app_id}/models/{slug}", []call{{ids: B, status: absent}, {ids: C, status: absent}}},
			// No app has an authenticator "crm": A's answer says so, the
			// others are absent.
			{"GET /api/v1/credentials", []call{{ids: none, status: 200}, {ids: none, query: "app_id=" + fa.appID, status: 200},
				{ids: none, query: "app_id=" + fb.appID, status: absent}, {ids: none, query: "app_id=" + fc.appID, status: absent}}},
			{"GET /api/v1/credentials/{app_id}/{provider}", credentialCalls(nil)},
			{"DELETE /api/v1/credentials/{app_id}/{provider}", credentialCalls(nil)},
			{"GET /api/v1/credentials/{app_id}/{provider}/connected", credentialCalls(nil)},
			{"POST /api/v1/credentials/{app_id}/{provider}/refresh", credentialCalls(nil)},
			{"POST /api/v1/credentials/{app_id}/{provider}/validate-scopes", credentialCalls(map[string]any{"required_scopes": []string{"read"}})},
			{"GET /api/v1/credentials/{app_id}/{provider}/token-info", credentialCalls(nil)},
			{"GET /api/v1/credentials/{app_id}/{provider}/user-info", credentialCalls(nil)},
			{"GET /api/v1/credentials/{app_id}/{provider}/authorize", credentialCalls(nil)},
			{"GET /api/v1/credentials/{app_id}/{provider}/auth-url", credentialCalls(nil)},
			{"GET /api/v1/oauth/callback", []call{{ids: none, query: "code=c&state=unknown", status: http.StatusBadRequest}}},
			{"GET /api/v1/data/{app_id}/{slug}", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"POST /api/v1/data/{app_id}/{slug}", []call{{ids: A, body: map[string]any{"data": map[string]any{"text": "a"}}, status: 201},
				{ids: B, body: map[string]any{"data": map[string]any{"text": "b"}}, status: absent}, {ids: C, body: map[string]any{"data": map[string]any{"text": "c"}}, status: absent}}},
			{"GET /api/v1/data/{app_id}/{slug}/{item_id}", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent},
				{ids: with(data(fa.appID, recB), map[string]string{"app_id": fa.appID}), status: absent}}},
			{"PATCH /api/v1/data/{app_id}/{slug}/{item_id}", []call{{ids: A, body: map[string]any{"data": map[string]any{"text": "p"}}, status: 200},
				{ids: B, body: map[string]any{"data": map[string]any{"text": "p"}}, status: absent}, {ids: C, body: map[string]any{"data": map[string]any{"text": "p"}}, status: absent}}},
			{"PUT /api/v1/data/{app_id}/{slug}/{item_id}", []call{{ids: A, body: map[string]any{"data": map[string]any{"text": "p"}}, status: 200},
				{ids: B, body: map[string]any{"data": map[string]any{"text": "p"}}, status: absent}, {ids: C, body: map[string]any{"data": map[string]any{"text": "p"}}, status: absent}}},
			{"DELETE /api/v1/data/{app_id}/{slug}/{item_id}", []call{{ids: B, status: absent}, {ids: C, status: absent}}},
			{"GET /api/apps/{appId}/models", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"GET /api/apps/{appId}/{modelSlug}/fields", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"GET /api/apps/{appId}/{modelSlug}", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},

			// OAuth authenticators: A's; another app's are absent.
			{"POST /api/v1/oauth/authenticators/{id}", []call{{ids: A, body: newAuthenticator("made"), status: 201},
				{ids: B, body: newAuthenticator("made"), status: absent}, {ids: C, body: newAuthenticator("made"), status: absent}}},
			{"GET /api/v1/oauth/authenticators", []call{{ids: none, query: "app_id=" + fa.appID, status: 200, only: map[string]string{"app_id": fa.appID}},
				{ids: none, query: "app_id=" + fb.appID, status: absent}, {ids: none, query: "app_id=" + fc.appID, status: absent}}},
			{"GET /api/v1/oauth/authenticators/{id}", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent}}},
			{"PATCH /api/v1/oauth/authenticators/{id}", []call{{ids: A, body: map[string]any{"is_active": true}, status: 200},
				{ids: B, body: map[string]any{"is_active": false}, status: absent}, {ids: C, body: map[string]any{"is_active": false}, status: absent}}},
			{"DELETE /api/v1/oauth/authenticators/{id}", []call{{ids: B, status: absent}, {ids: C, status: absent}}},
			{"GET /api/v1/apps/{app_id}/service-providers", []call{{ids: A, status: 200, only: map[string]string{"app_id": fa.appID}},
				{ids: B, status: absent}, {ids: C, status: absent}}},
			{"POST /api/v1/apps/{app_id}/service-providers", []call{{ids: A, body: newAuthenticator("made-here"), status: 201},
				{ids: B, body: newAuthenticator("made-here"), status: absent}, {ids: C, body: newAuthenticator("made-here"), status: absent}}},

			// MCP servers: A's; another app's are absent, B's under A's path too.
			{"GET /api/v1/apps/{app_id}/mcp-servers", []call{{ids: A, status: 200, only: map[string]string{"app_id": fa.appID}},
				{ids: B, status: absent}, {ids: C, status: absent}}},
			{"POST /api/v1/apps/{app_id}/mcp-servers", []call{{ids: A, body: newMCPServer, status: 201},
				{ids: B, body: newMCPServer, status: absent}, {ids: C, body: newMCPServer, status: absent}}},
			{"GET /api/v1/apps/{app_id}/mcp-servers/{server_id}", []call{{ids: A, status: 200}, {ids: B, status: absent}, {ids: C, status: absent},
				{ids: map[string]string{"app_id": fa.appID, "server_id": mcpOf[fb.appID]}, status: absent}}},
			{"PATCH /api/v1/apps/{app_id}/mcp-servers/{server_id}", []call{{ids: A, body: map[string]any{"url": "https://mcp2.example.com/mcp"}, status: 200},
				{ids: B, body: map[string]any{"url": "https://x.example.com/mcp"}, status: absent}, {ids: C, body: map[string]any{"url": "https://x.example.com/mcp"}, status: absent}}},
			{"DELETE /api/v1/apps/{app_id}/mcp-servers/{server_id}", []call{{ids: B, status: absent}, {ids: C, status: absent},
				{ids: map[string]string{"app_id": fa.appID, "server_id": mcpOf[fb.appID]}, status: absent}}},

			// Events: another app's filter is as absent as the app.
			{"GET /api/v1/ws", []call{{ids: none, query: "app_id=" + fa.appID, status: http.StatusSwitchingProtocols},
				{ids: none, query: "app_id=" + fb.appID, status: absent}, {ids: none, query: "app_id=" + fc.appID, status: absent}}},

			// MCP: A's tools; another app's endpoint is absent.
			{"POST /api/v1/apps/{app_id}/mcp", []call{{ids: A, body: mcpList, status: 200}, {ids: B, body: mcpList, status: absent},
				{ids: C, body: mcpList, status: absent}}},
			{"POST /api/v1/mcp", []call{{ids: none, body: mcpList, status: 200}}},

			// The OpenAI-compatible endpoint: A's agents are its models;
			// another app's (or another user's) agent is an unknown model.
			{"GET /api/v1/openai/models", []call{{ids: none, status: 200, only: map[string]string{"owned_by": slugA}}}},
			{"POST /api/v1/openai/chat/completions", []call{{ids: none, body: chat(slugA + "/triage"), status: 200},
				{ids: none, body: chat(slugB + "/triage"), status: absent}, {ids: none, body: chat(fb.agentID), status: absent},
				{ids: none, body: chat(fc.agentID), status: absent}}},

			// Last, since its control upgrades A in place: importing is
			// creating an app (the account's) unless it upgrades A.
			{"POST /api/v1/apps/import-manifest", []call{
				{ids: none, body: map[string]any{"name": "B", "slug": slugB, "version": "9.0.0"}, status: forbidden},
				{ids: none, body: map[string]any{"name": "New", "slug": "brand-new", "version": "1.0.0"}, status: forbidden},
				{ids: none, body: func() any {
					m := e.do("GET", "/api/v1/apps/"+fa.appID+"/manifest", nil, bearer(bound)).expect(t, 200).JSON
					require.Equal(t, slugA, m["slug"])
					m["version"] = "9.0.0"
					return m
				}, status: 200}}},
		}

		// Every route of the document has its row, and every row a route.
		doc := e.do("GET", "/api/v1/openapi.json", nil).expect(t, 200)
		var spec struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		require.NoError(t, json.Unmarshal(doc.Body, &spec))
		documented := map[string]bool{}
		for path, item := range spec.Paths {
			for method := range item {
				switch method {
				case "get", "put", "post", "delete", "options", "head", "patch", "trace":
					documented[strings.ToUpper(method)+" "+path] = true
				}
			}
		}
		rows := map[string]bool{}
		for _, r := range routes {
			require.False(t, rows[r.route], "two rows for %s", r.route)
			rows[r.route] = true
			require.True(t, documented[r.route], "%s is not a route any more", r.route)
		}
		for route := range documented {
			require.True(t, rows[route], "%s has no row: say what a key bound to another app gets there", route)
		}

		reason := header("X-Admin-Reason", "isolation test")
		made := 0
		for _, r := range routes {
			method, template, _ := strings.Cut(r.route, " ")
			for _, c := range r.calls {
				made++
				path := template
				if template == "/api/v1/oauth/authenticators/{id}" {
					// One path in the document for two routes: POST takes
					// the app's id, the others the authenticator's.
					id := c.ids["authenticator_id"]
					if method == http.MethodPost {
						id = c.ids["app_id"]
					}
					path = strings.ReplaceAll(path, "{id}", id)
				}
				for k, v := range c.ids {
					path = strings.ReplaceAll(path, "{"+k+"}", v)
				}
				require.NotContains(t, path, "{", "%s: ids %v", r.route, c.ids)
				if c.query != "" {
					path += "?" + c.query
				}
				name := method + " " + path
				if template == "/api/v1/ws" {
					_, status := e.socket(c.query, http.Header{"Authorization": {"Bearer " + bound}, "X-Admin-Reason": {"isolation test"}})
					assert.Equal(t, c.status, status, name)
					continue
				}
				body := c.body
				if f, ok := body.(func() any); ok {
					body = f()
				}
				opts := []opt{bearer(bound), reason}
				if strings.HasSuffix(template, "/mcp") {
					opts = append(opts, header("Accept", "application/json, text/event-stream")) // what MCP's transport asks
				}
				res := e.do(method, path, body, opts...)
				// Every route's answer is reported, not just the first wrong one.
				if !assert.Equal(t, c.status, res.Status, "%s (%s): %s", name, r.route, res.Body) {
					continue
				}
				switch c.status {
				case forbidden:
					require.Equal(t, "PermissionError", res.str("error_type"), name)
				case absent:
					if strings.HasPrefix(template, "/api/v1/openai/") {
						// OpenAI's error shape, as its SDKs read it.
						require.Equal(t, "model_not_found", res.JSON["error"].(map[string]any)["code"], name)
						break
					}
					require.Equal(t, "NotFoundError", res.str("error_type"), name)
				}
				for field, allowed := range c.only {
					for _, key := range []string{"apps", "agents", "activations", "functions", "pipelines", "runs", "authenticators", "mcp_servers", "data"} {
						for _, item := range list(res, key) {
							v, _ := item[field].(string)
							require.Contains(t, strings.Fields(allowed), v, "%s: %s of %v", name, field, item)
						}
					}
					if allowed == "" {
						require.Equal(t, 0.0, res.JSON["total_count"], name)
					}
				}
			}
		}

		require.Greater(t, made, 2*len(routes), "the calls were made")
		if t.Failed() {
			return
		}
		// The worker's processes are an admin's view: not a bound key's.
		require.NotContains(t, e.do("GET", "/api/v1/worker/status", nil, bearer(bound)).expect(t, 200).JSON, "workers")

		// Nothing outside A changed.
		me := e.do("GET", "/api/v1/users/me", nil, bearer(owner)).expect(t, 200)
		require.Equal(t, "owner@example.com", me.str("email"))
		r := e.do("GET", "/api/v1/llm-providers", nil, bearer(owner)).expect(t, 200)
		require.Equal(t, []string{"echo", providerID}, providerIDs(r))
		require.Equal(t, false, list(r, "providers")[1]["is_default"])
		require.Equal(t, "active", e.do("GET", "/api/v1/apps/"+fb.appID, nil, bearer(owner)).expect(t, 200).str("status"))
		require.Equal(t, "active", e.do("GET", "/api/v1/apps/"+fc.appID, nil, bearer(other)).expect(t, 200).str("status"))
		require.Equal(t, "active", e.do("GET", "/api/v1/agents/"+fb.agentID, nil, bearer(owner)).expect(t, 200).str("status"))
		require.Equal(t, "active", e.do("GET", "/api/v1/agents/"+fc.agentID, nil, bearer(other)).expect(t, 200).str("status"))
		require.Equal(t, true, e.do("GET", "/api/v1/oauth/authenticators/"+authOf[fb.appID], nil, bearer(owner)).expect(t, 200).JSON["is_active"])
		require.Equal(t, true, e.do("GET", "/api/v1/oauth/authenticators/"+authOf[fc.appID], nil, bearer(other)).expect(t, 200).JSON["is_active"])
		require.Equal(t, []string{"Desk"}, names(list(e.do("GET", "/api/v1/apps?limit=100", nil, bearer(other)).expect(t, 200), "apps")))
		require.Len(t, list(e.do("GET", "/api/v1/apps", nil, bearer(owner)).expect(t, 200), "apps"), 2, "no app created")
		require.Equal(t, true, e.do("GET", "/api/v1/users/"+otherID, nil, bearer(owner)).expect(t, 200).JSON["is_active"])
		require.Len(t, list(e.do("GET", "/api/v1/user/api-keys", nil, bearer(owner)).expect(t, 200), "api_keys"), 2, "no key created or revoked")
		require.Len(t, list(e.do("GET", "/api/v1/activations/"+actB+"/deliveries", nil, bearer(owner)).expect(t, 200), "deliveries"), 1)
		// The queue was not paused: B's agent still runs.
		id := e.do("POST", "/api/v1/agents/"+fb.agentID+"/activate", activate, bearer(owner)).expect(t, 201).str("activation_id")
		require.Equal(t, "completed", e.await(owner, id).str("status"))
	})
}

// TestListAppFilterOfAnotherApp: every list that takes an app_id filter
// (a route of the OpenAPI document with that query parameter and no row
// here fails the test) answers another user's app, an app that does not
// exist and a malformed id 404 as the app's own routes do, not an empty
// list; the caller's own app is a 200 (the control).
func TestListAppFilterOfAnotherApp(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		e.signup("admin@example.com") // the first user is an admin; the callers are not
		tok := e.signup("lists@example.com")
		other := e.signup("lists-other@example.com")
		mine, theirs := e.llmAgent(tok, nil, 0).appID, e.llmAgent(other, nil, 0).appID

		routes := []string{"/api/v1/activations", "/api/v1/functions", "/api/v1/pipelines", "/api/v1/credentials",
			"/api/v1/oauth/authenticators", "/api/v1/ws", "/api/v1/usage"}
		requireFilterRoutes(t, e, "app_id", routes)

		for _, route := range routes {
			for _, c := range []struct {
				appID  string
				status int
			}{
				{mine, 200},
				{theirs, http.StatusNotFound},
				{uuid.NewString(), http.StatusNotFound},
				{"not-a-uuid", http.StatusNotFound},
			} {
				name := route + "?app_id=" + c.appID
				if route == "/api/v1/ws" {
					want := c.status
					if want == 200 {
						want = http.StatusSwitchingProtocols
					}
					_, status := e.socket("app_id="+c.appID, http.Header{"Authorization": {"Bearer " + tok}})
					assert.Equal(t, want, status, name)
					continue
				}
				r := e.do("GET", route+"?app_id="+c.appID, nil, bearer(tok))
				if assert.Equal(t, c.status, r.Status, "%s: %s", name, r.Body) && c.status == http.StatusNotFound {
					assert.Equal(t, "NotFoundError", r.str("error_type"), name)
					assert.Contains(t, r.str("detail"), "App not found", name)
				}
			}
		}
	})
}

// requireFilterRoutes fails unless routes are exactly the GETs the document
// gives the query filter param, each documenting its 404: a new list route
// with the filter cannot escape the test that calls it.
func requireFilterRoutes(t *testing.T, e *env, param string, routes []string) {
	t.Helper()
	doc := e.do("GET", "/api/v1/openapi.json", nil).expect(t, 200)
	var spec struct {
		Paths map[string]map[string]struct {
			Parameters []struct{ Name, In string } `json:"parameters"`
			Responses  map[string]json.RawMessage  `json:"responses"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(doc.Body, &spec))
	for path, ops := range spec.Paths {
		for _, p := range ops["get"].Parameters {
			if p.In == "query" && p.Name == param {
				require.Contains(t, routes, path, "%s filters by %s and has no row here", path, param)
			}
		}
	}
	for _, route := range routes {
		require.Contains(t, spec.Paths[route]["get"].Responses, "404", "%s documents its 404", route)
	}
}

// TestListAgentFilterOfAnotherAgent: every list that takes an agent_id
// filter answers 404 for an agent that is not the caller's (another
// user's, none, not an id), as its app_id filter does, instead of an
// empty page that hides the mistake.
func TestListAgentFilterOfAnotherAgent(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		e.signup("admin@example.com") // the first user is an admin; the callers are not
		tok := e.signup("agents@example.com")
		other := e.signup("agents-other@example.com")
		mine, theirs := e.llmAgent(tok, nil, 0), e.llmAgent(other, nil, 0)

		routes := []string{"/api/v1/activations", "/api/v1/apps/{app_id}/activations", "/api/v1/usage"}
		requireFilterRoutes(t, e, "agent_id", routes)

		for _, route := range routes {
			route = strings.ReplaceAll(route, "{app_id}", mine.appID)
			for _, c := range []struct {
				agentID string
				status  int
			}{
				{mine.agentID, 200},
				{apps.AssistantID, 200}, // a system agent is everyone's
				{theirs.agentID, http.StatusNotFound},
				{uuid.NewString(), http.StatusNotFound},
				{"not-a-uuid", http.StatusNotFound},
			} {
				name := route + "?agent_id=" + c.agentID
				r := e.do("GET", name, nil, bearer(tok))
				if assert.Equal(t, c.status, r.Status, "%s: %s", name, r.Body) && c.status == http.StatusNotFound {
					assert.Equal(t, "NotFoundError", r.str("error_type"), name)
					assert.Contains(t, r.str("detail"), "Agent not found", name)
				}
			}
		}
	})
}
