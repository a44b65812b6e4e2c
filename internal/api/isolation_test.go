package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
				"agent_config": map[string]any{"runtime": "webhook", "url": agentURL, "secret": "whsec_YXV0aG9yLXNlY3JldA=="}},
		}}
		appID := e.importManifest(author, m).expect(t, 201).str("app_id")
		e.do("PATCH", "/api/v1/apps/"+appID, map[string]any{"marketplace_status": "published"}, bearer(author)).expect(t, 200)

		r := e.do("POST", "/api/v1/apps/"+appID+"/install", nil, bearer(user)).expect(t, 201)
		copyID := r.str("app_id")
		ctx := context.Background()
		copied, err := e.srv.Store.AgentListByApp(ctx, copyID)
		require.NoError(t, err)
		require.Len(t, copied, 2)
		for _, a := range copied {
			require.Empty(t, a.WebhookURL, "agent %s keeps no webhook_url", a.Name)
			require.Empty(t, a.SecretEnc, "agent %s keeps no secret", a.Name)
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
