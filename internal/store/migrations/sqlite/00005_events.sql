-- Events for WebSocket replay and webhook delivery attempts. JSON columns
-- are TEXT here, JSONB on PostgreSQL.

-- +goose Up
-- One row per user holds the last seq handed out. Append bumps it inside the
-- caller's transaction, so the row lock orders a user's events by commit:
-- a seq never becomes visible before a lower one of the same user.
CREATE TABLE event_counters (
    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL
);

CREATE TABLE events (
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    type          TEXT NOT NULL,
    activation_id TEXT,
    -- From the event's context, which the caller may have written: text.
    app_id        TEXT,
    chat_id       TEXT,
    payload       TEXT NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (user_id, seq)
);
CREATE INDEX events_created ON events(created_at);

-- Every attempt to deliver an activation's event to its webhook URL.
CREATE TABLE webhook_deliveries (
    id            TEXT PRIMARY KEY,
    activation_id TEXT NOT NULL,
    app_id        TEXT,
    webhook_id    TEXT NOT NULL,
    event_type    TEXT NOT NULL,
    url           TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    status_code   INTEGER NOT NULL DEFAULT 0,
    error         TEXT NOT NULL DEFAULT '',
    duration_ms   INTEGER NOT NULL DEFAULT 0,
    created_at    TIMESTAMP NOT NULL
);
CREATE INDEX webhook_deliveries_activation ON webhook_deliveries(activation_id, created_at);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE events;
DROP TABLE event_counters;
