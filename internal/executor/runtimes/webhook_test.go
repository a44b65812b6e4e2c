package runtimes_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/executor/runtimes"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

// receiver is a webhook agent on the outside world's address: it answers
// with reply, after checking the signature, and keeps what it received.
type receiver struct {
	url  string
	got  atomic.Pointer[http.Request]
	body atomic.Pointer[[]byte]
	err  atomic.Pointer[error]
}

func newReceiver(t *testing.T, secret string, reply http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{}
	srv := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		err := webhook.Verify(secret, req.Header, b, time.Minute)
		r.got.Store(req)
		r.body.Store(&b)
		r.err.Store(&err)
		reply(w, req)
	}))
	r.url = srv.URL + "/run?token=hidden"
	return r
}

func jsonReply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func newWebhook(secret string) *runtimes.Webhook {
	return runtimes.NewWebhook(egress.New(egresstest.AllowPrefixes()), "https://ap.example.com/api/v1",
		func(context.Context, string) (string, error) { return secret, nil })
}

func run(url string) *executor.Run {
	cfg, _ := json.Marshal(map[string]string{"runtime": "webhook", "url": url})
	return &executor.Run{Kind: executor.Activation, ID: "act-1", AgentID: "agent-1", AppID: "app-1",
		Input: json.RawMessage(`{"q":"hi"}`), Context: json.RawMessage(`{"chat_id":"c1"}`), Config: cfg, AgentKey: "agk_test"}
}

// TestWebhookExecutorRuns: the run is POSTed signed with the agent's
// secret, carrying its activation, agent and app ids (an installed copy's
// differ from the publisher's, and the agent key opens only routes that
// take the app id), input, context, agent key and the API's base URL; the
// JSON answer is the output.
func TestWebhookExecutorRuns(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	rcv := newReceiver(t, secret, jsonReply(200, `{"answer": 42}`))
	res, err := newWebhook(secret).Execute(context.Background(), run(rcv.url))
	require.NoError(t, err)
	require.JSONEq(t, `{"answer": 42}`, string(res.Output))

	require.NoError(t, *rcv.err.Load(), "the signature verifies with the agent's secret")
	req := rcv.got.Load()
	require.Equal(t, http.MethodPost, req.Method)
	require.Equal(t, "application/json", req.Header.Get("Content-Type"))
	require.Equal(t, "msg_act-1", req.Header.Get(webhook.HeaderID))
	require.JSONEq(t, `{"activation_id":"act-1","agent_id":"agent-1","app_id":"app-1","input_data":{"q":"hi"},"context":{"chat_id":"c1"},
		"agent_key":"agk_test","base_url":"https://ap.example.com/api/v1"}`, string(*rcv.body.Load()))

	// Any JSON value is an output; another secret does not verify.
	other := newReceiver(t, webhook.NewSecret(), jsonReply(201, `["a", 1]`))
	res, err = newWebhook(secret).Execute(context.Background(), run(other.url))
	require.NoError(t, err)
	require.JSONEq(t, `["a", 1]`, string(res.Output))
	require.Error(t, *other.err.Load())
}

// TestWebhookExecutorFailures: each failure names its cause, never the
// URL (its query may carry a credential).
func TestWebhookExecutorFailures(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	for _, tc := range []struct {
		name  string
		reply http.HandlerFunc
		want  string
	}{
		{"server error", jsonReply(500, `{"error":"boom"}`), "Webhook agent answered 500"},
		{"not found", jsonReply(404, `{}`), "Webhook agent answered 404"},
		{"redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) },
			"Webhook agent answered 302: redirects are not followed"},
		{"not JSON", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "<html>ok</html>") },
			"Webhook agent answered 200 with a body that is not JSON"},
		{"empty", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }, "Webhook agent answered 204 with a body that is not JSON"},
		{"too large", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `"`+strings.Repeat("x", runtimes.WebhookMaxResponse)+`"`)
		}, "Webhook agent call failed: response exceeds 1 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rcv := newReceiver(t, secret, tc.reply)
			_, err := newWebhook(secret).Execute(context.Background(), run(rcv.url))
			require.EqualError(t, err, tc.want)
			require.NotContains(t, err.Error(), "hidden")
		})
	}
}

// TestWebhookExecutorTimeout: the run's context bounds the call; its end
// is the context's error, which the lifecycle names (timed out, cancelled).
func TestWebhookExecutorTimeout(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	release := make(chan struct{})
	rcv := newReceiver(t, secret, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := newWebhook(secret).Execute(ctx, run(rcv.url))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)
}

// TestWebhookExecutorRefusesPrivateAddresses: a name resolving to
// loopback, or a literal private address, is refused before anything is
// sent.
func TestWebhookExecutorRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	// A listener on 127.0.0.1 that must see no connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var dialled atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	for _, url := range []string{
		"http://localhost:" + strconv.Itoa(port) + "/run",
		"http://127.0.0.1:" + strconv.Itoa(port) + "/run",
		"http://169.254.169.254/latest/meta-data",
	} {
		_, err := newWebhook(secret).Execute(context.Background(), run(url))
		require.Error(t, err, url)
		require.Contains(t, err.Error(), "Webhook agent call failed: agent_config.url resolves to ", url)
		require.Contains(t, err.Error(), "(allow it with AP_EGRESS_ALLOW)")
	}
	require.Zero(t, dialled.Load(), "nothing reached the private address")
}
