-- Every run wrote an entry in each index of activations, also where the
-- entry could never be looked up: most runs have no chat and no
-- idempotency key, and a run is looked up by status and worker only while
-- it runs (recovery, the queue's depth). Those indexes now hold only the
-- rows they are read for: a run's insert and end touch two b-trees fewer,
-- and the running index stays the size of what is in flight however long
-- the history. Every query that used them names the same condition
-- (chat_id = …, idempotency_key = …, status = 'running'), which implies
-- the index's. The chat index leads with the user, not the agent: it
-- serves a chat's history (user, agent and chat named) and the list of a
-- user's activations filtered by chat, which scanned the user's whole
-- history before (47 ms on SQLite, 2.9 ms on PostgreSQL at 50,000 runs).

-- +goose Up
DROP INDEX activations_chat;
CREATE INDEX activations_chat ON activations(user_id, chat_id, created_at) WHERE chat_id IS NOT NULL;
DROP INDEX activations_idempotency;
CREATE UNIQUE INDEX activations_idempotency ON activations(user_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
DROP INDEX activations_running;
CREATE INDEX activations_running ON activations(worker_id) WHERE status = 'running';

-- +goose Down
DROP INDEX activations_running;
CREATE INDEX activations_running ON activations(status, worker_id);
DROP INDEX activations_idempotency;
CREATE UNIQUE INDEX activations_idempotency ON activations(user_id, idempotency_key);
DROP INDEX activations_chat;
CREATE INDEX activations_chat ON activations(agent_id, chat_id, created_at);
