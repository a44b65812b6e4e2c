-- A function's executions: one row written when the run ends (its logs go
-- to run_logs), listed newest first per app and per function.

-- +goose Up
CREATE TABLE function_executions (
    id           UUID PRIMARY KEY,
    function_id  UUID NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
    app_id       UUID NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    user_id      UUID NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    status       TEXT NOT NULL,
    input        JSONB NOT NULL,
    output       JSONB,
    error        TEXT,
    duration_ms  BIGINT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    completed_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX function_executions_app ON function_executions(app_id, created_at);
CREATE INDEX function_executions_function ON function_executions(function_id, created_at);

-- +goose Down
DROP TABLE function_executions;
