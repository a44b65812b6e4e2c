// Package testdb gives tests a real, migrated, private database on each
// dialect: a fresh SQLite file, or a fresh schema in the PostgreSQL named by
// AP_TEST_DATABASE_URL (default: the local trust-auth server's database
// "test"). When PostgreSQL cannot be reached its tests skip, unless
// AP_TEST_REQUIRE_ALL=1 (CI), where they fail instead.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/store"
)

// DefaultPostgresURL is used when AP_TEST_DATABASE_URL is unset.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// Dialects are the databases every store test runs on.
var Dialects = []store.Dialect{store.SQLite, store.Postgres}

// ForEach runs fn as a parallel subtest per dialect.
func ForEach(t *testing.T, fn func(t *testing.T, d store.Dialect)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, d)
		})
	}
}

// RequireAll reports whether tests that need an outside service must fail
// rather than skip.
func RequireAll() bool { return os.Getenv("AP_TEST_REQUIRE_ALL") == "1" }

// Need skips t when err says something outside the repository is missing
// (a service, a tool, installed packages), or fails it under
// AP_TEST_REQUIRE_ALL=1, where a skipped check would pass unseen.
func Need(t testing.TB, err error, what string) {
	t.Helper()
	if err == nil {
		return
	}
	if RequireAll() {
		t.Fatalf("%s is required (AP_TEST_REQUIRE_ALL=1): %v", what, err)
	}
	t.Skipf("%s: %v", what, err)
}

// PostgresURL is the server the PostgreSQL tests use.
func PostgresURL() string {
	if u := os.Getenv("AP_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultPostgresURL
}

var (
	pgOnce sync.Once
	pgErr  error
)

// RequirePostgres skips (or, under AP_TEST_REQUIRE_ALL=1, fails) t when the
// test PostgreSQL cannot be reached.
func RequirePostgres(t testing.TB) {
	t.Helper()
	pgOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		db, err := sql.Open("pgx", PostgresURL())
		if err == nil {
			err = db.PingContext(ctx)
			db.Close()
		}
		pgErr = err
	})
	Need(t, pgErr, "PostgreSQL at "+PostgresURL())
}

// URL returns the DSN of a new, empty, private database of dialect d that is
// removed when t ends. The schema is not migrated.
func URL(t testing.TB, d store.Dialect) string {
	t.Helper()
	if d == store.SQLite {
		return "sqlite:" + filepath.Join(t.TempDir(), "test.db")
	}
	RequirePostgres(t)
	schema := "t_" + randomHex(8)
	admin, err := sql.Open("pgx", PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		admin.Close()
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Open returns a migrated store of dialect d (a copy of the template,
// Migrated), closed when t ends.
func Open(t testing.TB, d store.Dialect) *store.Store {
	t.Helper()
	return open(t, Migrated(t, d))
}

// Unmigrated opens a store on an empty database of dialect d, nothing
// migrated (tests of migrations and readiness), closed when the test ends.
func Unmigrated(t testing.TB, d store.Dialect) *store.Store {
	t.Helper()
	return open(t, URL(t, d))
}

func open(t testing.TB, url string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Logger discards; tests that care about logs make their own.
func Logger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// UserApp creates a user and an app of theirs in s, for the tests below
// the API that need an owner for what they store.
func UserApp(t testing.TB, s *store.Store) (*store.User, *store.App) {
	t.Helper()
	ctx, now := context.Background(), store.Now()
	u := &store.User{ID: uuid.NewString(), Email: uuid.NewString() + "@example.com", PasswordHash: "x", IsActive: true, CreatedAt: now, UpdatedAt: now}
	if err := s.UserCreate(ctx, u, false); err != nil {
		t.Fatal(err)
	}
	app := &store.App{ID: uuid.NewString(), UserID: u.ID, Name: "A", Slug: "a", Version: "1.0.0", Status: "active", CreatedAt: now, UpdatedAt: now}
	if err := s.AppCreate(ctx, app); err != nil {
		t.Fatal(err)
	}
	return u, app
}
