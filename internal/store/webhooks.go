package store

import (
	"context"
	"database/sql"
	"time"
)

// AppWebhookSecret returns the app's sealed webhook secret ("" when none
// has been made yet); ErrNotFound when the app does not exist.
func (s *Store) AppWebhookSecret(ctx context.Context, appID string) (string, error) {
	var enc string
	err := s.reader().QueryRowContext(ctx, `SELECT webhook_secret_enc FROM apps WHERE id = $1`, appID).Scan(&enc)
	return enc, mapErr(err)
}

// AppWebhookSecretInit stores enc only if the app has no secret yet, so
// that two first uses at once agree on one secret (the loser re-reads).
func (s *Store) AppWebhookSecretInit(ctx context.Context, appID, enc string) error {
	_, err := s.writer().ExecContext(ctx, `UPDATE apps SET webhook_secret_enc = $2
		WHERE id = $1 AND webhook_secret_enc = ''`, appID, enc)
	return err
}

// AppWebhookSecretRotate replaces the app's sealed webhook secret, keeping
// the one it replaces as the previous secret, rotated at.
func (s *Store) AppWebhookSecretRotate(ctx context.Context, appID, enc string, at time.Time) error {
	return expectOne(s.writer().ExecContext(ctx, `UPDATE apps SET webhook_secret_prev_enc = webhook_secret_enc,
		webhook_secret_rotated_at = $3, webhook_secret_enc = $2 WHERE id = $1`, appID, enc, s.ts(at)))
}

// WebhookSecrets are an app's sealed webhook secrets: the current one ("" when
// none has been made yet) and the one it replaced, if any, with the time of
// that rotation.
type WebhookSecrets struct {
	Current   string
	Previous  string
	RotatedAt *time.Time
}

// AppWebhookSecrets returns the app's sealed webhook secrets; ErrNotFound
// when the app does not exist.
func (s *Store) AppWebhookSecrets(ctx context.Context, appID string) (*WebhookSecrets, error) {
	var w WebhookSecrets
	var rotated sql.NullTime
	err := s.reader().QueryRowContext(ctx, `SELECT webhook_secret_enc, webhook_secret_prev_enc, webhook_secret_rotated_at
		FROM apps WHERE id = $1`, appID).Scan(&w.Current, &w.Previous, &rotated)
	if err != nil {
		return nil, mapErr(err)
	}
	w.RotatedAt = nullTime(rotated)
	return &w, nil
}

// The states of a delivery attempt.
const (
	DeliveryDelivered = "delivered" // the receiver answered 2xx
	DeliveryRetrying  = "retrying"  // failed; another attempt at NextAttemptAt
	DeliveryGaveUp    = "gave_up"   // failed, and no attempt follows
)

// WebhookDelivery is one attempt to POST an activation's event to its
// webhook URL. StatusCode is 0 when no answer came (Error says why).
type WebhookDelivery struct {
	ID           string
	ActivationID string
	AppID        string
	WebhookID    string // the webhook-id header, the same on every attempt
	EventType    string
	URL          string
	Attempt      int
	StatusCode   int
	Error        string
	DurationMS   int
	State        string     // one of the Delivery* states
	NextAttempt  *time.Time // when retrying: the earliest time of the next attempt
	CreatedAt    time.Time
}

// WebhookDeliveryCreate records an attempt.
func (s *Store) WebhookDeliveryCreate(ctx context.Context, d *WebhookDelivery) error {
	_, err := s.writer().ExecContext(ctx, `
		INSERT INTO webhook_deliveries (id, activation_id, app_id, webhook_id, event_type, url, attempt, status_code, error, duration_ms,
			state, next_attempt_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		d.ID, d.ActivationID, nullable(d.AppID), d.WebhookID, d.EventType, d.URL, d.Attempt, d.StatusCode, d.Error, d.DurationMS,
		d.State, s.tsPtr(d.NextAttempt), s.ts(d.CreatedAt))
	return mapErr(err)
}

// WebhookDeliveryList returns a page of an activation's delivery attempts,
// oldest first, and their total.
func (s *Store) WebhookDeliveryList(ctx context.Context, activationID string, limit, offset int) ([]WebhookDelivery, int, error) {
	total, err := s.count(ctx, `SELECT COUNT(*) FROM webhook_deliveries WHERE activation_id = $1`, activationID)
	if err != nil {
		return nil, 0, err
	}
	out, err := queryAll(ctx, s.reader(), scanDelivery, `
		SELECT id, activation_id, app_id, webhook_id, event_type, url, attempt, status_code, error, duration_ms,
			state, next_attempt_at, created_at
		FROM webhook_deliveries WHERE activation_id = $1 ORDER BY created_at, attempt LIMIT $2 OFFSET $3`, activationID, limit, offset)
	return out, total, err
}

func scanDelivery(row interface{ Scan(...any) error }, d *WebhookDelivery) error {
	var appID sql.NullString
	var next sql.NullTime
	err := row.Scan(&d.ID, &d.ActivationID, &appID, &d.WebhookID, &d.EventType, &d.URL, &d.Attempt,
		&d.StatusCode, &d.Error, &d.DurationMS, &d.State, &next, &d.CreatedAt)
	d.AppID, d.NextAttempt = appID.String, nullTime(next)
	return err
}
