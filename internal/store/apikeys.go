package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
)

// APIKey is a programmatic credential; only the hash of the key is stored.
type APIKey struct {
	ID         int64
	UserID     string
	Name       string
	KeyHash    []byte
	KeyPrefix  string
	Scopes     []string
	AppID      string // empty when the key is not bound to an app
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
	CreatedAt  time.Time
}

const apiKeyColumns = `k.id, k.user_id, k.name, k.key_prefix, k.scopes, k.app_id, k.expires_at, k.last_used_at, k.created_at`

func scanAPIKey(row interface{ Scan(...any) error }, k *APIKey, extra ...any) error {
	var scopes []byte
	var appID sql.NullString
	var expires, lastUsed sql.NullTime
	dest := append([]any{&k.ID, &k.UserID, &k.Name, &k.KeyPrefix, &scopes, &appID, &expires, &lastUsed, &k.CreatedAt}, extra...)
	if err := row.Scan(dest...); err != nil {
		return err
	}
	k.AppID = appID.String
	k.ExpiresAt = nullTime(expires)
	k.LastUsedAt = nullTime(lastUsed)
	return json.Unmarshal(scopes, &k.Scopes)
}

// APIKeyCreate inserts k and sets its ID.
func (s *Store) APIKeyCreate(ctx context.Context, k *APIKey) error {
	return s.APIKeyCreateWithin(ctx, k, 0)
}

// APIKeyCreateWithin inserts k unless its user holds max keys already
// (QuotaError; max 0: no limit). The user's row is locked first (a no-op
// update), so concurrent creations count one after the other.
func (s *Store) APIKeyCreateWithin(ctx context.Context, k *APIKey, max int64) error {
	scopes, err := json.Marshal(k.Scopes)
	if err != nil {
		return err
	}
	var appID any
	if k.AppID != "" {
		appID = k.AppID
	}
	return s.InTx(ctx, func(tx *Store) error {
		w := tx.writer()
		if max > 0 {
			if err := expectOne(w.ExecContext(ctx, `UPDATE users SET is_active = is_active WHERE id = $1`, k.UserID)); err != nil {
				return err
			}
			var n int64
			if err := w.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys WHERE user_id = $1`, k.UserID).Scan(&n); err != nil {
				return err
			}
			if n >= max {
				return &QuotaError{QuotaAPIKeys}
			}
		}
		err := w.QueryRowContext(ctx, `
		INSERT INTO api_keys (user_id, name, key_hash, key_prefix, scopes, app_id, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
			k.UserID, k.Name, k.KeyHash, k.KeyPrefix, string(scopes), appID, s.tsPtr(k.ExpiresAt), s.ts(k.CreatedAt)).Scan(&k.ID)
		return mapErr(err)
	})
}

// APIKeyGetByHash returns the key with that hash and its user, in one read
// (the path of every key-authenticated request). Expiry is the caller's
// check, so that an expired key can be told apart in logs.
func (s *Store) APIKeyGetByHash(ctx context.Context, hash []byte) (*APIKey, *User, error) {
	var k APIKey
	var u User
	err := scanAPIKey(s.reader().QueryRowContext(ctx, `
		SELECT `+apiKeyColumns+`,
		       u.id, u.email, u.password_hash, u.first_name, u.last_name, u.is_active, u.is_admin, u.created_at, u.updated_at
		FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.key_hash = $1`, hash), &k,
		&u.ID, &u.Email, &u.PasswordHash, &u.FirstName, &u.LastName, &u.IsActive, &u.IsAdmin, &u.CreatedAt, &u.UpdatedAt)
	if err != nil {
		return nil, nil, mapErr(err)
	}
	k.KeyHash = hash
	return &k, &u, nil
}

// APIKeyGet returns the key with id, whoever owns it.
func (s *Store) APIKeyGet(ctx context.Context, id int64) (*APIKey, error) {
	var k APIKey
	err := scanAPIKey(s.reader().QueryRowContext(ctx, `SELECT `+apiKeyColumns+` FROM api_keys k WHERE k.id = $1`, id), &k)
	return &k, mapErr(err)
}

// APIKeyListByUser returns a page of a user's keys, newest first, and the
// total count.
func (s *Store) APIKeyListByUser(ctx context.Context, userID string, limit, offset int) ([]APIKey, int, error) {
	total, err := s.count(ctx, `SELECT COUNT(*) FROM api_keys WHERE user_id = $1`, userID)
	if err != nil {
		return nil, 0, err
	}
	keys, err := queryAll(ctx, s.reader(), func(row interface{ Scan(...any) error }, k *APIKey) error { return scanAPIKey(row, k) },
		`SELECT `+apiKeyColumns+` FROM api_keys k WHERE k.user_id = $1 ORDER BY k.id DESC LIMIT $2 OFFSET $3`, userID, limit, offset)
	return keys, total, err
}

// APIKeyDelete revokes a key.
func (s *Store) APIKeyDelete(ctx context.Context, id int64) error {
	return expectOne(s.writer().ExecContext(ctx, `DELETE FROM api_keys WHERE id = $1`, id))
}

// APIKeyTouch records that a key was used at `at`.
func (s *Store) APIKeyTouch(ctx context.Context, id int64, at time.Time) error {
	_, err := s.writer().ExecContext(ctx, `UPDATE api_keys SET last_used_at = $2 WHERE id = $1`, id, s.ts(at))
	return err
}
