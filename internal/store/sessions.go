package store

import (
	"context"
	"time"
)

// Session is a signed-in browser or program; only the hash of its token is
// stored.
type Session struct {
	ID        string
	UserID    string
	TokenHash []byte
	CreatedAt time.Time
	ExpiresAt time.Time
}

// SessionCreate inserts a session.
func (s *Store) SessionCreate(ctx context.Context, sess *Session) error {
	_, err := s.writer().ExecContext(ctx,
		`INSERT INTO sessions (id, user_id, token_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		sess.ID, sess.UserID, sess.TokenHash, s.ts(sess.CreatedAt), s.ts(sess.ExpiresAt))
	return mapErr(err)
}

// SessionGetByTokenHash returns the unexpired session with that token hash
// and its user, in one read (the path of every cookie-authenticated request).
func (s *Store) SessionGetByTokenHash(ctx context.Context, hash []byte, now time.Time) (*Session, *User, error) {
	var sess Session
	var u User
	err := s.reader().QueryRowContext(ctx, `
		SELECT s.id, s.user_id, s.created_at, s.expires_at,
		       u.id, u.email, u.password_hash, u.first_name, u.last_name, u.is_active, u.is_admin, u.created_at, u.updated_at
		FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.token_hash = $1 AND s.expires_at > $2`, hash, s.ts(now)).Scan(
		&sess.ID, &sess.UserID, &sess.CreatedAt, &sess.ExpiresAt,
		&u.ID, &u.Email, &u.PasswordHash, &u.FirstName, &u.LastName, &u.IsActive, &u.IsAdmin, &u.CreatedAt, &u.UpdatedAt)
	if err != nil {
		return nil, nil, mapErr(err)
	}
	sess.TokenHash = hash
	return &sess, &u, nil
}

// SessionDelete deletes one session; deleting a missing one is not an error.
func (s *Store) SessionDelete(ctx context.Context, id string) error {
	_, err := s.writer().ExecContext(ctx, `DELETE FROM sessions WHERE id = $1`, id)
	return err
}

// SessionDeleteByUser deletes every session of a user but keepID (which may
// be empty).
func (s *Store) SessionDeleteByUser(ctx context.Context, userID, keepID string) error {
	var err error
	if keepID == "" {
		_, err = s.writer().ExecContext(ctx, `DELETE FROM sessions WHERE user_id = $1`, userID)
	} else {
		_, err = s.writer().ExecContext(ctx, `DELETE FROM sessions WHERE user_id = $1 AND id <> $2`, userID, keepID)
	}
	return err
}

// SessionDeleteExpired removes sessions that expired before now and reports
// how many.
func (s *Store) SessionDeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.writer().ExecContext(ctx, `DELETE FROM sessions WHERE expires_at <= $1`, s.ts(now))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
