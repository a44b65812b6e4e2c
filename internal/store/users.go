package store

import (
	"context"
	"time"
)

// User is an account.
type User struct {
	ID           string
	Email        string
	PasswordHash string
	FirstName    string
	LastName     string
	IsActive     bool
	IsAdmin      bool
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

const userColumns = `id, email, password_hash, first_name, last_name, is_active, is_admin, created_at, updated_at`

func scanUser(row interface{ Scan(...any) error }, u *User) error {
	return row.Scan(&u.ID, &u.Email, &u.PasswordHash, &u.FirstName, &u.LastName, &u.IsActive, &u.IsAdmin, &u.CreatedAt, &u.UpdatedAt)
}

// UserCreate inserts u. When adminIfFirst is set and the instance has no user
// yet, u becomes an admin; u.IsAdmin reports the outcome. A taken email is
// ErrConflict.
func (s *Store) UserCreate(ctx context.Context, u *User, adminIfFirst bool) error {
	return s.InTx(ctx, func(tx *Store) error {
		// Two first registrations at once must not both become admin.
		if lock := tx.d.lockTable("users"); lock != "" {
			if _, err := tx.writer().ExecContext(ctx, lock); err != nil {
				return err
			}
		}
		if adminIfFirst && !u.IsAdmin {
			var exists bool
			if err := tx.writer().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM users)`).Scan(&exists); err != nil {
				return err
			}
			u.IsAdmin = !exists
		}
		_, err := tx.writer().ExecContext(ctx, `INSERT INTO users (`+userColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			u.ID, u.Email, u.PasswordHash, u.FirstName, u.LastName, u.IsActive, u.IsAdmin, tx.ts(u.CreatedAt), tx.ts(u.UpdatedAt))
		return mapErr(err)
	})
}

// UserGet returns the user with id.
func (s *Store) UserGet(ctx context.Context, id string) (*User, error) {
	var u User
	err := scanUser(s.reader().QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id), &u)
	return &u, mapErr(err)
}

// UserGetByEmail returns the user with email (already normalised).
func (s *Store) UserGetByEmail(ctx context.Context, email string) (*User, error) {
	var u User
	err := scanUser(s.reader().QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE email = $1`, email), &u)
	return &u, mapErr(err)
}

// UserList returns a page of users, oldest first, and the total count.
func (s *Store) UserList(ctx context.Context, limit, offset int) ([]User, int, error) {
	total, err := s.count(ctx, `SELECT COUNT(*) FROM users`)
	if err != nil {
		return nil, 0, err
	}
	users, err := queryAll(ctx, s.reader(), scanUser, `SELECT `+userColumns+` FROM users ORDER BY created_at, id LIMIT $1 OFFSET $2`, limit, offset)
	return users, total, err
}

// UserUpdate saves the profile and flags of u (not its password).
func (s *Store) UserUpdate(ctx context.Context, u *User) error {
	return expectOne(s.writer().ExecContext(ctx,
		`UPDATE users SET email = $2, first_name = $3, last_name = $4, is_active = $5, is_admin = $6, updated_at = $7 WHERE id = $1`,
		u.ID, u.Email, u.FirstName, u.LastName, u.IsActive, u.IsAdmin, s.ts(u.UpdatedAt)))
}

// UserSetPassword replaces the password hash of user id.
func (s *Store) UserSetPassword(ctx context.Context, id, hash string, at time.Time) error {
	return expectOne(s.writer().ExecContext(ctx,
		`UPDATE users SET password_hash = $2, updated_at = $3 WHERE id = $1`, id, hash, s.ts(at)))
}

// UserCountActiveAdmins counts the admins who can still sign in.
func (s *Store) UserCountActiveAdmins(ctx context.Context) (int, error) {
	return s.count(ctx, `SELECT COUNT(*) FROM users WHERE is_admin AND is_active`)
}
