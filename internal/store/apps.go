package store

import (
	"context"
	"time"
)

// App is a deployed application. This issue needs only its owner (API keys
// can be bound to an app); the app catalogue grows around it.
type App struct {
	ID          string
	UserID      string
	Name        string
	Slug        string
	Description string
	Version     string
	Status      string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// AppCreate inserts a; a slug the user already has is ErrConflict.
func (s *Store) AppCreate(ctx context.Context, a *App) error {
	_, err := s.writer().ExecContext(ctx, `
		INSERT INTO apps (id, user_id, name, slug, description, version, status, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		a.ID, a.UserID, a.Name, a.Slug, a.Description, a.Version, a.Status, s.ts(a.CreatedAt), s.ts(a.UpdatedAt))
	return mapErr(err)
}

// AppGet returns the app with id, whoever owns it.
func (s *Store) AppGet(ctx context.Context, id string) (*App, error) {
	var a App
	err := s.reader().QueryRowContext(ctx, `
		SELECT id, user_id, name, slug, description, version, status, created_at, updated_at
		FROM apps WHERE id = $1`, id).Scan(
		&a.ID, &a.UserID, &a.Name, &a.Slug, &a.Description, &a.Version, &a.Status, &a.CreatedAt, &a.UpdatedAt)
	return &a, mapErr(err)
}
