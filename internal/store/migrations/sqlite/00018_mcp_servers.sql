-- The remote MCP servers an app declares (mcp_servers in the manifest),
-- whose tools its LLM agents call (tools of type mcp). authenticator names
-- an authenticator of the app whose connected account's access token is
-- sent as Bearer; '' sends none. A name is unique in the app: tools name
-- their server by it, and a manifest upgrade matches old rows by it.

-- +goose Up
CREATE TABLE mcp_servers (
    id            TEXT PRIMARY KEY,
    app_id        TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    url           TEXT NOT NULL,
    authenticator TEXT NOT NULL DEFAULT '',
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    UNIQUE (app_id, name)
);

-- +goose Down
DROP TABLE mcp_servers;
