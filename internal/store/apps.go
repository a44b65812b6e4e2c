package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
)

// App is a deployed application: its header and the manifest it was last
// imported from. Its parts (agents, models, functions, pipelines,
// authenticators) are rows of their own tables.
type App struct {
	ID          string
	UserID      string
	Name        string
	Slug        string
	Description string
	Version     string
	Status      string // active or disabled
	// Manifest is the manifest header as last imported (JSON), e.g. its
	// minPlatformVersion; "{}" for apps created without one.
	Manifest          json.RawMessage
	MarketplaceStatus string // private or published
	EntryPointURL     string
	WebhookSecretEnc  string
	InstalledFrom     string // the published app this one was installed from
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

const appColumns = `id, user_id, name, slug, description, version, status, manifest, marketplace_status,
	entry_point_url, webhook_secret_enc, installed_from, created_at, updated_at`

func scanApp(row interface{ Scan(...any) error }, a *App) error {
	var manifest []byte
	var installedFrom sql.NullString
	if err := row.Scan(&a.ID, &a.UserID, &a.Name, &a.Slug, &a.Description, &a.Version, &a.Status, &manifest,
		&a.MarketplaceStatus, &a.EntryPointURL, &a.WebhookSecretEnc, &installedFrom, &a.CreatedAt, &a.UpdatedAt); err != nil {
		return err
	}
	a.Manifest, a.InstalledFrom = json.RawMessage(manifest), installedFrom.String
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// AppCreate inserts a; a slug the user already has is ErrConflict.
func (s *Store) AppCreate(ctx context.Context, a *App) error {
	_, err := s.writer().ExecContext(ctx, `INSERT INTO apps (`+appColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		a.ID, a.UserID, a.Name, a.Slug, a.Description, orDefault(a.Version, "1.0.0"), orDefault(a.Status, "active"),
		jsonOr(a.Manifest, "{}"), orDefault(a.MarketplaceStatus, "private"), a.EntryPointURL, a.WebhookSecretEnc,
		nullable(a.InstalledFrom), s.ts(a.CreatedAt), s.ts(a.UpdatedAt))
	return mapErr(err)
}

// AppGet returns the app with id, whoever owns it.
func (s *Store) AppGet(ctx context.Context, id string) (*App, error) {
	var a App
	err := scanApp(s.reader().QueryRowContext(ctx, `SELECT `+appColumns+` FROM apps WHERE id = $1`, id), &a)
	return &a, mapErr(err)
}

// AppGetBySlug returns the user's app with slug.
func (s *Store) AppGetBySlug(ctx context.Context, userID, slug string) (*App, error) {
	var a App
	err := scanApp(s.reader().QueryRowContext(ctx,
		`SELECT `+appColumns+` FROM apps WHERE user_id = $1 AND slug = $2`, userID, slug), &a)
	return &a, mapErr(err)
}

// AppListByUser returns a page of the user's apps, newest first, and the
// total count. A non-empty onlyID narrows the list to that app (a key bound
// to one app).
func (s *Store) AppListByUser(ctx context.Context, userID, onlyID string, limit, offset int) ([]App, int, error) {
	where := ` FROM apps WHERE user_id = $1 AND ($2 = '' OR CAST(id AS TEXT) = $2)`
	total, err := s.count(ctx, `SELECT COUNT(*)`+where, userID, onlyID)
	if err != nil {
		return nil, 0, err
	}
	apps, err := queryAll(ctx, s.reader(), scanApp,
		`SELECT `+appColumns+where+` ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`, userID, onlyID, limit, offset)
	return apps, total, err
}

// AppListPublished returns a page of the published apps of every user,
// newest first, and the total count.
func (s *Store) AppListPublished(ctx context.Context, limit, offset int) ([]App, int, error) {
	where := ` FROM apps WHERE marketplace_status = 'published'`
	total, err := s.count(ctx, `SELECT COUNT(*)`+where)
	if err != nil {
		return nil, 0, err
	}
	apps, err := queryAll(ctx, s.reader(), scanApp,
		`SELECT `+appColumns+where+` ORDER BY created_at DESC, id DESC LIMIT $1 OFFSET $2`, limit, offset)
	return apps, total, err
}

// AppUpdate writes every mutable field of a (not its owner, slug or id).
func (s *Store) AppUpdate(ctx context.Context, a *App) error {
	return s.changingAgents(func() error {
		return expectOne(s.writer().ExecContext(ctx, `UPDATE apps SET name = $2, description = $3, version = $4, status = $5,
		manifest = $6, marketplace_status = $7, entry_point_url = $8, webhook_secret_enc = $9, updated_at = $10 WHERE id = $1`,
			a.ID, a.Name, a.Description, a.Version, a.Status, jsonOr(a.Manifest, "{}"), a.MarketplaceStatus, a.EntryPointURL,
			a.WebhookSecretEnc, s.ts(a.UpdatedAt)))
	})
}

// AppDelete deletes the app; its agents, parts, data and activations go
// with it (ON DELETE CASCADE).
func (s *Store) AppDelete(ctx context.Context, id string) error {
	s.uncacheActivation("") // its activations go with it
	return s.changingAgents(func() error {
		return expectOne(s.writer().ExecContext(ctx, `DELETE FROM apps WHERE id = $1`, id))
	})
}
