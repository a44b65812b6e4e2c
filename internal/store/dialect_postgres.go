package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
)

// postgresDialect is PostgreSQL's SQL (pgx through database/sql).
type postgresDialect struct{}

func (postgresDialect) name() Dialect      { return Postgres }
func (postgresDialect) multiNode() bool    { return true }
func (postgresDialect) forUpdate() string  { return " FOR UPDATE" }
func (postgresDialect) ts(t time.Time) any { return t }

func (postgresDialect) lockTable(table string) string {
	return "LOCK TABLE " + table + " IN SHARE ROW EXCLUSIVE MODE"
}

func (postgresDialect) cast(expr, typ string) string { return expr + "::" + typ }
func (postgresDialect) octets(expr string) string    { return "octet_length(" + expr + "::text)" }

func (postgresDialect) millisBetween(from, to string) string {
	return "CAST(EXTRACT(EPOCH FROM (" + to + " - " + from + ")) * 1000 AS BIGINT)"
}

func (postgresDialect) jsonStore(p string) string    { return p }
func (postgresDialect) jsonLoad(col string) string   { return col }
func (postgresDialect) jsonPath(field string) string { return field }

// jsonField: a value of another JSON type (stored before its field's type
// changed) is NULL, as a missing one: a cast of it would fail the whole
// list.
func (postgresDialect) jsonField(p, compare string) string {
	switch compare {
	case CompareNumber:
		return "(CASE WHEN jsonb_typeof(data->" + p + "::text) = 'number' THEN (data->>" + p + "::text)::numeric END)"
	case CompareBool:
		return "(CASE WHEN jsonb_typeof(data->" + p + "::text) = 'boolean' THEN (data->>" + p + "::text)::boolean END)"
	}
	return "(data->>" + p + "::text)"
}

func (postgresDialect) jsonValue(v any, compare string) any { return v }

// appendEvents bumps the counter and inserts the rows in one statement, so
// that the counter row's lock is held for that statement and the commit.
func (postgresDialect) appendEvents(ctx context.Context, s *Store, rows []*EventRow) (int64, error) {
	n := len(rows)
	args := []any{rows[0].UserID, n}
	var values strings.Builder
	for i, e := range rows {
		if i > 0 {
			values.WriteString(", ")
		}
		p := len(args)
		fmt.Fprintf(&values, "(%d, $%d::text, $%d::uuid, $%d::text, $%d::text, $%d::jsonb, $%d::timestamptz)", i+1, p+1, p+2, p+3, p+4, p+5, p+6)
		args = append(args, e.Type, nullable(e.ActivationID), nullable(e.AppID), nullable(e.ChatID), string(e.Payload), s.ts(e.CreatedAt))
	}
	var last int64
	err := s.writer().QueryRowContext(ctx, `
		WITH c AS (
			INSERT INTO event_counters (user_id, seq) VALUES ($1, $2)
			ON CONFLICT (user_id) DO UPDATE SET seq = event_counters.seq + excluded.seq
			RETURNING seq),
		ins AS (
			INSERT INTO events (`+eventColumns+`)
			SELECT $1, c.seq - $2 + v.n, v.type, v.activation_id, v.app_id, v.chat_id, v.payload, v.created_at
			FROM c, (VALUES `+values.String()+`) AS v(n, type, activation_id, app_id, chat_id, payload, created_at))
		SELECT seq FROM c`, args...).Scan(&last)
	return last, err
}

func (postgresDialect) migrations() (string, goose.Dialect) {
	return "migrations/postgres", goose.DialectPostgres
}

func (postgresDialect) riverDriver(db *sql.DB) riverdriver.Driver[*sql.Tx] {
	return riverdatabasesql.New(db)
}

// migrationLock is the PostgreSQL advisory lock key that serialises
// migrations when several nodes start at once.
const migrationLock = 7286401

func (postgresDialect) lockMigrations(ctx context.Context, db *sql.DB) (func(), error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		conn.Close()
		return nil, fmt.Errorf("store: migration lock: %w", err)
	}
	return func() {
		// Released with the connection anyway.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock)
		conn.Close()
	}, nil
}
