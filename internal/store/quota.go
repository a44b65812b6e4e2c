package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// QuotaError is a write refused because it would pass a quota; Name says
// which (one of the Quota* names). The quota package words it.
type QuotaError struct{ Name string }

func (e *QuotaError) Error() string { return "store: quota exceeded: " + e.Name }

// The quotas the store counts.
const (
	QuotaStorageKeys  = "storage_keys"
	QuotaStorageBytes = "storage_bytes"
	QuotaRecords      = "records"
	QuotaRecordBytes  = "record_bytes"
	QuotaModels       = "models"
	QuotaAPIKeys      = "api_keys"
)

// StorageLimits bound an app's ctx.storage.
type StorageLimits struct{ Keys, Bytes int64 }

// RecordLimits bound a data model's records.
type RecordLimits struct{ Count, Bytes int64 }

// The counters behind the quotas are columns kept in the same transaction
// as the write they count: apps.storage_keys and storage_bytes (of
// app_storage, whose rows keep their size), app_models.record_count and
// record_bytes (of app_records, likewise). Each write first updates its
// counter row, which on PostgreSQL locks it until commit: concurrent
// writers of one app (or model) queue there, and the limits hold exactly;
// on SQLite writes are serialized anyway. A count is of the JSON text's
// bytes as written.

// StorageSet sets key to value in the user's app, within lim.
func (s *Store) StorageSet(ctx context.Context, userID, appID, key string, value []byte, at time.Time, lim StorageLimits) error {
	return s.InTx(ctx, func(tx *Store) error {
		w := tx.writer()
		var keys, size int64
		if err := w.QueryRowContext(ctx, `UPDATE apps SET storage_keys = storage_keys WHERE id = $1 RETURNING storage_keys, storage_bytes`,
			appID).Scan(&keys, &size); err != nil {
			return mapErr(err)
		}
		var old int64
		dKeys, dBytes := int64(1), int64(len(value))
		err := w.QueryRowContext(ctx, `SELECT size FROM app_storage WHERE app_id = $1 AND key = $2`, appID, key).Scan(&old)
		switch {
		case err == nil:
			dKeys, dBytes = 0, dBytes-old
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if dKeys > 0 && keys+dKeys > lim.Keys {
			return &QuotaError{QuotaStorageKeys}
		}
		if dBytes > 0 && size+dBytes > lim.Bytes {
			return &QuotaError{QuotaStorageBytes}
		}
		res, err := w.ExecContext(ctx, `INSERT INTO app_storage (app_id, user_id, key, value, size, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (app_id, key) DO UPDATE SET value = excluded.value, size = excluded.size, updated_at = excluded.updated_at
			WHERE app_storage.user_id = excluded.user_id`, appID, userID, key, string(value), len(value), s.ts(at))
		if err != nil {
			return mapErr(err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // another user's key: nothing written
		}
		_, err = w.ExecContext(ctx, `UPDATE apps SET storage_keys = storage_keys + $2, storage_bytes = storage_bytes + $3 WHERE id = $1`,
			appID, dKeys, dBytes)
		return err
	})
}

// StorageDelete deletes key from the user's app; deleting a missing key is
// not an error.
func (s *Store) StorageDelete(ctx context.Context, userID, appID, key string) error {
	return s.InTx(ctx, func(tx *Store) error {
		w := tx.writer()
		var size int64
		err := w.QueryRowContext(ctx, `DELETE FROM app_storage WHERE app_id = $1 AND user_id = $2 AND key = $3 RETURNING size`,
			appID, userID, key).Scan(&size)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = w.ExecContext(ctx, `UPDATE apps SET storage_keys = storage_keys - 1, storage_bytes = storage_bytes - $2 WHERE id = $1`, appID, size)
		return err
	})
}

// RecordCreate inserts r, within lim.
func (s *Store) RecordCreate(ctx context.Context, r *Record, lim RecordLimits) error {
	return s.InTx(ctx, func(tx *Store) error {
		w := tx.writer()
		size := int64(len(r.Data))
		var count, bytes int64
		if err := w.QueryRowContext(ctx, `UPDATE app_models SET record_count = record_count + 1, record_bytes = record_bytes + $2
			WHERE id = $1 RETURNING record_count, record_bytes`, r.ModelID, size).Scan(&count, &bytes); err != nil {
			return mapErr(err)
		}
		if count > lim.Count {
			return &QuotaError{QuotaRecords}
		}
		if bytes > lim.Bytes {
			return &QuotaError{QuotaRecordBytes}
		}
		_, err := w.ExecContext(ctx, `INSERT INTO app_records (`+recordColumns+`, size) VALUES ($1, $2, $3, $4, `+s.d.jsonStore("$5")+`, $6, $7, $8, $9)`,
			r.ID, r.ModelID, r.AppID, r.UserID, string(r.Data), r.CreatedBy, s.ts(r.CreatedAt), s.ts(r.UpdatedAt), size)
		return mapErr(err)
	})
}

// RecordUpdate writes r's data and updated_at, within lim.
func (s *Store) RecordUpdate(ctx context.Context, r *Record, lim RecordLimits) error {
	return s.InTx(ctx, func(tx *Store) error {
		w := tx.writer()
		var bytes, old int64
		if err := w.QueryRowContext(ctx, `UPDATE app_models SET record_bytes = record_bytes WHERE id = $1 RETURNING record_bytes`,
			r.ModelID).Scan(&bytes); err != nil {
			return mapErr(err)
		}
		if err := w.QueryRowContext(ctx, `SELECT size FROM app_records WHERE id = $1 AND model_id = $2 AND user_id = $3`,
			r.ID, r.ModelID, r.UserID).Scan(&old); err != nil {
			return mapErr(err)
		}
		size := int64(len(r.Data))
		if size > old && bytes+size-old > lim.Bytes {
			return &QuotaError{QuotaRecordBytes}
		}
		if _, err := w.ExecContext(ctx, `UPDATE app_records SET data = `+s.d.jsonStore("$4")+`, size = $5, updated_at = $6
			WHERE id = $1 AND model_id = $2 AND user_id = $3`, r.ID, r.ModelID, r.UserID, string(r.Data), size, s.ts(r.UpdatedAt)); err != nil {
			return mapErr(err)
		}
		_, err := w.ExecContext(ctx, `UPDATE app_models SET record_bytes = record_bytes + $2 WHERE id = $1`, r.ModelID, size-old)
		return err
	})
}

// RecordDelete deletes the user's record id of model (ErrNotFound when absent).
func (s *Store) RecordDelete(ctx context.Context, userID, modelID, id string) error {
	return s.InTx(ctx, func(tx *Store) error {
		w := tx.writer()
		var size int64
		if err := w.QueryRowContext(ctx, `DELETE FROM app_records WHERE id = $1 AND model_id = $2 AND user_id = $3 RETURNING size`,
			id, modelID, userID).Scan(&size); err != nil {
			return mapErr(err)
		}
		_, err := w.ExecContext(ctx, `UPDATE app_models SET record_count = record_count - 1, record_bytes = record_bytes - $2 WHERE id = $1`,
			modelID, size)
		return err
	})
}

// AppModelCreate inserts m; max, when above 0, is how many models the app
// may hold. The app's row is locked first (a no-op update), so concurrent
// creators count one after the other.
func (s *Store) AppModelCreate(ctx context.Context, m *AppModel, max int64) error {
	return s.InTx(ctx, func(tx *Store) error {
		w := tx.writer()
		if max > 0 {
			var n int64
			if err := expectOne(w.ExecContext(ctx, `UPDATE apps SET storage_keys = storage_keys WHERE id = $1`, m.AppID)); err != nil {
				return err
			}
			if err := w.QueryRowContext(ctx, `SELECT COUNT(*) FROM app_models WHERE app_id = $1`, m.AppID).Scan(&n); err != nil {
				return err
			}
			if n >= max {
				return &QuotaError{QuotaModels}
			}
		}
		_, err := w.ExecContext(ctx, `INSERT INTO app_models (`+appModelColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			m.ID, m.AppID, m.Slug, m.Name, jsonOr(m.Fields, "[]"), s.ts(m.CreatedAt), s.ts(m.UpdatedAt))
		return mapErr(err)
	})
}
