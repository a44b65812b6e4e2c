package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"reflect"
	"runtime"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite parses and plans every statement it is given; for the short
// queries of this platform that costs more than running them (a third of an
// activation's CPU before this cache, in River's queries as much as ours).
// cachingConnector opens modernc connections that keep each statement
// prepared for the life of the connection, inside transactions too, so that
// every query, River's included, is parsed once per connection.
type cachingConnector struct {
	dsn string
	drv *sqlite.Driver
}

func (c cachingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	if err := stablePlans(conn); err != nil {
		conn.Close()
		return nil, err
	}
	return &cachingConn{conn: conn, stmts: map[string]*cachedStmt{}}, nil
}

func (c cachingConnector) Driver() driver.Driver { return c.drv }

// stablePlans turns on SQLite's query planner stability guarantee (QPSG)
// on conn. Without it SQLite plans a statement by a value bound to it
// where that value may change the plan (a LIMIT inside a subquery, a LIKE
// pattern) and prepares it again at every new binding: River's fetch was
// parsed at every poll despite the cache below. A statement's plan is
// then fixed once it is prepared, as the cache wants.
func stablePlans(conn driver.Conn) error {
	on, err := dbConfig(conn, sqlite3.SQLITE_DBCONFIG_ENABLE_QPSG, 1)
	if err == nil && on != 1 {
		err = fmt.Errorf("store: sqlite: the query planner stability guarantee stayed off")
	}
	return err
}

// dbConfig is sqlite3_db_config(db, op, onoff, &result) on conn, a
// modernc connection: a boolean setting (onoff -1 reads it) and what it
// is now. The driver offers no call for it, so the connection's handle
// is read from its unexported field; a driver that moved it fails here,
// loudly, rather than silently re-planning again.
func dbConfig(conn driver.Conn, op, onoff int32) (int32, error) {
	v := reflect.ValueOf(conn)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	var db reflect.Value
	if v.Kind() == reflect.Struct {
		db = v.FieldByName("db")
	}
	if !db.IsValid() || db.Kind() != reflect.Uintptr || db.Uint() == 0 {
		return 0, fmt.Errorf("store: the sqlite driver's connection has no handle to configure (modernc.org/sqlite changed?)")
	}
	tls := libc.NewTLS()
	defer tls.Close()
	// The varargs (int onoff, int *result), 8 bytes each as libc.VaList
	// packs them; result is Go memory, which the collector does not move.
	va := libc.Xmalloc(tls, 16)
	if va == 0 {
		return 0, fmt.Errorf("store: sqlite: out of memory")
	}
	defer libc.Xfree(tls, va)
	result := new(int32)
	*result = -1
	rc := sqlite3.Xsqlite3_db_config(tls, uintptr(db.Uint()), op, libc.VaList(va, onoff, uintptr(unsafe.Pointer(result))))
	runtime.KeepAlive(result)
	if rc != sqlite3.SQLITE_OK {
		return 0, fmt.Errorf("store: sqlite3_db_config(%d): code %d", op, rc)
	}
	return *result, nil
}

// maxCachedStmts bounds the cache; queries past it run unprepared.
const maxCachedStmts = 512

// cachingConn is one SQLite connection with its statement cache. database/sql
// uses a connection from one goroutine at a time, so no lock is needed.
type cachingConn struct {
	conn  driver.Conn
	stmts map[string]*cachedStmt
}

type cachedStmt struct {
	stmt driver.Stmt
	// busy is set while rows of the statement are open: a second query of
	// the same text meanwhile runs unprepared rather than resetting them.
	busy bool
}

// stmt returns the cached statement of query, preparing it the first time;
// nil means "run it unprepared".
func (c *cachingConn) stmt(ctx context.Context, query string) (*cachedStmt, error) {
	if cs, ok := c.stmts[query]; ok {
		if cs.busy {
			return nil, nil
		}
		return cs, nil
	}
	if len(c.stmts) >= maxCachedStmts {
		return nil, nil
	}
	st, err := c.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	cs := &cachedStmt{stmt: st}
	c.stmts[query] = cs
	return cs, nil
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cs, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	}
	return cs.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cs, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	}
	rows, err := cs.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	cs.busy = true
	return &releasingRows{Rows: rows, cs: cs}, nil
}

// releasingRows frees its statement for reuse when closed.
type releasingRows struct {
	driver.Rows
	cs *cachedStmt
}

func (r *releasingRows) Close() error {
	r.cs.busy = false
	return r.Rows.Close()
}

// ColumnTypeDatabaseTypeName keeps the declared column types visible: the
// driver turns TIMESTAMP text into time.Time by them.
func (r *releasingRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (c *cachingConn) Prepare(query string) (driver.Stmt, error) { return c.conn.Prepare(query) }

func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *cachingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *cachingConn) Ping(ctx context.Context) error { return c.conn.(driver.Pinger).Ping(ctx) }

func (c *cachingConn) ResetSession(ctx context.Context) error {
	return c.conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *cachingConn) IsValid() bool { return c.conn.(driver.Validator).IsValid() }

func (c *cachingConn) Close() error {
	for q, cs := range c.stmts {
		cs.stmt.Close()
		delete(c.stmts, q)
	}
	return c.conn.Close()
}
