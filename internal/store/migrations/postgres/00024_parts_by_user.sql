-- Functions and pipelines are listed by user (GET /api/v1/functions,
-- /api/v1/pipelines, and the MCP endpoint of every app), in creation
-- order, as agents are; without an index as agents have, every such
-- list read the functions and pipelines of every user.

-- +goose Up
CREATE INDEX functions_user ON functions(user_id, created_at);
CREATE INDEX pipelines_user ON pipelines(user_id, created_at);

-- +goose Down
DROP INDEX pipelines_user;
DROP INDEX functions_user;
