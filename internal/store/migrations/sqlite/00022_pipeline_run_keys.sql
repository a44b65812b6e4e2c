-- pipeline_runs.api_key_id is the API key that started the run (NULL: a
-- session): its steps' LLM calls count to that key, as an activation's
-- do (usage by key; budgets of a key).

-- +goose Up
ALTER TABLE pipeline_runs ADD COLUMN api_key_id INTEGER;

-- +goose Down
ALTER TABLE pipeline_runs DROP COLUMN api_key_id;
