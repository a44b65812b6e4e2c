-- Agent keys (agk_…): each run of a custom agent gets one, bound to its
-- user, app and activation, and valid while the activation runs. Only the
-- key's SHA-256 is kept, and the row is deleted when the activation ends
-- (in the transaction that records the end), so an ended run's key opens
-- nothing. One key per activation: a run that starts again (a requeued
-- activation) replaces it.

-- +goose Up
CREATE TABLE agent_keys (
    activation_id TEXT PRIMARY KEY REFERENCES activations(id) ON DELETE CASCADE,
    key_hash      BLOB NOT NULL UNIQUE,
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    app_id        TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    created_at    TIMESTAMP NOT NULL
);
CREATE INDEX agent_keys_user ON agent_keys(user_id);

-- +goose Down
DROP TABLE agent_keys;
