-- OAuth connections: a user's tokens for one authenticator of an app, sealed
-- with the secret box, and their health. The refresher picks rows by
-- next_refresh_at (NULL: nothing to refresh: no refresh token, or
-- disconnected). lease_owner and lease_until are the single-flight refresh
-- lease (store.TakeLease): provider calls happen outside any transaction,
-- and the lease keeps a second node from refreshing the same tokens
-- meanwhile. version counts token writes and refresh outcomes, so a waiter
-- knows the refresh it waited for has ended.
--
-- oauth_states are issued authorization flows: a random single-use state
-- (its SHA-256 only), bound to the user, app and authenticator, with the
-- sealed PKCE verifier and where to send the browser back.

-- +goose Up
CREATE TABLE connections (
    id                TEXT PRIMARY KEY,
    user_id           TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    app_id            TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    authenticator_id  TEXT NOT NULL REFERENCES authenticators(id) ON DELETE CASCADE,
    status            TEXT NOT NULL,
    access_token_enc  TEXT NOT NULL DEFAULT '',
    refresh_token_enc TEXT NOT NULL DEFAULT '',
    token_type        TEXT NOT NULL DEFAULT 'Bearer',
    scopes            TEXT NOT NULL DEFAULT '[]',
    expires_at        TIMESTAMP,
    issued_at         TIMESTAMP,
    connected_at      TIMESTAMP NOT NULL,
    last_used         TIMESTAMP,
    last_refreshed    TIMESTAMP,
    next_refresh_at   TIMESTAMP,
    refresh_failures  INTEGER NOT NULL DEFAULT 0,
    last_error        TEXT NOT NULL DEFAULT '',
    lease_owner       TEXT NOT NULL DEFAULT '',
    lease_until       TIMESTAMP,
    version           INTEGER NOT NULL DEFAULT 0,
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    UNIQUE (user_id, app_id, authenticator_id)
);
CREATE INDEX connections_due ON connections(next_refresh_at) WHERE next_refresh_at IS NOT NULL;
CREATE INDEX connections_app_user ON connections(app_id, user_id);
CREATE INDEX connections_authenticator ON connections(authenticator_id);

CREATE TABLE oauth_states (
    state_hash       BLOB PRIMARY KEY,
    user_id          TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    app_id           TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    authenticator_id TEXT NOT NULL REFERENCES authenticators(id) ON DELETE CASCADE,
    verifier_enc     TEXT NOT NULL DEFAULT '',
    return_to        TEXT NOT NULL DEFAULT '',
    expires_at       TIMESTAMP NOT NULL,
    created_at       TIMESTAMP NOT NULL
);
CREATE INDEX oauth_states_expires ON oauth_states(expires_at);

-- +goose Down
DROP TABLE oauth_states;
DROP TABLE connections;
