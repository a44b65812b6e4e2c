-- Records of apps' data models: each one a JSON object validated against
-- its model's fields by internal/appdata. Lists filter and sort on the
-- JSON's fields in SQL (json_extract here, ->> on PostgreSQL).

-- +goose Up
CREATE TABLE app_records (
    id         TEXT PRIMARY KEY,
    model_id   TEXT NOT NULL REFERENCES app_models(id) ON DELETE CASCADE,
    app_id     TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    data       BLOB NOT NULL, -- JSONB: read with json(data)
    created_by TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE INDEX app_records_model ON app_records(model_id, created_at, id);

-- +goose Down
DROP TABLE app_records;
