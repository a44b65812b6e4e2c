-- A provider's own prices (DESIGN §4 "Usage, cost and budgets"):
-- {model: {input, output, cache_read?, cache_write?}} in USD per million
-- tokens, over the defaults built into the binary (package pricing).

-- +goose Up
ALTER TABLE llm_providers ADD COLUMN prices JSONB NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE llm_providers DROP COLUMN prices;
