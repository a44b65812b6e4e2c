package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentplatform/agentplatform/internal/store"
)

// Migrated returns the DSN of a new private database of dialect d with
// every migration applied, removed when t ends. It is a copy of a template
// migrated once per schema (store.SchemaFingerprint) and kept between runs:
// a file copy on SQLite, CREATE DATABASE … TEMPLATE on PostgreSQL. Under
// -race, migrating from scratch cost a test about a second per database,
// and the API's tests start hundreds of servers.
func Migrated(t testing.TB, d store.Dialect) string {
	t.Helper()
	if d == store.SQLite {
		tmpl, err := templates.get(d, sqliteTemplate)
		if err != nil {
			t.Fatalf("sqlite template: %v", err)
		}
		path := filepath.Join(t.TempDir(), "test.db")
		if err := copyFile(tmpl, path); err != nil {
			t.Fatalf("copy the sqlite template: %v", err)
		}
		return "sqlite:" + path
	}
	RequirePostgres(t)
	tmpl, err := templates.get(d, postgresTemplate)
	if err != nil {
		t.Fatalf("postgres template: %v", err)
	}
	// A pool per test, closed with it: a process-wide one would outlive
	// the tests that check for leaked goroutines.
	admin, err := sql.Open("pgx", PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	name := "t_" + randomHex(8)
	if _, err := admin.Exec(`CREATE DATABASE ` + name + ` TEMPLATE ` + tmpl); err != nil {
		admin.Close()
		t.Fatalf("create database from the template: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		// FORCE: a connection the test leaked must not keep the
		// database (and its disk) after the run.
		if _, err := admin.Exec(`DROP DATABASE ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return withDatabase(PostgresURL(), name)
}

// templateCache builds each dialect's template at most once per process.
type templateCache struct {
	mu   sync.Mutex
	done map[store.Dialect]string
}

var templates templateCache

func (c *templateCache) get(d store.Dialect, build func(fingerprint string) (string, error)) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name, ok := c.done[d]; ok {
		return name, nil
	}
	fp, err := store.SchemaFingerprint(d)
	if err != nil {
		return "", err
	}
	name, err := build(fp[:16])
	if err != nil {
		return "", err
	}
	if c.done == nil {
		c.done = map[store.Dialect]string{}
	}
	c.done[d] = name
	return name, nil
}

// sqliteTemplate is the path of the migrated SQLite file of fingerprint
// fp, built if no process built it before. Processes building it at once
// each rename a complete file into place, so none copies half of one.
func sqliteTemplate(fp string) (string, error) {
	dir := filepath.Join(os.TempDir(), "agentplatform-testdb")
	path := filepath.Join(dir, "sqlite-"+fp+".db")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	build, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(build)
	file := filepath.Join(build, "template.db")
	if err := migrate("sqlite:" + file); err != nil {
		return "", err
	}
	// Closing the store checkpointed its write-ahead log into the file.
	if _, err := os.Stat(file + "-wal"); err == nil {
		return "", fmt.Errorf("sqlite template %s: a write-ahead log remained after close", file)
	}
	return path, os.Rename(file, path)
}

// postgresTemplate is the name of the migrated template database of
// fingerprint fp, built under an advisory lock if no process built it
// before. It takes no connections: CREATE DATABASE … TEMPLATE refuses a
// source that has any.
func postgresTemplate(fp string) (string, error) {
	ctx := context.Background()
	name := "ap_template_" + fp
	db, err := sql.Open("pgx", PostgresURL())
	if err != nil {
		return "", err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	// The lock is the session's: one connection takes and releases it.
	const lockKey = 0x61707464 // "aptd"
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, lockKey); err != nil {
		return "", err
	}
	defer conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, lockKey) //nolint:errcheck // the session ends with Close anyway
	var exists bool
	if err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	// A process killed while building left its half behind.
	building := name + "_build"
	if _, err := conn.ExecContext(ctx, `DROP DATABASE IF EXISTS `+building+` WITH (FORCE)`); err != nil {
		return "", err
	}
	if _, err := conn.ExecContext(ctx, `CREATE DATABASE `+building); err != nil {
		return "", err
	}
	if err := migrate(withDatabase(PostgresURL(), building)); err != nil {
		return "", err
	}
	if _, err := conn.ExecContext(ctx, `ALTER DATABASE `+building+` RENAME TO `+name); err != nil {
		return "", err
	}
	if _, err := conn.ExecContext(ctx, `ALTER DATABASE `+name+` WITH ALLOW_CONNECTIONS false`); err != nil {
		return "", err
	}
	return name, nil
}

// migrate applies every migration to the database at dsn and closes it.
func migrate(dsn string) error {
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	if err := s.Migrate(ctx, Logger()); err != nil {
		s.Close()
		return err
	}
	return s.Close()
}

// withDatabase is the PostgreSQL URL dsn naming database name instead.
func withDatabase(dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		panic(fmt.Sprintf("testdb: bad PostgreSQL URL: %v", err))
	}
	u.Path = "/" + name
	return u.String()
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
