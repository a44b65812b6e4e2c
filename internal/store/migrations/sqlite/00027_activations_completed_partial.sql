-- The completed index served one query, the count of runs that ended
-- since a moment (completed_at >= …, which implies NOT NULL), yet every
-- run entered it twice: a NULL entry at its create, moved to its end time
-- at its end. It now holds only ended runs: a run's create touches one
-- b-tree fewer and its end one entry move fewer.

-- +goose Up
DROP INDEX activations_completed;
CREATE INDEX activations_completed ON activations(completed_at) WHERE completed_at IS NOT NULL;

-- +goose Down
DROP INDEX activations_completed;
CREATE INDEX activations_completed ON activations(completed_at);
