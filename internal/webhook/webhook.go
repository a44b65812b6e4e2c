// Package webhook owns outgoing webhooks: each app's signing secret
// (whsec_…, sealed at rest), Standard Webhooks signatures, and delivery of
// an activation's final event to its webhook URL as a River job that
// retries with growing delays and records every attempt.
package webhook

import (
	"bytes"
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
	"github.com/agentplatform/agentplatform/internal/events"
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

// Options tune delivery; zero values take the defaults.
type Options struct {
	// Client sends the requests (default: a client with Timeout).
	Client *http.Client
	// Timeout bounds one attempt. Default 15 s.
	Timeout time.Duration
	// RetryDelays are the waits before the 2nd, 3rd… attempt; their number
	// plus one is the number of attempts.
	RetryDelays []time.Duration
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
}

// New returns the service and registers its delivery worker on q.
func New(s *store.Store, box *secret.Box, a *auth.Service, q *queue.Queue, log *slog.Logger, opts Options) *Service {
	if opts.Timeout <= 0 {
		opts.Timeout = 15 * time.Second
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: opts.Timeout}
	}
	if len(opts.RetryDelays) == 0 {
		opts.RetryDelays = DefaultRetryDelays
	}
	svc := &Service{store: s, box: box, auth: a, queue: q, log: log, opts: opts, now: store.Now}
	queue.AddWorker(q, &deliveryWorker{svc: svc})
	return svc
}

// ValidateURL accepts an absolute http or https URL with a host.
func ValidateURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http or https URL")
	}
	return nil
}

// NewSecret makes a secret: whsec_ and 32 random bytes in base64.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
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
	return s.auth.Reach(ctx, c, auth.Resource{Type: "app", ID: app.ID, OwnerID: app.UserID}, action, errAppNotFound)
}

// Secret returns the app's webhook secret, making one on first need.
func (s *Service) Secret(ctx context.Context, c *auth.Caller, appID string) (string, error) {
	if err := s.ownApp(ctx, c, appID, "read_webhook_secret"); err != nil {
		return "", err
	}
	return s.secret(ctx, appID)
}

// RotateSecret replaces the app's webhook secret and returns the new one.
// Deliveries signed from now on use it, retries of earlier ones included.
func (s *Service) RotateSecret(ctx context.Context, c *auth.Caller, appID string) (string, error) {
	if err := s.ownApp(ctx, c, appID, "rotate_webhook_secret"); err != nil {
		return "", err
	}
	plain := NewSecret()
	enc, err := s.box.Seal(plain)
	if err != nil {
		return "", err
	}
	if err := s.store.AppWebhookSecretSet(ctx, appID, enc); err != nil {
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

// DeliveryArgs is the webhook_delivery job: one event for one URL.
type DeliveryArgs struct {
	WebhookID    string          `json:"webhook_id"`
	ActivationID string          `json:"activation_id"`
	AppID        string          `json:"app_id"`
	URL          string          `json:"url"`
	EventType    string          `json:"event_type"`
	Payload      json.RawMessage `json:"payload"`
}

// Kind is the job's name in the queue.
func (DeliveryArgs) Kind() string { return "webhook_delivery" }

// EnqueueTx schedules the delivery of ev to url, signed with the app's
// secret, in the caller's transaction: it is sent only if that commits.
//
// A delivery that cannot be made (a URL that is not http(s), an activation
// without an app to sign with) is recorded as a failed attempt rather than
// returned as an error: it must not undo the activation's result.
func (s *Service) EnqueueTx(ctx context.Context, tx *store.Store, appID, url string, ev events.Event) error {
	if tx == nil {
		tx = s.store
	}
	args := DeliveryArgs{WebhookID: "msg_" + uuid.Must(uuid.NewV7()).String(), ActivationID: ev.ActivationID,
		AppID: appID, URL: url, EventType: ev.Type}
	refuse := ""
	if err := ValidateURL(url); err != nil {
		refuse = "invalid webhook URL: " + err.Error()
	} else if appID == "" {
		refuse = "not sent: webhooks are signed with an app's secret and this activation has no app"
	}
	if refuse != "" {
		return tx.WebhookDeliveryCreate(ctx, &store.WebhookDelivery{ID: uuid.Must(uuid.NewV7()).String(),
			ActivationID: ev.ActivationID, AppID: appID, WebhookID: args.WebhookID, EventType: ev.Type, URL: url,
			Attempt: 1, Error: refuse, CreatedAt: s.now()})
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	args.Payload = payload
	opts := &river.InsertOpts{MaxAttempts: len(s.opts.RetryDelays) + 1}
	if tx.Tx() == nil {
		_, err = s.queue.Client().Insert(ctx, args, opts)
	} else {
		_, err = s.queue.Client().InsertTx(tx.TxContext(ctx), tx.Tx(), args, opts)
	}
	if err != nil {
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
	if err := s.auth.Reach(ctx, c, auth.Resource{Type: "activation", ID: activationID, OwnerID: act.UserID}, "list_webhook_deliveries", notFound); err != nil {
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
	delays := w.svc.opts.RetryDelays
	i := min(max(job.Attempt-1, 0), len(delays)-1)
	return time.Now().Add(delays[i])
}

// Work makes one attempt and records it; an error makes River retry.
func (w *deliveryWorker) Work(ctx context.Context, job *river.Job[DeliveryArgs]) error {
	return w.svc.deliver(ctx, job.Args, job.Attempt)
}

const maxResponseRead = 64 << 10

func (s *Service) deliver(ctx context.Context, a DeliveryArgs, attempt int) error {
	secret, err := s.secret(ctx, a.AppID)
	if errors.Is(err, store.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("webhook: app %s is gone", a.AppID))
	}
	if err != nil {
		return err
	}
	ts := s.now()
	sig, err := Sign(secret, a.WebhookID, ts, a.Payload)
	if err != nil {
		return river.JobCancel(err)
	}
	rec := &store.WebhookDelivery{ID: uuid.Must(uuid.NewV7()).String(), ActivationID: a.ActivationID, AppID: a.AppID,
		WebhookID: a.WebhookID, EventType: a.EventType, URL: a.URL, Attempt: attempt, CreatedAt: ts}

	actx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, a.URL, bytes.NewReader(a.Payload))
	if err != nil {
		return river.JobCancel(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "AgentPlatform-Webhooks/1")
	req.Header.Set(HeaderID, a.WebhookID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(HeaderSignature, sig)
	start := time.Now()
	res, sendErr := s.opts.Client.Do(req)
	if sendErr == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxResponseRead))
		res.Body.Close()
		rec.StatusCode = res.StatusCode
		if res.StatusCode < 200 || res.StatusCode > 299 {
			sendErr = fmt.Errorf("receiver answered %d", res.StatusCode)
		}
	}
	rec.DurationMS = int(time.Since(start).Milliseconds())
	if sendErr != nil {
		rec.Error = sendErr.Error()
	}
	// Recorded even when the job is cancelled midway: the attempt happened.
	if err := s.store.WebhookDeliveryCreate(context.WithoutCancel(ctx), rec); err != nil {
		s.log.WarnContext(ctx, "webhook: record delivery", "activation_id", a.ActivationID, "err", err)
	}
	s.opts.Metrics.WebhookAttempt(sendErr == nil, attempt > len(s.opts.RetryDelays))
	if sendErr != nil {
		return fmt.Errorf("webhook %s to %s, attempt %d: %w", a.WebhookID, a.URL, attempt, sendErr)
	}
	return nil
}
