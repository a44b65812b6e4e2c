-- Records of apps' data models: each one a JSON object validated against
-- its model's fields by internal/appdata. Lists filter and sort on the
-- JSON's fields in SQL (json_extract here, ->> on PostgreSQL).

-- +goose Up
CREATE TABLE app_records (
    id         UUID PRIMARY KEY,
    model_id   UUID NOT NULL REFERENCES app_models(id) ON DELETE CASCADE,
    app_id     UUID NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    user_id    UUID NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    data       JSONB NOT NULL,
    created_by TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX app_records_model ON app_records(model_id, created_at, id);

-- +goose Down
DROP TABLE app_records;
