-- The counters behind the quotas (internal/quota, store/quota.go), kept in
-- the transaction of each write: an app's ctx.storage keys and bytes, a
-- data model's records and their bytes; each row keeps its own size so a
-- rewrite or a delete knows what it gives back.

-- +goose Up
ALTER TABLE app_storage ADD COLUMN size BIGINT NOT NULL DEFAULT 0;
UPDATE app_storage SET size = octet_length(value::text);
ALTER TABLE apps ADD COLUMN storage_keys BIGINT NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN storage_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE apps SET storage_keys = (SELECT COUNT(*) FROM app_storage s WHERE s.app_id = apps.id),
    storage_bytes = (SELECT COALESCE(SUM(s.size), 0) FROM app_storage s WHERE s.app_id = apps.id);

ALTER TABLE app_records ADD COLUMN size BIGINT NOT NULL DEFAULT 0;
UPDATE app_records SET size = octet_length(data::text);
ALTER TABLE app_models ADD COLUMN record_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE app_models ADD COLUMN record_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE app_models SET record_count = (SELECT COUNT(*) FROM app_records r WHERE r.model_id = app_models.id),
    record_bytes = (SELECT COALESCE(SUM(r.size), 0) FROM app_records r WHERE r.model_id = app_models.id);

-- +goose Down
ALTER TABLE app_models DROP COLUMN record_bytes;
ALTER TABLE app_models DROP COLUMN record_count;
ALTER TABLE app_records DROP COLUMN size;
ALTER TABLE apps DROP COLUMN storage_bytes;
ALTER TABLE apps DROP COLUMN storage_keys;
ALTER TABLE app_storage DROP COLUMN size;
