-- Pipeline runs: the run's steps (their definition as it was when the run
-- started, and each step's state) are JSON in the run's row; a step waiting
-- on an activation has a row in pipeline_waits, which the activation's end
-- (in its own transaction) takes to move the run on.

-- +goose Up
CREATE TABLE pipeline_runs (
    id          UUID PRIMARY KEY,
    pipeline_id UUID NOT NULL REFERENCES pipelines(id) ON DELETE CASCADE,
    app_id      UUID NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    user_id     UUID NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    status      TEXT NOT NULL,
    input       JSONB NOT NULL,
    definition  JSONB NOT NULL,
    steps       JSONB NOT NULL,
    current     INTEGER NOT NULL DEFAULT 0,
    output      JSONB,
    error       TEXT,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX pipeline_runs_pipeline ON pipeline_runs(pipeline_id, created_at);

CREATE TABLE pipeline_waits (
    activation_id UUID PRIMARY KEY,
    run_id        UUID NOT NULL REFERENCES pipeline_runs(id) ON DELETE CASCADE,
    step          INTEGER NOT NULL
);

-- +goose Down
DROP TABLE pipeline_waits;
DROP TABLE pipeline_runs;
