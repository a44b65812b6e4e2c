-- Webhook delivery records carry their state, and an app keeps its previous
-- webhook secret for a day after a rotation (deliveries are signed with
-- both meanwhile, so receivers can switch over without losing any).

-- +goose Up
-- delivered, retrying (with next_attempt_at) or gave_up.
ALTER TABLE webhook_deliveries ADD COLUMN state TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_deliveries ADD COLUMN next_attempt_at TIMESTAMPTZ;
-- Earlier records: a failure followed by another attempt was retried.
UPDATE webhook_deliveries SET state = CASE
    WHEN error = '' THEN 'delivered'
    WHEN EXISTS (SELECT 1 FROM webhook_deliveries later
                 WHERE later.webhook_id = webhook_deliveries.webhook_id AND later.attempt > webhook_deliveries.attempt)
        THEN 'retrying'
    ELSE 'gave_up' END;

ALTER TABLE apps ADD COLUMN webhook_secret_prev_enc TEXT NOT NULL DEFAULT '';
ALTER TABLE apps ADD COLUMN webhook_secret_rotated_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE apps DROP COLUMN webhook_secret_rotated_at;
ALTER TABLE apps DROP COLUMN webhook_secret_prev_enc;
ALTER TABLE webhook_deliveries DROP COLUMN next_attempt_at;
ALTER TABLE webhook_deliveries DROP COLUMN state;
