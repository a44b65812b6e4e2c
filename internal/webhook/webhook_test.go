package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/secret"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

type bundle struct {
	s       *store.Store
	box     *secret.Box
	svc     *webhook.Service
	q       *queue.Queue
	owner   *auth.Caller
	other   *auth.Caller
	appID   string
	agentID string
}

func setup(t *testing.T, d store.Dialect) *bundle {
	return setupWith(t, d, webhook.Options{}, testdb.Logger())
}

// setupWith is setup with delivery options (retries every 10 ms unless
// given; the receivers' address allowed) and a logger.
func setupWith(t *testing.T, d store.Dialect, opts webhook.Options, log *slog.Logger) *bundle {
	t.Helper()
	ctx := context.Background()
	s := testdb.Open(t, d)
	box, err := secret.New([][]byte{bytes.Repeat([]byte{9}, 32)})
	require.NoError(t, err)
	a, err := auth.New(s, testdb.Logger(), auth.Options{Password: auth.PasswordParams{Memory: 64, Time: 1, Threads: 1}})
	require.NoError(t, err)
	q := queue.New(s, log, queue.Options{RunWorkers: true, Workers: 2, FetchPollInterval: 100 * time.Millisecond})
	if opts.RetryDelays == nil {
		opts.RetryDelays = []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}
	}
	opts.Egress = egress.New(egresstest.AllowPrefixes())
	svc := webhook.New(s, box, a, q, log, opts)
	require.NoError(t, q.Start(ctx))
	t.Cleanup(func() { require.NoError(t, q.Stop(context.Background())) })

	b := &bundle{s: s, box: box, svc: svc, q: q}
	now := store.Now()
	mkUser := func() *auth.Caller {
		u := &store.User{ID: uuid.NewString(), Email: uuid.NewString() + "@example.com", PasswordHash: "h", IsActive: true, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, s.UserCreate(ctx, u, false))
		return &auth.Caller{UserID: u.ID, Kind: auth.KindSession}
	}
	b.owner, b.other = mkUser(), mkUser()
	app := &store.App{ID: uuid.NewString(), UserID: b.owner.UserID, Name: "A", Slug: "a", Version: "1.0.0", Status: "active", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.AppCreate(ctx, app))
	b.appID = app.ID
	agent := &store.Agent{ID: uuid.NewString(), AppID: app.ID, UserID: b.owner.UserID, Name: "bot", AgentTypeID: "llm",
		Version: "1.0.0", Status: "active", TimeoutSeconds: 300, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.AgentCreate(ctx, agent))
	b.agentID = agent.ID
	return b
}

// activation stores a finished activation of the owner's agent.
func (b *bundle) activation(t *testing.T) string {
	t.Helper()
	a := &store.Activation{ID: uuid.NewString(), UserID: b.owner.UserID, AppID: b.appID, AgentID: b.agentID, Status: "completed",
		InputData: json.RawMessage(`{}`), Context: json.RawMessage(`{}`), Metadata: json.RawMessage(`{}`), Priority: 2, CreatedAt: store.Now()}
	require.NoError(t, b.s.ActivationCreate(context.Background(), a))
	return a.ID
}

// receiver is a webhook endpoint that fails its first `fail` requests.
type receiver struct {
	mu   sync.Mutex
	fail int
	reqs []received
	ok   chan received
}

type received struct {
	header http.Header
	body   []byte
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	rec := received{header: req.Header.Clone(), body: body}
	r.mu.Lock()
	r.reqs = append(r.reqs, rec)
	failing := len(r.reqs) <= r.fail
	r.mu.Unlock()
	if failing {
		http.Error(w, "down for a moment", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
	r.ok <- rec
}

// verify checks a signature from first principles (not with the package's
// own Verify): HMAC-SHA256 over "id.timestamp.body" with the decoded key.
func verify(t *testing.T, secret string, r received) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(r.header.Get("webhook-id") + "." + r.header.Get("webhook-timestamp") + "."))
	mac.Write(r.body)
	require.Equal(t, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)), r.header.Get("webhook-signature"))
	sec, err := strconv.ParseInt(r.header.Get("webhook-timestamp"), 10, 64)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), time.Unix(sec, 0), time.Minute)
}

func TestDeliveryRetriesAndRecords(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, d)
		rcv := &receiver{fail: 1, ok: make(chan received, 4)}
		hs := egresstest.NewServer(t, rcv)
		actID := b.activation(t)
		ev := events.Event{Type: events.ActivationCompleted, UserID: b.owner.UserID, ActivationID: actID, AgentID: b.agentID,
			Status: "completed", Context: map[string]any{"app_id": b.appID}, OutputData: json.RawMessage(`{"response":"done"}`),
			Timestamp: store.Now()}

		// A delivery enqueued in a transaction that rolls back never happens.
		boom := errors.New("boom")
		err := b.s.InTx(ctx, func(tx *store.Store) error {
			require.NoError(t, b.svc.EnqueueTx(ctx, tx, b.appID, hs.URL+"/rolled-back", ev))
			return boom
		})
		require.ErrorIs(t, err, boom)
		require.NoError(t, b.s.InTx(ctx, func(tx *store.Store) error { return b.svc.EnqueueTx(ctx, tx, b.appID, hs.URL+"/hook", ev) }))

		var ok received
		select {
		case ok = <-rcv.ok:
		case <-time.After(30 * time.Second):
			t.Fatal("the webhook was never delivered")
		}
		secret, err := b.svc.Secret(ctx, b.owner, b.appID)
		require.NoError(t, err)
		rcv.mu.Lock()
		reqs := rcv.reqs
		rcv.mu.Unlock()
		require.Len(t, reqs, 2, "one failure, one success")
		for _, r := range reqs {
			verify(t, secret, r)
			require.NoError(t, webhook.Verify(secret, r.header, r.body, time.Minute))
			require.Equal(t, ok.header.Get("webhook-id"), r.header.Get("webhook-id"), "retries keep the message id")
		}
		require.True(t, strings.HasPrefix(ok.header.Get("webhook-id"), "msg_"))
		require.Equal(t, "application/json", ok.header.Get("Content-Type"))
		var got map[string]any
		require.NoError(t, json.Unmarshal(ok.body, &got))
		require.Equal(t, "activation_completed", got["type"])
		require.Equal(t, actID, got["activation_id"])
		require.Equal(t, map[string]any{"response": "done"}, got["output_data"])

		// Both attempts are recorded; the success is written just after the
		// receiver answered, so wait for it.
		var list []store.WebhookDelivery
		deadline := time.Now().Add(10 * time.Second)
		for {
			var total int
			list, total, err = b.svc.Deliveries(ctx, b.owner, actID, 50, 0)
			require.NoError(t, err)
			if total == 2 {
				break
			}
			require.True(t, time.Now().Before(deadline), "deliveries recorded: %d", total)
			time.Sleep(10 * time.Millisecond) //nolint:forbidigo // polling the database with a deadline
		}
		require.Equal(t, 1, list[0].Attempt)
		require.Equal(t, 500, list[0].StatusCode)
		require.Equal(t, "receiver answered 500", list[0].Error)
		require.Equal(t, store.DeliveryRetrying, list[0].State)
		require.NotNil(t, list[0].NextAttempt)
		require.Equal(t, 2, list[1].Attempt)
		require.Equal(t, 204, list[1].StatusCode)
		require.Empty(t, list[1].Error)
		require.Equal(t, store.DeliveryDelivered, list[1].State)
		require.Nil(t, list[1].NextAttempt)
		for _, dl := range list {
			require.Equal(t, hs.URL+"/hook", dl.URL)
			require.Equal(t, events.ActivationCompleted, dl.EventType)
			require.GreaterOrEqual(t, dl.DurationMS, 0)
		}

		// Only the owner sees them.
		_, _, err = b.svc.Deliveries(ctx, b.other, actID, 50, 0)
		require.True(t, apperr.Is(err, apperr.NotFound), "err: %v", err)
		_, _, err = b.svc.Deliveries(ctx, b.owner, uuid.NewString(), 50, 0)
		require.True(t, apperr.Is(err, apperr.NotFound))
		_, _, err = b.svc.Deliveries(ctx, b.owner, "not-a-uuid", 50, 0)
		require.True(t, apperr.Is(err, apperr.NotFound))

		// A delivery that cannot be made is recorded as failed, and does not
		// fail the caller's transaction (the activation's result).
		require.NoError(t, b.s.InTx(ctx, func(tx *store.Store) error {
			return b.svc.EnqueueTx(ctx, tx, b.appID, "ftp://example.com/x", ev)
		}))
		require.NoError(t, b.svc.EnqueueTx(ctx, nil, "", hs.URL+"/hook", ev))
		list, total, err := b.svc.Deliveries(ctx, b.owner, actID, 50, 0)
		require.NoError(t, err)
		require.Equal(t, 4, total)
		require.Equal(t, "not sent: webhook_url: must be an absolute http or https URL", list[2].Error)
		require.Contains(t, list[3].Error, "no app")
		require.Zero(t, list[3].StatusCode)
		require.Equal(t, store.DeliveryGaveUp, list[2].State)
		require.Equal(t, store.DeliveryGaveUp, list[3].State)
	})
}

func TestSecrets(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, d)
		s1, err := b.svc.Secret(ctx, b.owner, b.appID)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(s1, "whsec_"))
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s1, "whsec_"))
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(key), 24)
		again, err := b.svc.Secret(ctx, b.owner, b.appID)
		require.NoError(t, err)
		require.Equal(t, s1, again, "made once, then kept")
		enc, err := b.s.AppWebhookSecret(ctx, b.appID)
		require.NoError(t, err)
		require.NotContains(t, enc, strings.TrimPrefix(s1, "whsec_"), "sealed at rest")

		s2, err := b.svc.RotateSecret(ctx, b.owner, b.appID)
		require.NoError(t, err)
		require.NotEqual(t, s1, s2)
		now, err := b.svc.Secret(ctx, b.owner, b.appID)
		require.NoError(t, err)
		require.Equal(t, s2, now)

		for _, try := range []func() error{
			func() error { _, err := b.svc.Secret(ctx, b.other, b.appID); return err },
			func() error { _, err := b.svc.RotateSecret(ctx, b.other, b.appID); return err },
			func() error { _, err := b.svc.Secret(ctx, b.owner, uuid.NewString()); return err },
			func() error { _, err := b.svc.Secret(ctx, b.owner, "nope"); return err },
		} {
			err := try()
			require.True(t, apperr.Is(err, apperr.NotFound), "err: %v", err)
		}
		// An admin reaches it only with a stated reason.
		admin := &auth.Caller{UserID: b.other.UserID, IsAdmin: true, Kind: auth.KindSession}
		_, err = b.svc.Secret(ctx, admin, b.appID)
		require.True(t, apperr.Is(err, apperr.NotFound))
		admin.AdminReason = "support ticket 7"
		got, err := b.svc.Secret(ctx, admin, b.appID)
		require.NoError(t, err)
		require.Equal(t, s2, got)
	})
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	for raw, ok := range map[string]bool{
		"https://example.com/hook": true, "http://127.0.0.2:8080/x": true, "http://127.0.0.1:8080/x": false, "http://localhost/x": false,
		"ftp://example.com": false, "javascript:alert(1)": false, "/relative": false, "https://": false, "": false, "http://[::1": false,
	} {
		err := b.svc.CheckURL("metadata.webhook_url", raw)
		require.Equal(t, ok, err == nil, raw)
		if err != nil {
			e, isApp := apperr.As(err)
			require.True(t, isApp)
			require.Equal(t, "metadata.webhook_url", e.Field)
		}
	}
}

func TestVerifyRefusesTampering(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	body := []byte(`{"type":"activation_completed"}`)
	sign := func(ts time.Time) http.Header {
		sig, err := webhook.Sign(secret, "msg_1", ts, body)
		require.NoError(t, err)
		return http.Header{"Webhook-Id": {"msg_1"}, "Webhook-Timestamp": {strconv.FormatInt(ts.Unix(), 10)}, "Webhook-Signature": {"v1,bm9wZQ== " + sig}}
	}
	require.NoError(t, webhook.Verify(secret, sign(time.Now()), body, 5*time.Minute), "any of several signatures may match")
	require.Error(t, webhook.Verify(secret, sign(time.Now()), []byte(`{"type":"x"}`), 5*time.Minute))
	require.Error(t, webhook.Verify(webhook.NewSecret(), sign(time.Now()), body, 5*time.Minute))
	require.Error(t, webhook.Verify(secret, sign(time.Now().Add(-time.Hour)), body, 5*time.Minute))
}
