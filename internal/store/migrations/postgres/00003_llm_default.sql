-- At most one default LLM provider per user, enforced by the database:
-- two requests marking different providers at once cannot both win.

-- +goose Up
CREATE UNIQUE INDEX llm_providers_one_default ON llm_providers (user_id) WHERE is_default;

-- +goose Down
DROP INDEX llm_providers_one_default;
