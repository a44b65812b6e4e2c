-- Worker processes and their heartbeats: a worker silent for 30 s is dead,
-- and the activations it was running are handed back to the queue.

-- +goose Up
CREATE TABLE workers (
    id           TEXT PRIMARY KEY,
    hostname     TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    version      TEXT NOT NULL,
    started_at   TIMESTAMPTZ NOT NULL,
    heartbeat_at TIMESTAMPTZ NOT NULL,
    running      INTEGER NOT NULL DEFAULT 0,
    concurrency  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX workers_heartbeat ON workers(heartbeat_at);
-- Throughput of the last minute and hour (worker status).
CREATE INDEX activations_completed ON activations(completed_at);

-- +goose Down
DROP INDEX activations_completed;
DROP TABLE workers;
