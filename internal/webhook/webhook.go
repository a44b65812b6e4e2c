// Package webhook owns outgoing webhooks: each app's signing secret
// (whsec_…, sealed at rest; the previous one still signs for a day after a
// rotation), Standard Webhooks signatures, and delivery of an activation's
// final event to its webhook URL as a River job on a queue of its own that
// retries with growing delays and records every attempt with its state.
//
// Deliveries go through the egress guard (no private address, no redirect
// followed: only a 2xx answer is a success), and no user holds more than a
// bounded share of the delivery workers, so one user's slow receivers
// cannot delay another user's deliveries.
package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/fairshare"
	"github.com/agentplatform/agentplatform/internal/metrics"
	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/secret"
	"github.com/agentplatform/agentplatform/internal/store"
)

// SecretPrefix starts every webhook secret (the Standard Webhooks form).
const SecretPrefix = "whsec_"

// The Standard Webhooks headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// DefaultRetryDelays follow the Standard Webhooks recommendation: after
// the first attempt, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
var DefaultRetryDelays = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Queue is the River queue of deliveries: apart from activations (paused
// by an admin without stopping deliveries) and from housekeeping.
const Queue = "webhooks"

// DefaultTimeout bounds one delivery attempt: connecting, sending and the
// receiver's answer.
const DefaultTimeout = 15 * time.Second

// RotationOverlap is how long after a rotation deliveries are signed with
// the previous secret too.
const RotationOverlap = 24 * time.Hour

// Options tune delivery; zero values take the defaults.
type Options struct {
	// Egress guards the receivers' addresses (default: a guard that allows
	// no private address).
	Egress *egress.Guard
	// Timeout bounds one attempt. Default DefaultTimeout.
	Timeout time.Duration
	// RetryDelays are the waits before the 2nd, 3rd… attempt; their number
	// plus one is the number of attempts.
	RetryDelays []time.Duration
	// Workers is how many deliveries one process makes at once (default
	// 16), PerUser how many of them one user's may take (default 4), and
	// PerHost how many may go to one destination, host and port (default
	// 4): the rest wait for their turn without holding a worker.
	Workers, PerUser, PerHost int
	// Metrics counts attempts by outcome; nil counts nothing.
	Metrics *metrics.Metrics
}

// Service manages secrets and deliveries.
type Service struct {
	store *store.Store
	box   *secret.Box
	auth  *auth.Service
	queue *queue.Queue
	log   *slog.Logger
	opts  Options
	now   func() time.Time
	// client is the guarded client of every delivery.
	client *http.Client
	// users and hosts share the delivery workers: one user's deliveries
	// take at most PerUser of them, one destination's at most PerHost.
	users, hosts *fairshare.Pool
}

// New returns the service and registers its delivery worker on q.
func New(s *store.Store, box *secret.Box, a *auth.Service, q *queue.Queue, log *slog.Logger, opts Options) *Service {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if len(opts.RetryDelays) == 0 {
		opts.RetryDelays = DefaultRetryDelays
	}
	if opts.Egress == nil {
		opts.Egress = egress.New(nil)
	}
	if opts.Workers <= 0 {
		opts.Workers = 16
	}
	if opts.PerUser <= 0 {
		opts.PerUser = 4
	}
	if opts.PerHost <= 0 {
		opts.PerHost = 4
	}
	svc := &Service{store: s, box: box, auth: a, queue: q, log: log, opts: opts, now: store.Now,
		// No redirect is followed: a 3xx is a failed attempt, never a
		// re-sent POST nor a bodiless GET recorded as a success.
		client: opts.Egress.Client(egress.Options{Field: "webhook_url", Timeout: opts.Timeout}),
		users:  fairshare.New(opts.Workers, opts.PerUser), hosts: fairshare.New(opts.Workers, opts.PerHost)}
	q.AddBackgroundQueue(Queue, opts.Workers)
	queue.AddWorker(q, &deliveryWorker{svc: svc})
	return svc
}

// CheckURL is the create-time check of a webhook URL given as field: an
// absolute http(s) URL, not on a literal private address (400 naming the
// field).
func (s *Service) CheckURL(field, raw string) error {
	return s.opts.Egress.CheckURL(field, raw)
}

// NewSecret makes a secret: whsec_ and 32 random bytes in base64.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// Secret sizes: Standard Webhooks secrets are 24 to 64 random bytes.
const (
	minSecretBytes = 24
	maxSecretBytes = 64
)

// CheckSecret tells what is wrong with a signing secret a user supplied:
// it must be whsec_ and the base64 of 24 to 64 bytes.
func CheckSecret(secret string) error {
	rest, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return fmt.Errorf("must start with %s (the Standard Webhooks form: %s and the base64 of 24 to 64 random bytes)", SecretPrefix, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return fmt.Errorf("must be %s and standard base64 (%s)", SecretPrefix, "A-Z, a-z, 0-9, +, / and = padding")
	}
	if len(key) < minSecretBytes || len(key) > maxSecretBytes {
		return fmt.Errorf("must encode %d to %d bytes, not %d", minSecretBytes, maxSecretBytes, len(key))
	}
	return nil
}

// SignHeaders sets the Standard Webhooks headers of a message with id, sent
// at ts with body, signed with each of secrets.
func SignHeaders(h http.Header, id string, ts time.Time, body []byte, secrets ...string) error {
	sigs := make([]string, len(secrets))
	for i, sec := range secrets {
		var err error
		if sigs[i], err = Sign(sec, id, ts, body); err != nil {
			return err
		}
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, strings.Join(sigs, " "))
	return nil
}

// Sign returns the webhook-signature value for a message: "v1," and the
// base64 HMAC-SHA256 of "id.timestamp.body" keyed by the secret's bytes.
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return "", fmt.Errorf("webhook: malformed secret: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, ts.Unix())
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// Verify checks a received webhook the way a receiver should: a timestamp
// within tolerance of now, and one of the space-separated signatures
// matching (several appear while a secret is being rotated).
func Verify(secret string, h http.Header, body []byte, tolerance time.Duration) error {
	sec, err := strconv.ParseInt(h.Get(HeaderTimestamp), 10, 64)
	if err != nil {
		return errors.New("webhook: bad timestamp")
	}
	ts := time.Unix(sec, 0)
	if d := time.Since(ts); d > tolerance || d < -tolerance {
		return errors.New("webhook: timestamp outside tolerance")
	}
	want, err := Sign(secret, h.Get(HeaderID), ts, body)
	if err != nil {
		return err
	}
	for _, sig := range strings.Fields(h.Get(HeaderSignature)) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("webhook: no matching signature")
}

var errAppNotFound = apperr.NotFoundf("App not found")

// ownApp checks that c may manage the app (its owner, or an admin with a
// stated reason); anyone else is told it does not exist.
func (s *Service) ownApp(ctx context.Context, c *auth.Caller, appID, action string) error {
	if uuid.Validate(appID) != nil {
		return errAppNotFound
	}
	app, err := s.store.AppGet(ctx, appID)
	if errors.Is(err, store.ErrNotFound) {
		return errAppNotFound
	}
	if err != nil {
		return err
	}
	return s.auth.Reach(ctx, c, auth.Resource{Type: "app", ID: app.ID, OwnerID: app.UserID, AppID: app.ID}, action, errAppNotFound)
}

// Secret returns the app's webhook secret, making one on first need.
func (s *Service) Secret(ctx context.Context, c *auth.Caller, appID string) (string, error) {
	if err := s.ownApp(ctx, c, appID, "read_webhook_secret"); err != nil {
		return "", err
	}
	return s.secret(ctx, appID)
}

// RotateSecret replaces the app's webhook secret and returns the new one.
// Deliveries signed from now on use it, retries of earlier ones included,
// and for RotationOverlap the replaced secret signs them too.
func (s *Service) RotateSecret(ctx context.Context, c *auth.Caller, appID string) (string, error) {
	if err := s.ownApp(ctx, c, appID, "rotate_webhook_secret"); err != nil {
		return "", err
	}
	plain := NewSecret()
	enc, err := s.box.Seal(plain)
	if err != nil {
		return "", err
	}
	if err := s.store.AppWebhookSecretRotate(ctx, appID, enc, s.now()); err != nil {
		return "", err
	}
	return plain, nil
}

func (s *Service) secret(ctx context.Context, appID string) (string, error) {
	enc, err := s.store.AppWebhookSecret(ctx, appID)
	if err != nil {
		return "", err
	}
	if enc == "" {
		if enc, err = s.box.Seal(NewSecret()); err != nil {
			return "", err
		}
		if err := s.store.AppWebhookSecretInit(ctx, appID, enc); err != nil {
			return "", err
		}
		// Another first use may have won: read what is stored.
		if enc, err = s.store.AppWebhookSecret(ctx, appID); err != nil {
			return "", err
		}
	}
	return s.box.Open(enc)
}

// signingSecrets are the secrets a delivery is signed with at now: the
// app's current one, and the previous one during RotationOverlap.
func (s *Service) signingSecrets(ctx context.Context, appID string, now time.Time) ([]string, error) {
	w, err := s.store.AppWebhookSecrets(ctx, appID)
	if err != nil {
		return nil, err
	}
	var cur string
	if w.Current == "" {
		cur, err = s.secret(ctx, appID) // made on first use
	} else {
		cur, err = s.box.Open(w.Current)
	}
	if err != nil {
		return nil, err
	}
	out := []string{cur}
	if w.Previous != "" && w.RotatedAt != nil && now.Sub(*w.RotatedAt) < RotationOverlap {
		prev, err := s.box.Open(w.Previous)
		if err != nil {
			return nil, err
		}
		out = append(out, prev)
	}
	return out, nil
}

// DeliveryArgs is the webhook_delivery job: one event for one URL.
type DeliveryArgs struct {
	WebhookID    string `json:"webhook_id"`
	ActivationID string `json:"activation_id"`
	AppID        string `json:"app_id"`
	// UserID owns the activation: the unit of the workers' fair share.
	UserID    string          `json:"user_id,omitempty"`
	URL       string          `json:"url"`
	EventType string          `json:"event_type"`
	Payload   json.RawMessage `json:"payload"`
}

// Kind is the job's name in the queue.
func (DeliveryArgs) Kind() string { return "webhook_delivery" }

// EnqueueTx schedules the delivery of ev to url, signed with the app's
// secret, in the caller's transaction: it is sent only if that commits.
//
// A delivery that cannot be made (a URL that is not http(s) or names a
// private address, an activation without an app to sign with) is recorded
// as given up rather than returned as an error: it must not undo the
// activation's result.
func (s *Service) EnqueueTx(ctx context.Context, tx *store.Store, appID, url string, ev events.Event) error {
	if tx == nil {
		tx = s.store
	}
	args := DeliveryArgs{WebhookID: "msg_" + uuid.Must(uuid.NewV7()).String(), ActivationID: ev.ActivationID,
		AppID: appID, UserID: ev.UserID, URL: url, EventType: ev.Type}
	refuse := ""
	if err := s.CheckURL("webhook_url", url); err != nil {
		refuse = "not sent: " + strings.TrimPrefix(publicDetail(err), "Invalid value for field ")
	} else if appID == "" {
		refuse = "not sent: webhooks are signed with an app's secret and this activation has no app"
	}
	if refuse != "" {
		return tx.WebhookDeliveryCreate(ctx, &store.WebhookDelivery{ID: uuid.Must(uuid.NewV7()).String(),
			ActivationID: ev.ActivationID, AppID: appID, WebhookID: args.WebhookID, EventType: ev.Type, URL: egress.Redact(url),
			Attempt: 1, Error: refuse, State: store.DeliveryGaveUp, CreatedAt: s.now()})
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	args.Payload = payload
	opts := &river.InsertOpts{Queue: Queue, MaxAttempts: len(s.opts.RetryDelays) + 1}
	if _, err = s.queue.InsertTx(ctx, tx, args, opts); err != nil {
		return fmt.Errorf("webhook: enqueue: %w", err)
	}
	return nil
}

// Deliveries lists the delivery attempts of an activation the caller owns.
func (s *Service) Deliveries(ctx context.Context, c *auth.Caller, activationID string, limit, offset int) ([]store.WebhookDelivery, int, error) {
	notFound := apperr.NotFoundf("Activation not found")
	if uuid.Validate(activationID) != nil {
		return nil, 0, notFound
	}
	act, err := s.store.ActivationGet(ctx, activationID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, notFound
	}
	if err != nil {
		return nil, 0, err
	}
	if err := s.auth.Reach(ctx, c, auth.Resource{Type: "activation", ID: activationID, OwnerID: act.UserID, AppID: act.AppID}, "list_webhook_deliveries", notFound); err != nil {
		return nil, 0, err
	}
	return s.store.WebhookDeliveryList(ctx, activationID, limit, offset)
}

type deliveryWorker struct {
	river.WorkerDefaults[DeliveryArgs]
	svc *Service
}

// NextRetry spaces the attempts by the configured delays.
func (w *deliveryWorker) NextRetry(job *river.Job[DeliveryArgs]) time.Time {
	return time.Now().Add(w.svc.retryDelay(job.Attempt))
}

// retryDelay is the wait after the attempt-th attempt failed.
func (s *Service) retryDelay(attempt int) time.Duration {
	delays := s.opts.RetryDelays
	return delays[min(max(attempt-1, 0), len(delays)-1)]
}

// Timeout bounds the job a little above one attempt, which the client's
// own timeout bounds, so that the attempt is always recorded.
func (w *deliveryWorker) Timeout(*river.Job[DeliveryArgs]) time.Duration {
	return w.svc.opts.Timeout + 10*time.Second
}

// Work makes one attempt and records it; an error makes River retry. A
// delivery whose user, or whose destination, already holds its share of
// the workers waits (a snooze, which River does not count as an attempt)
// and leaves the worker to others. The destination is the URL's host and
// port: four accounts' slow receivers on one host hold PerHost workers,
// not all of them. (Accounts and host names are cheap, so what bounds the
// rest is the attempt's timeout: no worker is held longer than that.)
func (w *deliveryWorker) Work(ctx context.Context, job *river.Job[DeliveryArgs]) error {
	owner := cmp.Or(job.Args.UserID, job.Args.AppID)
	if !w.svc.users.TryAcquire(owner) {
		return river.JobSnooze(queue.SnoozeFor(job.JobRow))
	}
	defer w.svc.users.Release(owner)
	host := destination(job.Args.URL)
	if !w.svc.hosts.TryAcquire(host) {
		return river.JobSnooze(queue.SnoozeFor(job.JobRow))
	}
	defer w.svc.hosts.Release(host)
	return w.svc.deliver(ctx, job.Args, job.Attempt, job.Attempt >= job.MaxAttempts)
}

// destination is the host and port a delivery goes to (the URL itself if
// it does not parse: it will fail on its own).
func destination(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return strings.ToLower(u.Host)
}

const maxResponseRead = 64 << 10

func (s *Service) deliver(ctx context.Context, a DeliveryArgs, attempt int, last bool) error {
	ts := s.now()
	secrets, err := s.signingSecrets(ctx, a.AppID, ts)
	if errors.Is(err, store.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("webhook: app %s is gone", a.AppID))
	}
	if err != nil {
		return err
	}
	target := egress.Redact(a.URL)
	rec := &store.WebhookDelivery{ID: uuid.Must(uuid.NewV7()).String(), ActivationID: a.ActivationID, AppID: a.AppID,
		WebhookID: a.WebhookID, EventType: a.EventType, URL: target, Attempt: attempt, CreatedAt: ts}

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL, bytes.NewReader(a.Payload))
	if err != nil {
		return river.JobCancel(fmt.Errorf("webhook %s to %s: unusable URL", a.WebhookID, target))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "AgentPlatform-Webhooks/1")
	if err := SignHeaders(req.Header, a.WebhookID, ts, a.Payload, secrets...); err != nil {
		return river.JobCancel(err)
	}
	start := time.Now()
	res, sendErr := s.client.Do(req)
	var refused *egress.Refused
	switch {
	case sendErr == nil:
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxResponseRead))
		res.Body.Close()
		rec.StatusCode = res.StatusCode
		switch {
		case res.StatusCode >= 300 && res.StatusCode <= 399:
			rec.Error = fmt.Sprintf("receiver answered %d: redirects are not followed", res.StatusCode)
		case res.StatusCode < 200 || res.StatusCode > 299:
			rec.Error = fmt.Sprintf("receiver answered %d", res.StatusCode)
		}
	case errors.As(sendErr, &refused):
		rec.Error, last = refused.Error(), true // the same address would be refused again
	case egress.Describe(sendErr) == "timed out":
		rec.Error = fmt.Sprintf("no answer within %s", s.opts.Timeout)
	default:
		rec.Error = egress.Describe(sendErr)
	}
	rec.DurationMS = int(time.Since(start).Milliseconds())
	switch {
	case rec.Error == "":
		rec.State = store.DeliveryDelivered
	case last:
		rec.State = store.DeliveryGaveUp
	default:
		rec.State = store.DeliveryRetrying
		next := s.now().Add(s.retryDelay(attempt))
		rec.NextAttempt = &next
	}
	// Recorded even when the job is cancelled midway: the attempt happened.
	if err := s.store.WebhookDeliveryCreate(context.WithoutCancel(ctx), rec); err != nil {
		s.log.WarnContext(ctx, "webhook: record delivery", "activation_id", a.ActivationID, "err", err)
	}
	s.opts.Metrics.WebhookAttempt(rec.State == store.DeliveryDelivered, rec.State == store.DeliveryGaveUp)
	if rec.Error == "" {
		return nil
	}
	// The URL without its query or userinfo, and the short reason, not the
	// raw error: River logs this and keeps it with the job.
	err = fmt.Errorf("webhook %s to %s, attempt %d: %s", a.WebhookID, target, attempt, rec.Error)
	if refused != nil {
		return river.JobCancel(err)
	}
	return err
}

// publicDetail is the detail text of an apperr, or the error's text.
func publicDetail(err error) string {
	if e, ok := apperr.As(err); ok {
		return e.Detail
	}
	return err.Error()
}
