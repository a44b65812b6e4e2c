package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riversqlite"
)

// sqliteDialect is SQLite's SQL (modernc).
type sqliteDialect struct{}

func (sqliteDialect) name() Dialect                 { return SQLite }
func (sqliteDialect) multiNode() bool               { return false }
func (sqliteDialect) writableCTE() bool             { return false }
func (sqliteDialect) forUpdate() string             { return "" }
func (sqliteDialect) skipLocked(string) string      { return "" }
func (sqliteDialect) lockTable(table string) string { return "" }
func (sqliteDialect) cast(expr, typ string) string  { return expr }

func (sqliteDialect) octets(expr string) string { return "length(CAST(" + expr + " AS BLOB))" }

func (sqliteDialect) millisBetween(from, to string) string {
	return "CAST(ROUND((julianday(" + to + ") - julianday(" + from + ")) * 86400000) AS INTEGER)"
}

// sqliteTime is the fixed-width UTC text SQLite stores timestamps as. Fixed
// width matters: the text is compared and sorted as text.
const sqliteTime = "2006-01-02T15:04:05.000000Z"

func (sqliteDialect) ts(t time.Time) any { return t.Format(sqliteTime) }

// SQLite keeps JSON as JSONB, its binary JSON, which filters and sorts
// read without parsing text, and gives it back as text.
func (sqliteDialect) jsonStore(p string) string    { return "jsonb(" + p + ")" }
func (sqliteDialect) jsonLoad(col string) string   { return "json(" + col + ")" }
func (sqliteDialect) jsonPath(field string) string { return `$."` + field + `"` }

func (sqliteDialect) indexedBy(table, index string) string { return table + " INDEXED BY " + index }

// jsonField compares mixed types without failing, so needs no guard.
func (sqliteDialect) jsonField(p, compare string) string { return "json_extract(data, " + p + ")" }

// jsonValue: json_extract reads true and false as 1 and 0.
func (sqliteDialect) jsonValue(v any, compare string) any {
	if compare != CompareBool {
		return v
	}
	if v == true {
		return 1
	}
	return 0
}

// appendEvents bumps each user's counter and inserts their rows. It has no
// data-modifying CTE, and needs none: the one writer runs one transaction
// at a time, so the counter costs no waiting, and seq order is commit
// order.
func (sqliteDialect) appendEvents(ctx context.Context, s *Store, rows []*EventRow, _ int64, lead statement) error {
	if lead.sql != "" {
		return errors.New("store: no writes in a WITH query on SQLite")
	}
	for _, one := range byUser(rows) {
		var last int64
		err := s.writer().QueryRowContext(ctx, `
			INSERT INTO event_counters (user_id, seq) VALUES ($1, $2)
			ON CONFLICT (user_id) DO UPDATE SET seq = event_counters.seq + excluded.seq
			RETURNING seq`, one[0].UserID, len(one)).Scan(&last)
		if err != nil {
			return err
		}
		for i, e := range one {
			e.Seq = last - int64(len(one)-1-i)
			_, err = s.writer().ExecContext(ctx, `INSERT INTO events (`+eventColumns+`)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
				e.UserID, e.Seq, e.Type, nullable(e.ActivationID), nullable(e.AppID), nullable(e.ChatID), string(e.Payload), s.ts(e.CreatedAt))
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// eventHorizon: every committed event is final, since a user's events
// commit in seq order; the counter bounds them all.
func (sqliteDialect) eventHorizon(userParam string) string {
	return "(COALESCE((SELECT seq FROM event_counters WHERE user_id = " + userParam + "), 0) + 1)"
}

// rebaseEvents: the counters carry on from the stored seqs.
func (sqliteDialect) rebaseEvents(context.Context, *sql.DB) error { return nil }

func (sqliteDialect) migrations() (string, goose.Dialect) {
	return "migrations/sqlite", goose.DialectSQLite3
}

func (sqliteDialect) riverDriver(db *sql.DB) riverdriver.Driver[*sql.Tx] { return riversqlite.New(db) }

// lockMigrations: one process opens the file at a time (Exclusive), and
// the migrations run on the one writer connection.
func (sqliteDialect) lockMigrations(context.Context, *sql.DB) (func(), error) { return func() {}, nil }
