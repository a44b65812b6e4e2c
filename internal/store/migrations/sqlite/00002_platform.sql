-- The platform's core: apps with their manifest parts, agents, LLM
-- providers and activations. JSON columns are TEXT here, JSONB on PostgreSQL.

-- +goose Up
ALTER TABLE apps ADD COLUMN manifest TEXT NOT NULL DEFAULT '{}';
ALTER TABLE apps ADD COLUMN marketplace_status TEXT NOT NULL DEFAULT 'private';
ALTER TABLE apps ADD COLUMN entry_point_url TEXT NOT NULL DEFAULT '';
ALTER TABLE apps ADD COLUMN webhook_secret_enc TEXT NOT NULL DEFAULT '';
ALTER TABLE apps ADD COLUMN installed_from TEXT;
CREATE INDEX apps_user_created ON apps(user_id, created_at);
CREATE INDEX apps_marketplace ON apps(marketplace_status, created_at);

-- System agents have no app and no user.
CREATE TABLE agents (
    id              TEXT PRIMARY KEY,
    app_id          TEXT REFERENCES apps(id) ON DELETE CASCADE,
    user_id         TEXT REFERENCES users(id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    agent_type_id   TEXT NOT NULL,
    version         TEXT NOT NULL DEFAULT '1.0.0',
    status          TEXT NOT NULL DEFAULT 'active',
    is_system       BOOLEAN NOT NULL DEFAULT FALSE,
    capabilities    TEXT NOT NULL DEFAULT '[]',
    timeout_seconds INTEGER NOT NULL DEFAULT 300,
    config          TEXT NOT NULL DEFAULT '{}',
    secret_enc      TEXT NOT NULL DEFAULT '',
    webhook_url     TEXT NOT NULL DEFAULT '',
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX agents_app_name ON agents(app_id, name);
CREATE INDEX agents_user ON agents(user_id, created_at);

CREATE TABLE app_models (
    id         TEXT PRIMARY KEY,
    app_id     TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    slug       TEXT NOT NULL,
    name       TEXT NOT NULL,
    fields     TEXT NOT NULL DEFAULT '[]',
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    UNIQUE (app_id, slug)
);

CREATE TABLE functions (
    id              TEXT PRIMARY KEY,
    app_id          TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    code            TEXT NOT NULL DEFAULT '',
    input_schema    TEXT NOT NULL DEFAULT '{}',
    timeout_seconds INTEGER NOT NULL DEFAULT 30,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL,
    UNIQUE (app_id, name)
);

CREATE TABLE pipelines (
    id          TEXT PRIMARY KEY,
    app_id      TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    steps       TEXT NOT NULL DEFAULT '[]',
    created_at  TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL,
    UNIQUE (app_id, name)
);

-- OAuth authenticator definitions; secrets arrive later, encrypted.
CREATE TABLE authenticators (
    id                 TEXT PRIMARY KEY,
    app_id             TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    name               TEXT NOT NULL,
    authenticator_type TEXT NOT NULL,
    client_id          TEXT NOT NULL DEFAULT '',
    client_secret_enc  TEXT NOT NULL DEFAULT '',
    scopes             TEXT NOT NULL DEFAULT '[]',
    authorize_url      TEXT NOT NULL DEFAULT '',
    token_url          TEXT NOT NULL DEFAULT '',
    refresh_url        TEXT NOT NULL DEFAULT '',
    revoke_url         TEXT NOT NULL DEFAULT '',
    redirect_uri       TEXT NOT NULL DEFAULT '',
    configuration      TEXT NOT NULL DEFAULT '{}',
    is_active          BOOLEAN NOT NULL DEFAULT TRUE,
    created_at         TIMESTAMP NOT NULL,
    updated_at         TIMESTAMP NOT NULL,
    UNIQUE (app_id, name)
);

-- User-defined LLM providers; the system ones (echo, openai, anthropic)
-- come from the configuration and are not rows.
CREATE TABLE llm_providers (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    provider_type TEXT NOT NULL,
    base_url      TEXT NOT NULL DEFAULT '',
    api_key_enc   TEXT NOT NULL DEFAULT '',
    models        TEXT NOT NULL DEFAULT '[]',
    default_model TEXT NOT NULL DEFAULT '',
    is_default    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    UNIQUE (user_id, name)
);

CREATE TABLE activations (
    id               TEXT PRIMARY KEY,
    user_id          TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    app_id           TEXT REFERENCES apps(id) ON DELETE CASCADE,
    agent_id         TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    status           TEXT NOT NULL,
    input_data       TEXT NOT NULL,
    context          TEXT NOT NULL DEFAULT '{}',
    metadata         TEXT NOT NULL DEFAULT '{}',
    priority         INTEGER NOT NULL DEFAULT 2,
    chat_id          TEXT,
    output_data      TEXT,
    error            TEXT,
    created_at       TIMESTAMP NOT NULL,
    started_at       TIMESTAMP,
    completed_at     TIMESTAMP,
    duration_ms      INTEGER,
    attempt          INTEGER NOT NULL DEFAULT 0,
    worker_id        TEXT,
    idempotency_key  TEXT,
    request_hash     TEXT,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX activations_user ON activations(user_id, created_at);
CREATE INDEX activations_agent ON activations(agent_id, created_at);
CREATE INDEX activations_app ON activations(app_id, created_at);
CREATE INDEX activations_chat ON activations(agent_id, chat_id, created_at);
CREATE INDEX activations_running ON activations(status, worker_id);
CREATE UNIQUE INDEX activations_idempotency ON activations(user_id, idempotency_key);

-- +goose Down
DROP TABLE activations;
DROP TABLE llm_providers;
DROP TABLE authenticators;
DROP TABLE pipelines;
DROP TABLE functions;
DROP TABLE app_models;
DROP TABLE agents;
DROP INDEX apps_marketplace;
DROP INDEX apps_user_created;
ALTER TABLE apps DROP COLUMN installed_from;
ALTER TABLE apps DROP COLUMN webhook_secret_enc;
ALTER TABLE apps DROP COLUMN entry_point_url;
ALTER TABLE apps DROP COLUMN marketplace_status;
ALTER TABLE apps DROP COLUMN manifest;
