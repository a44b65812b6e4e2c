-- The usage ledger and budgets (DESIGN §4 "Usage, cost and budgets").
--
-- usage_records has a row per LLM call, written in the transaction that
-- records the call's answer (its journal step, or the run's end), so the
-- ledger holds what was answered: no row lost, none twice (a step's row is
-- unique by activation and step). The ids of the app, agent, activation
-- and key are kept without foreign keys: what was spent stays spent when
-- they are deleted. cost_micro_usd is NULL for a model without a price.
--
-- usage_daily sums the same rows by UTC day, so reports over months read
-- a row per day and kind, not a row per call. It is written with each
-- record; shard spreads one busy account's writes over several rows,
-- which PostgreSQL would otherwise lock one after the other.
--
-- activations.api_key_id is the key that created the activation (usage by
-- key; budgets of a key); a child activation (an agent tool) carries its
-- parent's. NULL: made with a session.

-- +goose Up
ALTER TABLE activations ADD COLUMN api_key_id INTEGER;

CREATE TABLE usage_records (
    id                 TEXT PRIMARY KEY,
    user_id            TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    app_id             TEXT,
    agent_id           TEXT,
    activation_id      TEXT,
    step_index         INTEGER,
    api_key_id         INTEGER,
    provider           TEXT NOT NULL,
    model              TEXT NOT NULL,
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_micro_usd     INTEGER,
    created_at         TIMESTAMP NOT NULL
);
CREATE INDEX usage_records_user_time ON usage_records(user_id, created_at);
CREATE UNIQUE INDEX usage_records_step ON usage_records(activation_id, step_index) WHERE step_index IS NOT NULL;

CREATE TABLE usage_daily (
    user_id            TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    day                TEXT NOT NULL,
    app_id             TEXT NOT NULL DEFAULT '',
    agent_id           TEXT NOT NULL DEFAULT '',
    api_key_id         INTEGER NOT NULL DEFAULT 0,
    provider           TEXT NOT NULL,
    model              TEXT NOT NULL,
    shard              INTEGER NOT NULL DEFAULT 0,
    calls              INTEGER NOT NULL DEFAULT 0,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_micro_usd     INTEGER NOT NULL DEFAULT 0,
    unpriced_calls     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, day, app_id, agent_id, api_key_id, provider, model, shard)
);

CREATE TABLE budgets (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    scope           TEXT NOT NULL,
    scope_id        TEXT NOT NULL,
    period          TEXT NOT NULL,
    limit_micro_usd INTEGER NOT NULL,
    warned_for      TEXT NOT NULL DEFAULT '',
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
CREATE INDEX budgets_user ON budgets(user_id);

-- +goose Down
DROP TABLE budgets;
DROP TABLE usage_daily;
DROP TABLE usage_records;
ALTER TABLE activations DROP COLUMN api_key_id;
