// Package store owns every SQL statement of the platform. It offers one API
// over two dialects, embedded SQLite (modernc, pure Go) and PostgreSQL (pgx),
// with the same SQL text wherever the dialects agree ($N placeholders work on
// both) and per-dialect SQL only where they must differ. Schema migrations are
// embedded per dialect and applied with goose; River's own tables are
// migrated alongside.
//
// On SQLite the store keeps a pool of read connections and a single writer
// connection: SQLite allows one writer at a time, and one connection that
// queues writes in Go is faster and never sees SQLITE_BUSY from itself.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Dialect names a supported database.
type Dialect string

// The supported dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Errors the store returns; domain packages turn them into public errors.
var (
	ErrNotFound = errors.New("store: not found")
	ErrConflict = errors.New("store: unique constraint violated")
)

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Store is the database. A Store returned by InTx is bound to that
// transaction: every method then runs inside it.
type Store struct {
	d     dialect // what differs between the databases (dialect.go)
	read  *sql.DB // SQLite: read-only pool; PostgreSQL: the pool
	write *sql.DB // SQLite: one connection; PostgreSQL: the same pool as read
	tx    *sql.Tx
	// shared marks a transaction of the SQLite committer (commit.go): its
	// statements ignore their callers' cancellation.
	shared  bool
	commits *committer // SQLite: runs InTx; nil on PostgreSQL
	// acts serves activation reads on SQLite (actcache.go); nil on PostgreSQL.
	acts *activationCache
	// agents serves AgentToActivate (agentcache.go); every store has one.
	agents *agentCache
	// hooks collects the store's own work once this Store's transaction
	// has committed (cache updates: on the committer's goroutine, in commit
	// order); after collects the callers' (AfterCommit: on the caller's
	// goroutine once InTx has committed, free to use the store again).
	hooks *[]func()
	after *[]func()
	// evN counts the events the transaction has appended, across the
	// callers of a shared one (PostgreSQL numbers a seq within its
	// transaction: EventAppend).
	evN     *int64
	file    string   // SQLite: the database file
	lock    *os.File // SQLite: held while Exclusive
	display string   // the database for logs, without credentials
	// migrated remembers a successful Migrated check (shared by tx copies).
	migrated *atomic.Bool
	// pageBytes is the byte budget of a list page (SetPageBytes).
	pageBytes int
}

// Open connects to dsn: "postgres://…" / "postgresql://…" or "sqlite:PATH"
// (a missing SQLite file and its directory are created).
func Open(ctx context.Context, dsn string) (*Store, error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return openPostgres(ctx, dsn)
	case strings.HasPrefix(dsn, "sqlite:"):
		return openSQLite(ctx, strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//"))
	default:
		return nil, fmt.Errorf("store: unsupported database URL %q (want postgres://… or sqlite:PATH)", redact(dsn))
	}
}

func openPostgres(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres %s: %w", redact(dsn), err)
	}
	db := stdlib.OpenDB(*cfg, stdlib.OptionAfterConnect(encodePQArrays))
	db.SetMaxOpenConns(4 * runtime.NumCPU())
	db.SetMaxIdleConns(4 * runtime.NumCPU())
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: connect to %s: %w", redact(dsn), err)
	}
	return &Store{d: postgresDialect{}, read: db, write: db, display: "postgres " + redact(dsn), migrated: new(atomic.Bool),
		agents: newAgentCache(agentCacheTTL)}, nil
}

func openSQLite(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: sqlite: empty path")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: create %s: %w", dir, err)
		}
	}
	// The file holds password and token hashes and encrypted secrets: create
	// it owner-only rather than with the umask's mode (SQLite gives the -wal
	// and -shm files the same mode).
	if path != ":memory:" {
		f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("store: create %s: %w", path, err)
		}
		f.Close()
	}
	// synchronous(NORMAL) in WAL mode loses nothing when the process dies
	// (the kill -9 case); only an OS crash can lose the last commits.
	// journal_size_limit: a burst can grow the WAL to tens of MB, and
	// SQLite otherwise keeps the file that large once it restarts it.
	pragmas := "_pragma=temp_store(2)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" +
		"&_pragma=journal_size_limit(16777216)"
	// _txlock=immediate takes the write lock at BEGIN, so a transaction never
	// fails halfway when it upgrades from reading to writing.
	drv := &sqlite.Driver{}
	// The committer checkpoints the WAL between its batches (commit.go);
	// SQLite's automatic checkpoint, which runs inside the commit that
	// grows the WAL past its threshold and stalls every transaction queued
	// behind it, stays only as a backstop for writes that bypass the
	// committer (River's, single statements), at 16 MB instead of 4.
	write := sql.OpenDB(cachingConnector{dsn: "file:" + path + "?" + pragmas + "&_pragma=wal_autocheckpoint(4096)&_txlock=immediate", drv: drv})
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)
	// Create the file and switch it to WAL before readers open it.
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	read := sql.OpenDB(cachingConnector{dsn: "file:" + path + "?" + pragmas + "&_pragma=query_only(1)", drv: drv})
	read.SetMaxOpenConns(max(4, 2*runtime.NumCPU()))
	read.SetMaxIdleConns(max(4, 2*runtime.NumCPU()))
	s := &Store{d: sqliteDialect{}, read: read, write: write, file: path, display: "sqlite " + path, migrated: new(atomic.Bool),
		acts: newActivationCache(), agents: newAgentCache(0)}
	s.commits = newCommitter(s)
	return s, nil
}

// Close closes the connections.
func (s *Store) Close() error {
	if s.read == s.write {
		return s.read.Close()
	}
	s.commits.close()
	err := errors.Join(s.read.Close(), s.write.Close())
	if s.lock != nil {
		// Released last: the next process may start once this one has
		// checkpointed and closed.
		err = errors.Join(err, s.lock.Close())
	}
	return err
}

// Dialect reports which database this is.
func (s *Store) Dialect() Dialect { return s.d.name() }

// MultiNode reports whether several processes may serve this database at
// once (PostgreSQL), so that they must tell each other what changed; on
// SQLite one process serves it (Exclusive).
func (s *Store) MultiNode() bool { return s.d.multiNode() }

// String names the database for logs, without credentials.
func (s *Store) String() string { return s.display }

// DB is the raw handle, for tests only: those that inject a fault or
// inspect rows beneath the store (the single writer on SQLite, the pool on
// PostgreSQL). Code outside the store never calls it (TestSeam).
func (s *Store) DB() *sql.DB { return s.write }

// RiverTx hands River (internal/queue, and nothing else) the transaction
// this Store is bound to, so that a job commits or rolls back with the rows
// it belongs to, together with the context River's statements must run
// under: a shared SQLite transaction is not interrupted by one caller's
// cancellation (commit.go). The two come as one so that the raw
// transaction is never used without that guard. ok is false outside a
// transaction.
func (s *Store) RiverTx(ctx context.Context) (context.Context, *sql.Tx, bool) {
	switch {
	case s.tx == nil:
		return ctx, nil, false
	case s.shared:
		return context.WithoutCancel(ctx), s.tx, true
	}
	return ctx, s.tx, true
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.read.PingContext(ctx) }

// InTx runs fn in one transaction on a Store bound to it, committing when
// fn returns nil. Nested calls join the outer transaction. fn must not wait
// for anything but the database: on SQLite it runs on the committer's
// goroutine, which other transactions wait for.
func (s *Store) InTx(ctx context.Context, fn func(tx *Store) error) (err error) {
	if s.tx != nil {
		return fn(s)
	}
	if s.commits != nil {
		r := &txReq{ctx: ctx, fn: fn, done: make(chan struct{})}
		if err := s.commits.submit(ctx, r); err != nil {
			return err
		}
		<-r.done
		if r.panicked != nil {
			panic(r.panicked)
		}
		if r.err == nil {
			runAll(r.after)
		}
		return r.err
	}
	return s.inOwnTx(ctx, fn)
}

// InTxThen is InTx for a caller that need not wait for the commit: then
// gets what InTx would return once the transaction has committed (after
// its AfterCommit functions) or failed. On SQLite the transaction queues
// for the committer, and nothing waits meanwhile: then runs on a goroutine
// of its own. Elsewhere (PostgreSQL, or inside a transaction) it is InTx,
// then then, on the caller's goroutine.
func (s *Store) InTxThen(ctx context.Context, fn func(tx *Store) error, then func(error)) {
	if s.tx != nil || s.commits == nil {
		then(s.InTx(ctx, fn))
		return
	}
	if err := s.commits.enqueue(&txReq{ctx: ctx, fn: fn, then: then}); err != nil {
		then(err)
	}
}

func (s *Store) inOwnTx(ctx context.Context, fn func(tx *Store) error) (err error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var hooks, after []func()
	bound := *s
	bound.tx, bound.hooks, bound.after, bound.evN = tx, &hooks, &after, new(int64)
	if err = fn(&bound); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	runAll(hooks)
	runAll(after)
	return nil
}

func runAll(fns []func()) {
	for _, fn := range fns {
		fn()
	}
}

// AfterCommit runs fn once this Store's transaction has committed (at once
// outside a transaction), on the goroutine that called InTx, before InTx
// returns; a rolled-back transaction drops it. It is the one way domain
// code acts on a commit: publish its events, wake what waits for it.
func (s *Store) AfterCommit(fn func()) {
	if s.after == nil {
		fn()
		return
	}
	*s.after = append(*s.after, fn)
}

// onCommit is AfterCommit for the store's own caches: on SQLite it runs on
// the committer's goroutine in commit order, so a later commit's state is
// never overwritten by an earlier one's.
func (s *Store) onCommit(fn func()) {
	if s.hooks == nil {
		fn()
		return
	}
	*s.hooks = append(*s.hooks, fn)
}

// queryRowNative runs a query of one row on PostgreSQL, outside a
// transaction, through pgx itself, and hands the row to scan. pgx's
// database/sql adapter builds a value function for each column of every
// query it answers (stdlib.Rows.initValueFuncs) and converts each value
// twice: a read of an activation's 23 columns, which every poll of a run
// makes, cost some 60 allocations more that way. No row is sql.ErrNoRows,
// as QueryRow's.
func (s *Store) queryRowNative(ctx context.Context, query string, args []any, scan func(row interface{ Scan(...any) error }) error) error {
	conn, err := s.read.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		pc, err := pgxConn(dc)
		if err != nil {
			return err
		}
		err = scan(pc.QueryRow(ctx, query, args...))
		if errors.Is(err, pgx.ErrNoRows) {
			return sql.ErrNoRows
		}
		return err
	})
}

func (s *Store) reader() querier {
	if s.tx == nil {
		return s.read
	}
	return s.writer()
}

func (s *Store) writer() querier {
	switch {
	case s.shared:
		return uncancelled{s.tx}
	case s.tx != nil:
		return s.tx
	}
	return s.write
}

// uncancelled runs statements of a shared transaction without their
// callers' cancellation (see committer.run).
type uncancelled struct{ tx *sql.Tx }

func (u uncancelled) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return u.tx.ExecContext(context.WithoutCancel(ctx), q, args...)
}

func (u uncancelled) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return u.tx.QueryContext(context.WithoutCancel(ctx), q, args...)
}

func (u uncancelled) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return u.tx.QueryRowContext(context.WithoutCancel(ctx), q, args...)
}

// ts converts a time into the value the dialect stores. Times are kept at
// microsecond precision, PostgreSQL's, so a value reads back as written.
func (s *Store) ts(t time.Time) any {
	return s.d.ts(t.UTC().Truncate(time.Microsecond))
}

// tsPtr is ts for an optional time: nil stays NULL.
func (s *Store) tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return s.ts(*t)
}

// Now is the current time at the precision the store keeps.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// nullTime turns a scanned sql.NullTime into a *time.Time in UTC.
func nullTime(nt sql.NullTime) *time.Time {
	if !nt.Valid {
		return nil
	}
	t := nt.Time.UTC()
	return &t
}

// mapErr turns driver errors into the store's sentinel errors.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return ErrNotFound
	case isUniqueViolation(err):
		return fmt.Errorf("%w: %v", ErrConflict, err)
	}
	return err
}

// isForeignKeyViolation reports whether err is an insert that named a row
// that is gone (an activation of an agent deleted meanwhile).
func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23503"
	}
	var sqErr *sqlite.Error
	return errors.As(err, &sqErr) && sqErr.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505"
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		return sqErr.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || sqErr.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// strings runs a query of one text column and returns its values.
func (s *Store) strings(ctx context.Context, q string, args ...any) ([]string, error) {
	return queryAll(ctx, s.reader(), scanString, q, args...)
}

// statement is a statement's SQL and its arguments.
type statement struct {
	sql  string
	args []any
}

// param is a statement's numbered parameter.
var param = regexp.MustCompile(`\$[0-9]+`)

// shifted is query with its parameters $n renumbered $n+by: a statement
// written to stand alone, joined into a larger one after by arguments.
func shifted(query string, by int) string {
	return param.ReplaceAllStringFunc(query, func(p string) string {
		n, _ := strconv.Atoi(p[1:])
		return "$" + strconv.Itoa(n+by)
	})
}

// scanString reads a one-column row of text.
func scanString(row interface{ Scan(...any) error }, v *string) error { return row.Scan(v) }

// expectOne reports ErrNotFound when an UPDATE or DELETE touched no row.
func expectOne(res sql.Result, err error) error {
	if err != nil {
		return mapErr(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// redact hides the password of a database URL.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
