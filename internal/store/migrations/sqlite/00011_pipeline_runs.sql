-- Pipeline runs: the run's steps (their definition as it was when the run
-- started, and each step's state) are JSON in the run's row; a step waiting
-- on an activation has a row in pipeline_waits, which the activation's end
-- (in its own transaction) takes to move the run on.

-- +goose Up
CREATE TABLE pipeline_runs (
    id          TEXT PRIMARY KEY,
    pipeline_id TEXT NOT NULL REFERENCES pipelines(id) ON DELETE CASCADE,
    app_id      TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    status      TEXT NOT NULL,
    input       TEXT NOT NULL,
    definition  TEXT NOT NULL,
    steps       TEXT NOT NULL,
    current     INTEGER NOT NULL DEFAULT 0,
    output      TEXT,
    error       TEXT,
    created_at  TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);
CREATE INDEX pipeline_runs_pipeline ON pipeline_runs(pipeline_id, created_at);

CREATE TABLE pipeline_waits (
    activation_id TEXT PRIMARY KEY,
    run_id        TEXT NOT NULL REFERENCES pipeline_runs(id) ON DELETE CASCADE,
    step          INTEGER NOT NULL
);

-- +goose Down
DROP TABLE pipeline_waits;
DROP TABLE pipeline_runs;
