-- A pipeline step is claimed by the worker that runs it (worker_id, cleared
-- when the step ends or waits on an activation; attempt counts the claims
-- of the current step): a dead worker's steps are handed back by the same
-- heartbeat reaper as its activations. A function step's execution is keyed
-- by its run and step, so a step delivered again finds it instead of
-- running the function a second time.

-- +goose Up
ALTER TABLE pipeline_runs ADD COLUMN worker_id TEXT;
ALTER TABLE pipeline_runs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
CREATE INDEX pipeline_runs_worker ON pipeline_runs(worker_id) WHERE worker_id IS NOT NULL;
ALTER TABLE function_executions ADD COLUMN pipeline_run_id TEXT;
ALTER TABLE function_executions ADD COLUMN pipeline_step TEXT;
CREATE UNIQUE INDEX function_executions_step ON function_executions(pipeline_run_id, pipeline_step);

-- +goose Down
DROP INDEX function_executions_step;
ALTER TABLE function_executions DROP COLUMN pipeline_step;
ALTER TABLE function_executions DROP COLUMN pipeline_run_id;
DROP INDEX pipeline_runs_worker;
ALTER TABLE pipeline_runs DROP COLUMN attempt;
ALTER TABLE pipeline_runs DROP COLUMN worker_id;
