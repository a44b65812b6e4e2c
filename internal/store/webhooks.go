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

// AppWebhookSecretSet replaces the app's sealed webhook secret.
func (s *Store) AppWebhookSecretSet(ctx context.Context, appID, enc string) error {
	return expectOne(s.writer().ExecContext(ctx, `UPDATE apps SET webhook_secret_enc = $2 WHERE id = $1`, appID, enc))
}

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
	CreatedAt    time.Time
}

// WebhookDeliveryCreate records an attempt.
func (s *Store) WebhookDeliveryCreate(ctx context.Context, d *WebhookDelivery) error {
	_, err := s.writer().ExecContext(ctx, `
		INSERT INTO webhook_deliveries (id, activation_id, app_id, webhook_id, event_type, url, attempt, status_code, error, duration_ms, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		d.ID, d.ActivationID, nullable(d.AppID), d.WebhookID, d.EventType, d.URL, d.Attempt, d.StatusCode, d.Error, d.DurationMS, s.ts(d.CreatedAt))
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
		SELECT id, activation_id, app_id, webhook_id, event_type, url, attempt, status_code, error, duration_ms, created_at
		FROM webhook_deliveries WHERE activation_id = $1 ORDER BY created_at, attempt LIMIT $2 OFFSET $3`, activationID, limit, offset)
	return out, total, err
}

func scanDelivery(row interface{ Scan(...any) error }, d *WebhookDelivery) error {
	var appID sql.NullString
	err := row.Scan(&d.ID, &d.ActivationID, &appID, &d.WebhookID, &d.EventType, &d.URL, &d.Attempt,
		&d.StatusCode, &d.Error, &d.DurationMS, &d.CreatedAt)
	d.AppID = appID.String
	return err
}
