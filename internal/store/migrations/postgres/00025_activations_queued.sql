-- Worker nodes take queued activations straight from this table, in
-- priority then creation order (activation/dispatch.go), with no queue
-- job per run: the index holds the queued rows only, a handful however
-- long the history.

-- +goose Up
CREATE INDEX activations_queued ON activations(priority, id) WHERE status = 'queued';

-- +goose Down
DROP INDEX activations_queued;
