-- A custom agent may declare the JSON Schema of its input (input_schema,
-- as functions do), used by its activations, tools and MCP; NULL when it
-- declares none (an LLM agent never does).

-- +goose Up
ALTER TABLE agents ADD COLUMN input_schema JSONB;

-- +goose Down
ALTER TABLE agents DROP COLUMN input_schema;
