package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
)

// postgresDialect is PostgreSQL's SQL (pgx through database/sql).
type postgresDialect struct{}

func (postgresDialect) name() Dialect     { return Postgres }
func (postgresDialect) multiNode() bool   { return true }
func (postgresDialect) writableCTE() bool { return true }
func (postgresDialect) forUpdate() string { return " FOR UPDATE" }
func (postgresDialect) skipLocked(table string) string {
	return " FOR UPDATE OF " + table + " SKIP LOCKED"
}
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

func (postgresDialect) indexedBy(table, _ string) string { return table }

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

// appendEvents takes the seqs from the transaction's id: (xid + base) <<
// SeqBits, plus the event's number in the transaction. No row is locked,
// so a user's transactions never wait for each other; the rows of one
// transaction are in order, and transactions are ordered by xid, which is
// not commit order: eventHorizon is what makes a seq final. base
// (event_seq_base, one row) keeps seqs above those of the counters they
// replaced and of a restored dump (migrate.go).
func (postgresDialect) appendEvents(ctx context.Context, s *Store, rows []*EventRow, first int64, lead statement) error {
	with, args := eventsInsert(s, rows, first, lead, "")
	var prefix int64
	if err := s.writer().QueryRowContext(ctx, with+` SELECT prefix FROM x`, args...).Scan(&prefix); err != nil {
		return err
	}
	numberEvents(rows, prefix, first)
	return nil
}

// eventsInsert is the WITH clause of appendEvents: lead's queries, then
// x, the transaction's seq prefix, and ins, the insert of rows, which
// writes only if cond holds (when it is not empty). The statement's
// SELECT is the caller's.
func eventsInsert(s *Store, rows []*EventRow, first int64, lead statement, cond string) (string, []any) {
	args := lead.args[:len(lead.args):len(lead.args)]
	// The rows' users, each once: a claim's rows are many users'.
	users := map[string]int{}
	var values strings.Builder
	for i, e := range rows {
		if i > 0 {
			values.WriteString(", ")
		}
		user, ok := users[e.UserID]
		if !ok {
			args = append(args, e.UserID)
			user = len(args)
			users[e.UserID] = user
		}
		p := len(args)
		fmt.Fprintf(&values, "(%d, $%d::uuid, $%d::text, $%d::uuid, $%d::text, $%d::text, $%d::jsonb, $%d::timestamptz)", first+int64(i), user, p+1, p+2, p+3, p+4, p+5, p+6)
		args = append(args, e.Type, nullable(e.ActivationID), nullable(e.AppID), nullable(e.ChatID), string(e.Payload), s.ts(e.CreatedAt))
	}
	with := "WITH "
	if lead.sql != "" {
		with += lead.sql + ", "
	}
	where := ""
	if cond != "" {
		where = " WHERE " + cond
	}
	return with + `x AS (SELECT (pg_current_xact_id()::text::bigint + base) << ` + seqBitsSQL + ` AS prefix FROM event_seq_base),
		ins AS (
			INSERT INTO events (` + eventColumns + `)
			SELECT v.user_id, x.prefix + v.n, v.type, v.activation_id, v.app_id, v.chat_id, v.payload, v.created_at
			FROM x, (VALUES ` + values.String() + `) AS v(n, user_id, type, activation_id, app_id, chat_id, payload, created_at)` + where + `)`, args
}

// numberEvents gives rows their seqs: prefix is the transaction's, first
// the number in it of the first row.
func numberEvents(rows []*EventRow, prefix, first int64) {
	for i, e := range rows {
		e.Seq = prefix + first + int64(i)
	}
}

// eventHorizon is the seq prefix of the oldest transaction still open
// (the snapshot's xmin): every transaction below it has ended, and every
// later one gets a larger xid, so no event will ever be stored below it.
// The snapshot is the statement's own, so what the statement reads below
// the horizon has all committed and is all visible to it. It is the same
// for every user: an old open transaction anywhere in the cluster holds
// it back (delaying live delivery, never reordering it).
func (postgresDialect) eventHorizon(string) string {
	return "((pg_snapshot_xmin(pg_current_snapshot())::text::bigint + (SELECT base FROM event_seq_base)) << " + seqBitsSQL + ")"
}

var seqBitsSQL = strconv.Itoa(SeqBits)

// rebaseEvents raises event_seq_base when the next transaction's seqs
// would not be above every stored one: after a dump is restored into a
// cluster whose transaction ids are lower than the source's. It runs at
// every start, under the migration lock, and in the usual case changes
// nothing: one probe of the events index per user.
func (postgresDialect) rebaseEvents(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, `
		UPDATE event_seq_base SET base = m.top + 1 - pg_snapshot_xmax(pg_current_snapshot())::text::bigint
		FROM (SELECT COALESCE(max((SELECT max(seq) FROM events e WHERE e.user_id = u.id)), 0) >> `+seqBitsSQL+` AS top FROM users u) m
		WHERE pg_snapshot_xmax(pg_current_snapshot())::text::bigint + base <= m.top`)
	if err != nil {
		return fmt.Errorf("store: rebase event seqs: %w", err)
	}
	return nil
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

// pgxConn is the pgx connection under a database/sql one, as sql.Conn.Raw
// hands it over, for what database/sql cannot do (LISTEN) or does at a
// cost (a poll's read: queryRowNative).
func pgxConn(dc any) (*pgx.Conn, error) {
	sc, ok := dc.(*stdlib.Conn)
	if !ok {
		return nil, fmt.Errorf("store: unexpected driver connection %T", dc)
	}
	return sc.Conn(), nil
}
