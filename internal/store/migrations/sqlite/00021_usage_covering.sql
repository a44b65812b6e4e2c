-- A usage report sums the raw records only for the partial days at its
-- edges (whole days come from usage_daily), but a busy account's partial
-- day is tens of thousands of calls: read through (user_id, created_at)
-- and then row by row from the table, that alone took most of a report's
-- time over a million records. This index holds every column a report
-- reads, so the edges are read from the index alone; it replaces the
-- narrower one, whose columns it starts with.

-- +goose Up
CREATE INDEX usage_records_user_time_covering ON usage_records(user_id, created_at,
    app_id, agent_id, api_key_id, model, input_tokens, output_tokens, cost_micro_usd);
DROP INDEX usage_records_user_time;

-- +goose Down
CREATE INDEX usage_records_user_time ON usage_records(user_id, created_at);
DROP INDEX usage_records_user_time_covering;
