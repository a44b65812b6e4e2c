-- What custom code keeps: each app's key-value storage (ctx.storage), and
-- the logs of a run (an activation of a custom agent, a function's
-- execution), written with the run's end and only when it logged.

-- +goose Up
CREATE TABLE app_storage (
    app_id     UUID NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    user_id    UUID NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    value      JSONB NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (app_id, key)
);

CREATE TABLE run_logs (
    run_id     UUID PRIMARY KEY,
    user_id    UUID NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    app_id     UUID NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    logs       JSONB NOT NULL,
    truncated  BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX run_logs_app ON run_logs(app_id);

-- +goose Down
DROP TABLE run_logs;
DROP TABLE app_storage;
