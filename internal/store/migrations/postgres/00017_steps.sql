-- Agents that act: the step journal and waitpoints.
-- activation_steps is a run's journal, one row per LLM call, tool call or
-- wait, committed before the next step starts, so a run taken over after a
-- crash resumes at its first unfinished step instead of asking or calling
-- again (GET /activations/{id}/steps reads it too).
-- A waitpoint is what a waiting run waits for (an approval, or the caller's
-- client tool results); it is stored in the transaction that ends the
-- waiting step, so an answer arriving early finds it, and answered once.
-- activations.waiting is the DESIGN's `waiting` object while a running
-- activation waits (it then holds no worker), NULL otherwise.
-- JSON columns are JSONB here, TEXT on SQLite.

-- +goose Up
CREATE TABLE activation_steps (
    activation_id UUID NOT NULL REFERENCES activations(id) ON DELETE CASCADE,
    idx           INTEGER NOT NULL,
    kind          TEXT NOT NULL,
    name          TEXT NOT NULL DEFAULT '',
    tool_call_id  TEXT NOT NULL DEFAULT '',
    input         JSONB,
    output        JSONB,
    error         TEXT,
    status        TEXT NOT NULL,
    usage         JSONB,
    started_at    TIMESTAMPTZ NOT NULL,
    ended_at      TIMESTAMPTZ,
    PRIMARY KEY (activation_id, idx)
);

CREATE TABLE waitpoints (
    id            UUID PRIMARY KEY,
    activation_id UUID NOT NULL REFERENCES activations(id) ON DELETE CASCADE,
    user_id       UUID NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    kind          TEXT NOT NULL,
    tool_calls    JSONB NOT NULL,
    step_index    INTEGER NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    answered_at   TIMESTAMPTZ,
    answer        JSONB
);
CREATE INDEX waitpoints_activation ON waitpoints(activation_id, created_at);

ALTER TABLE activations ADD COLUMN waiting JSONB;
-- status=waiting lists (a user's, newest first) read only waiting runs.
CREATE INDEX activations_waiting ON activations(user_id, created_at) WHERE status = 'running' AND waiting IS NOT NULL;

-- +goose Down
DROP INDEX activations_waiting;
ALTER TABLE activations DROP COLUMN waiting;
DROP TABLE waitpoints;
DROP TABLE activation_steps;
