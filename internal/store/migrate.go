package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"

	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrations embed.FS

func (s *Store) goose() (*goose.Provider, error) {
	dir, dialect := s.d.migrations()
	fsys, err := fs.Sub(migrations, dir)
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(dialect, s.write, fsys, goose.WithDisableGlobalRegistry(true))
}

// RiverDriver is River's driver over this store's database/sql handle: both
// dialects share the *sql.Tx type, so one River client type serves both.
func (s *Store) RiverDriver() riverdriver.Driver[*sql.Tx] {
	return s.d.riverDriver(s.write)
}

// Migrate brings the platform's schema and River's up to date. It refuses a
// database whose schema is newer than this binary knows.
func (s *Store) Migrate(ctx context.Context, log *slog.Logger) error {
	return s.migrate(ctx, log, 0)
}

// migrate is Migrate with River's migrations stopped at riverTarget (0:
// the latest), which a test uses to build the database an older River left.
func (s *Store) migrate(ctx context.Context, log *slog.Logger, riverTarget int) error {
	unlock, err := s.d.lockMigrations(ctx, s.write)
	if err != nil {
		return err
	}
	defer unlock()
	p, err := s.goose()
	if err != nil {
		return err
	}
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("store: read schema version: %w", err)
	}
	if latest := latestVersion(p); current > latest {
		return fmt.Errorf("store: the database schema is at version %d, newer than this binary's %d: run a newer agentplatform", current, latest)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	for _, r := range results {
		log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
	}
	if err := s.d.rebaseEvents(ctx, s.write); err != nil {
		return err
	}
	// River's migrator narrates every step at info; our own line per
	// version below is enough.
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	migrator, err := rivermigrate.New(s.RiverDriver(), &rivermigrate.Config{Logger: quiet})
	if err != nil {
		return err
	}
	res, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{TargetVersion: riverTarget})
	if err != nil {
		return fmt.Errorf("store: migrate river: %w", err)
	}
	for _, v := range res.Versions {
		log.Info("river migration applied", "version", v.Version)
	}
	// Both schemas are now this binary's latest (Migrated).
	s.migrated.Store(riverTarget == 0)
	return nil
}

// ErrMigrationsPending is Migrated's answer for a schema older than this
// binary's; any other error means the check itself failed.
var ErrMigrationsPending = errors.New("store: migrations pending")

// Migrated reports whether every known migration has been applied (the
// readiness check). A schema does not go back under a running binary, so a
// success, this check's or Migrate's, is remembered: probes then cost
// nothing, and a flood of them (a node's first, all at once) never queues
// behind writes on SQLite's single writer connection.
func (s *Store) Migrated(ctx context.Context) error {
	if s.migrated.Load() {
		return nil
	}
	p, err := s.goose()
	if err != nil {
		return err
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		return fmt.Errorf("store: check migrations: %w", err)
	}
	if pending {
		return ErrMigrationsPending
	}
	s.migrated.Store(true)
	return nil
}

func latestVersion(p *goose.Provider) int64 {
	var v int64
	for _, src := range p.ListSources() {
		v = max(v, src.Version)
	}
	return v
}

// SchemaFingerprint names the schema Migrate builds on dialect d: a hash
// of every migration it would apply, the platform's and River's. Two
// binaries with the same fingerprint build the same database, so tests
// migrate one template per fingerprint and copy it (testdb.Migrated).
func SchemaFingerprint(d Dialect) (string, error) {
	var impl dialect = sqliteDialect{}
	if d == Postgres {
		impl = postgresDialect{}
	}
	h := sha256.New()
	dir, _ := impl.migrations()
	err := fs.WalkDir(migrations, dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := migrations.ReadFile(path)
		fmt.Fprintf(h, "%s %d\n", path, len(b))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", err
	}
	// River's migrator only lists its embedded SQL here: no database is
	// reached through the nil handle.
	migrator, err := rivermigrate.New(impl.riverDriver(nil), &rivermigrate.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return "", err
	}
	for _, m := range migrator.AllVersions() {
		fmt.Fprintf(h, "river %d %d\n", m.Version, len(m.SQLUp))
		io.WriteString(h, m.SQLUp)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
