package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver"
)

// dialect is what differs between the databases, behind one seam (River's
// riverdriver, scaled down): the store's methods write one SQL text and ask
// the dialect for the fragments that must differ, and for the few
// statements that differ whole. Everything else, and every test
// (testdb.ForEach), is shared. sqliteDialect and postgresDialect are the
// two implementations.
type dialect interface {
	name() Dialect

	// multiNode reports whether several processes may serve the database
	// at once: what LISTEN/NOTIFY, row locks and advisory locks are for.
	// SQLite is served by one process (Store.Exclusive) with one writer
	// connection, so a write transaction already holds the whole database.
	multiNode() bool

	// writableCTE reports whether a WITH clause may hold an INSERT, so
	// that two writes go as one statement (PostgreSQL; not SQLite).
	writableCTE() bool

	// forUpdate is the clause that locks the rows a SELECT reads until the
	// transaction ends ("" where a write transaction holds the database).
	forUpdate() string
	// skipLocked is forUpdate of table's rows (a name or an alias in the
	// FROM list) that passes over rows another transaction holds instead
	// of waiting for them: what several workers taking queued rows at
	// once need.
	skipLocked(table string) string
	// lockTable is the statement that keeps other writers of table out
	// until the transaction ends, or "".
	lockTable(table string) string

	// cast is expr as a value of type (a PostgreSQL type name): for a
	// parameter in a select list, which has no type of its own, or a uuid
	// column compared with text. SQLite's dynamic types need none.
	cast(expr, typ string) string
	// octets is the size in bytes of expr's stored value.
	octets(expr string) string
	// millisBetween is the whole milliseconds from timestamp from to to.
	millisBetween(from, to string) string
	// ts is the value a timestamp is stored as.
	ts(t time.Time) any

	// jsonStore is the SQL that stores the JSON text bound at p in a
	// column jsonLoad reads.
	jsonStore(p string) string
	// jsonLoad is column col read back as JSON text.
	jsonLoad(col string) string
	// jsonPath is the path, bound as a parameter, of a top-level field.
	jsonPath(field string) string
	// jsonField is the field at the bound path p of data, typed for
	// compare (CompareText, CompareNumber, CompareBool).
	jsonField(p, compare string) string
	// jsonValue is v as jsonField's SQL compares it.
	jsonValue(v any, compare string) any

	// indexedBy is table in a FROM clause, read through index where the
	// database needs telling: SQLite has no statistics (no ANALYZE runs)
	// and, between two indexes that both serve a query, may take the one
	// that makes it walk a user's whole history.
	indexedBy(table, index string) string

	// appendEvents stores the rows, all of one user, and sets their Seq,
	// consecutive and in order; first is how many events the transaction
	// has appended before (PostgreSQL numbers them within the transaction).
	// lead, if any, are writes that go first in the same statement, as
	// WITH queries ("name AS (…), …", their parameters first), so that
	// writes and their events are one round trip: only where writableCTE.
	appendEvents(ctx context.Context, s *Store, rows []*EventRow, first int64, lead statement) error
	// eventHorizon is the SQL of a seq below which the events of the user
	// bound at userParam are final: stored, and none will ever be added
	// below it. Read in the same statement as the events it bounds.
	eventHorizon(userParam string) string
	// rebaseEvents makes sure the next seqs are above every stored one
	// (Migrate runs it at every start).
	rebaseEvents(ctx context.Context, db *sql.DB) error

	// migrations names the dialect's migration directory and goose's
	// dialect; riverDriver is River's driver over db.
	migrations() (dir string, d goose.Dialect)
	riverDriver(db *sql.DB) riverdriver.Driver[*sql.Tx]
	// lockMigrations keeps the other processes from migrating until the
	// returned unlock is called.
	lockMigrations(ctx context.Context, db *sql.DB) (unlock func(), err error)
}
