package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/testlog"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

// event is a finished activation's event of user for the delivery tests.
func event(user, activationID string) events.Event {
	return events.Event{Type: events.ActivationCompleted, UserID: user, ActivationID: activationID, Status: "completed",
		OutputData: json.RawMessage(`{"response":"done"}`), Timestamp: store.Now()}
}

// awaitDeliveries polls until an activation has n delivery records.
func (b *bundle) awaitDeliveries(t *testing.T, activationID string, n int) []store.WebhookDelivery {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		list, total, err := b.svc.Deliveries(context.Background(), b.owner, activationID, 50, 0)
		require.NoError(t, err)
		if total >= n {
			return list
		}
		require.True(t, time.Now().Before(deadline), "deliveries recorded: %d of %d", total, n)
		time.Sleep(10 * time.Millisecond) //nolint:forbidigo // polling the database with a deadline
	}
}

// capture is a receiver that keeps what it is sent.
func capture(t *testing.T) (url string, got <-chan received) {
	ch := make(chan received, 16)
	hs := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ch <- received{header: r.Header.Clone(), body: body}
	}))
	return hs.URL + "/hook", ch
}

func next(t *testing.T, ch <-chan received) received {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("no delivery came")
		return received{}
	}
}

// TestRotationSignsWithBothSecrets: for a day after a rotation, a delivery
// carries the old and the new secret's signatures, space-separated, and
// the official Standard Webhooks library accepts it with either secret;
// after that day, only the new one signs.
func TestRotationSignsWithBothSecrets(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, d)
		url, got := capture(t)
		verify := func(secret string, r received) error {
			wh, err := standardwebhooks.NewWebhook(secret)
			require.NoError(t, err)
			return wh.Verify(r.body, r.header)
		}

		old, err := b.svc.Secret(ctx, b.owner, b.appID)
		require.NoError(t, err)
		require.NoError(t, b.svc.EnqueueTx(ctx, nil, b.appID, url, event(b.owner.UserID, b.activation(t))))
		before := next(t, got)
		require.Len(t, strings.Fields(before.header.Get("webhook-signature")), 1, "no rotation: one signature")
		require.NoError(t, verify(old, before))

		rotated, err := b.svc.RotateSecret(ctx, b.owner, b.appID)
		require.NoError(t, err)
		require.NoError(t, b.svc.EnqueueTx(ctx, nil, b.appID, url, event(b.owner.UserID, b.activation(t))))
		during := next(t, got)
		require.Len(t, strings.Fields(during.header.Get("webhook-signature")), 2)
		require.NoError(t, verify(old, during), "a receiver still on the old secret")
		require.NoError(t, verify(rotated, during), "a receiver already on the new secret")
		require.NoError(t, webhook.Verify(rotated, during.header, during.body, time.Minute))
		require.ErrorIs(t, verify(webhook.NewSecret(), during), standardwebhooks.ErrNoMatchingSignature)

		// Another rotation, made a day and more ago: the secret it replaced
		// no longer signs.
		latest := webhook.NewSecret()
		sealed, err := b.box.Seal(latest)
		require.NoError(t, err)
		require.NoError(t, b.s.AppWebhookSecretRotate(ctx, b.appID, sealed, store.Now().Add(-webhook.RotationOverlap-time.Minute)))
		require.NoError(t, b.svc.EnqueueTx(ctx, nil, b.appID, url, event(b.owner.UserID, b.activation(t))))
		after := next(t, got)
		require.Len(t, strings.Fields(after.header.Get("webhook-signature")), 1)
		require.NoError(t, verify(latest, after))
		require.ErrorIs(t, verify(rotated, after), standardwebhooks.ErrNoMatchingSignature)
	})
}

// TestDeliveryStates: every attempt is recorded with its state: retrying
// (with the time of the next attempt) until the last, which gave up.
func TestDeliveryStates(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		delays := []time.Duration{20 * time.Millisecond, time.Hour}
		b := setupWith(t, d, webhook.Options{RetryDelays: delays}, testdb.Logger())
		// The first answer is slow: a retry's delay runs from the end of
		// the attempt, not from its start (the record's created_at), as a
		// loaded CI machine once showed.
		const slow = 1200 * time.Millisecond
		var answered atomic.Int32
		hs := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if answered.Add(1) == 1 {
				time.Sleep(slow)
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		actID := b.activation(t)
		require.NoError(t, b.svc.EnqueueTx(ctx, nil, b.appID, hs.URL+"/hook", event(b.owner.UserID, actID)))
		list := b.awaitDeliveries(t, actID, 2)
		seen := store.Now()
		for i, dl := range list {
			require.Equal(t, i+1, dl.Attempt)
			require.Equal(t, 503, dl.StatusCode)
			require.Equal(t, "receiver answered 503", dl.Error)
			require.Equal(t, store.DeliveryRetrying, dl.State)
			require.NotNil(t, dl.NextAttempt)
		}
		require.GreaterOrEqual(t, list[0].DurationMS, int(slow.Milliseconds()))
		// Each attempt's delay, counted from the attempt's end: after its
		// start plus its duration, and before this test saw it recorded.
		for i, delay := range delays {
			ended := list[i].CreatedAt.Add(time.Duration(list[i].DurationMS) * time.Millisecond)
			require.False(t, list[i].NextAttempt.Before(ended.Add(delay)), "attempt %d: next %s, ended %s", i+1, list[i].NextAttempt, ended)
			require.False(t, list[i].NextAttempt.After(seen.Add(delay)), "attempt %d: next %s, seen %s", i+1, list[i].NextAttempt, seen)
		}

		// With one attempt left, the failure gives up.
		b2 := setupWith(t, d, webhook.Options{RetryDelays: []time.Duration{10 * time.Millisecond}}, testdb.Logger())
		actID = b2.activation(t)
		require.NoError(t, b2.svc.EnqueueTx(ctx, nil, b2.appID, hs.URL+"/hook", event(b2.owner.UserID, actID)))
		list = b2.awaitDeliveries(t, actID, 2)
		require.Equal(t, store.DeliveryRetrying, list[0].State)
		require.Equal(t, store.DeliveryGaveUp, list[1].State)
		require.Nil(t, list[1].NextAttempt)
	})
}

// TestDeliveryKeepsURLSecrets: a webhook URL's query string and userinfo
// (often a token) appear in no log line, no delivery record and no job
// error, however the deliveries fail.
func TestDeliveryKeepsURLSecrets(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		logs := &testlog.Buffer{}
		log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		b := setupWith(t, d, webhook.Options{RetryDelays: []time.Duration{10 * time.Millisecond}}, log)
		hs := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
		}))
		closed := egresstest.Listen(t)
		closedAddr := closed.Addr().String()
		closed.Close()
		for _, target := range []string{
			strings.Replace(hs.URL, "http://", "http://alice:pa55word@", 1) + "/hook?token=s3cret",
			"http://" + closedAddr + "/hook?token=s3cret",
		} {
			actID := b.activation(t)
			require.NoError(t, b.svc.EnqueueTx(ctx, nil, b.appID, target, event(b.owner.UserID, actID)))
			list := b.awaitDeliveries(t, actID, 2)
			for _, dl := range list {
				require.NotContains(t, dl.URL, "s3cret")
				require.NotContains(t, dl.URL, "pa55word")
				require.True(t, strings.HasSuffix(dl.URL, "/hook"), dl.URL)
				if dl.StatusCode == 0 {
					require.Equal(t, "could not connect", dl.Error, "no raw dial error")
				}
			}
		}
		require.Eventually(t, func() bool { return strings.Contains(logs.String(), "/hook") }, 10*time.Second, 10*time.Millisecond,
			"the failures are logged")
		require.NotContains(t, logs.String(), "s3cret")
		require.NotContains(t, logs.String(), "pa55word")
		var jobErrors string
		rows, err := b.s.DB().QueryContext(ctx, `SELECT CAST(errors AS TEXT) FROM river_job WHERE kind = 'webhook_delivery' AND errors IS NOT NULL`)
		require.NoError(t, err)
		for rows.Next() {
			var e string
			require.NoError(t, rows.Scan(&e))
			jobErrors += e
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		require.Contains(t, jobErrors, "/hook")
		require.NotContains(t, jobErrors, "s3cret")
		require.NotContains(t, jobErrors, "pa55word")
	})
}

// TestOneUserCannotHoldUpAnother: user A's receivers hang; user B's
// delivery still goes out at once, because A's deliveries take at most
// their share of the workers and the rest wait without holding one.
func TestOneUserCannotHoldUpAnother(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		latency := bLatency(t, d, webhook.Options{Workers: 4, PerUser: 2, Timeout: 20 * time.Second}, 1)
		t.Logf("user B's delivery latency while user A's receivers hang: %s", latency)
		require.Less(t, latency, 5*time.Second)
	})
}

// TestSlowDestinationCannotHoldEveryWorker: four users (open registration
// makes them cheap) send to one receiver that hangs; a fifth user's
// delivery to another destination still goes out at once, because the
// deliveries to one destination take at most PerHost of the workers
// (issue 16, item 9).
func TestSlowDestinationCannotHoldEveryWorker(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		latency := bLatency(t, d, webhook.Options{Workers: 4, PerUser: 2, PerHost: 2, Timeout: 20 * time.Second}, 4)
		t.Logf("the fifth user's delivery latency while four users' receivers hang on one host: %s", latency)
		require.Less(t, latency, 5*time.Second)
	})
}

// bLatency enqueues 12 deliveries of `users` users (A…) to a receiver that
// hangs, then one of user B to a prompt one, and measures how long B's
// takes.
func bLatency(t *testing.T, d store.Dialect, opts webhook.Options, users int) time.Duration {
	ctx := context.Background()
	b := setupWith(t, d, opts, testdb.Logger())
	release := make(chan struct{})
	slow := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release) })
	fastURL, got := capture(t)

	// User B has an app of their own.
	now := store.Now()
	app := &store.App{ID: uuid.NewString(), UserID: b.other.UserID, Name: "B", Slug: "b", Version: "1.0.0", Status: "active", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, b.s.AppCreate(ctx, app))

	owners := []string{b.owner.UserID}
	for range users - 1 {
		owners = append(owners, uuid.NewString())
	}
	for i := range 12 {
		ev := event(owners[i%users], b.activation(t))
		require.NoError(t, b.svc.EnqueueTx(ctx, nil, b.appID, fmt.Sprintf("%s/a%d", slow.URL, i), ev))
	}
	// Let A's deliveries take the workers first.
	busy := min(users*opts.PerUser, opts.Workers)
	if opts.PerHost > 0 {
		busy = min(busy, opts.PerHost)
	}
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.s.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM river_job WHERE kind = 'webhook_delivery' AND state = 'running'`).Scan(&n))
		return n >= busy
	}, 10*time.Second, 10*time.Millisecond)
	start := time.Now()
	require.NoError(t, b.svc.EnqueueTx(ctx, nil, app.ID, fastURL, event(b.other.UserID, uuid.NewString())))
	select {
	case <-got:
		return time.Since(start)
	case <-time.After(opts.Timeout + 10*time.Second):
		return time.Since(start)
	}
}
