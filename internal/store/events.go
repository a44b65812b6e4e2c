package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// EventRow is one stored event of a user; Payload is the event's JSON.
type EventRow struct {
	UserID       string
	Seq          int64
	Type         string
	ActivationID string
	AppID        string
	ChatID       string
	Payload      []byte
	CreatedAt    time.Time
}

// SeqBits is how many low bits of a PostgreSQL seq number the events of
// one transaction: seq = (xid + base) << SeqBits | n (dialect_postgres.go).
// 12 bits allow 4096 events per transaction (a run's take a handful; a
// group commit of 256 runs, a thousand) and leave 41 bits of xid before a
// seq passes 2^53, the largest integer a JavaScript client reads exactly:
// 2.2e12 transactions, seven years at 10,000 a second.
const SeqBits = 12

// EventAppend assigns each row's Seq and stores the rows; one user's rows
// of one call take increasing numbers, in order (consecutive when the
// rows are all that user's).
// Seqs increase per user but need not be dense: on SQLite they come from
// the user's counter (the one writer commits one transaction at a time, so
// a counter costs no waiting and seq order is commit order); on PostgreSQL
// from the appending transaction's id, so that no row is locked and a
// user's transactions, on any node, never wait for each other. A
// transaction may append several times. Readers see a seq only once no
// lower one can still commit (eventHorizon).
//
// The rows may be of several users (a worker's claim starts many users'
// runs): on PostgreSQL one statement numbers them all from the
// transaction, on SQLite each user's counter numbers theirs.
func (s *Store) EventAppend(ctx context.Context, rows ...*EventRow) error {
	if len(rows) == 0 {
		return nil
	}
	return s.InTx(ctx, func(tx *Store) error { return tx.appendEvents(ctx, rows, statement{}) })
}

// byUser splits rows by user, each user's in order, users in the order
// they first come.
func byUser(rows []*EventRow) [][]*EventRow {
	if oneUser(rows) == nil {
		return [][]*EventRow{rows}
	}
	at := map[string]int{}
	var out [][]*EventRow
	for _, r := range rows {
		i, ok := at[r.UserID]
		if !ok {
			i = len(out)
			at[r.UserID] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}

// appendEvents is EventAppend in transaction s, with lead's writes
// first (dialect.appendEvents).
func (s *Store) appendEvents(ctx context.Context, rows []*EventRow, lead statement) error {
	first := *s.evN
	if first+int64(len(rows)) > 1<<SeqBits {
		return fmt.Errorf("store: event append: more than %d events in one transaction", 1<<SeqBits)
	}
	if err := s.d.appendEvents(ctx, s, rows, first, lead); err != nil {
		return mapErr(err)
	}
	*s.evN += int64(len(rows))
	return nil
}

// oneUser refuses rows of several users: one append numbers one user's.
func oneUser(rows []*EventRow) error {
	for _, e := range rows[1:] {
		if e.UserID != rows[0].UserID {
			return errors.New("store: event append: rows of several users")
		}
	}
	return nil
}

const eventColumns = `user_id, seq, type, activation_id, app_id, chat_id, payload, created_at`

func scanEvent(row interface{ Scan(...any) error }, e *EventRow) error {
	var activationID, appID, chatID sql.NullString
	if err := row.Scan(&e.UserID, &e.Seq, &e.Type, &activationID, &appID, &chatID, &e.Payload, &e.CreatedAt); err != nil {
		return err
	}
	e.ActivationID, e.AppID, e.ChatID = activationID.String, appID.String, chatID.String
	return nil
}

// EventListAfter returns up to limit of the user's events with seq > after,
// in seq order: fewer once they hold the page budget (queryPage), so that
// a replay holds one bounded batch at a time. It reads only below the
// horizon, so what it returns is final: no event will ever be stored
// between two it returned, nor before the first, and a reader that goes
// on from the last seq it got misses nothing.
func (s *Store) EventListAfter(ctx context.Context, userID string, after int64, limit int) ([]EventRow, error) {
	return queryPage(ctx, s, scanEvent, `SELECT `+eventColumns+` FROM events
		WHERE user_id = $1 AND seq > $2 AND seq < `+s.d.eventHorizon("$1")+` ORDER BY seq LIMIT $3`, userID, after, limit)
}

// EventLastSeq returns a seq below which the user's events are final and
// stored (0 before the first on SQLite): a client that replays from it
// later gets every event that commits after this call, and perhaps a few
// that committed just before.
func (s *Store) EventLastSeq(ctx context.Context, userID string) (int64, error) {
	next, err := s.eventNext(ctx, userID)
	return next - 1, err
}

func (s *Store) eventNext(ctx context.Context, userID string) (int64, error) {
	var next int64
	horizon := s.d.eventHorizon("$1")
	var args []any
	if strings.Contains(horizon, "$1") { // SQLite's is the user's
		args = append(args, userID)
	}
	err := s.reader().QueryRowContext(ctx, `SELECT `+horizon, args...).Scan(&next)
	return next, err
}

// EventSettle waits until every event committed before the call is final,
// so that EventListAfter reads it: on PostgreSQL, until every transaction
// that had an xid when it was called has ended (SQLite's are final once
// committed). For a check of what a finished piece of work stored; a
// client's replay needs no such wait, its live stream brings the rest.
func (s *Store) EventSettle(ctx context.Context) error {
	if !s.d.multiNode() {
		return nil
	}
	var until int64
	if err := s.reader().QueryRowContext(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&until); err != nil {
		return err
	}
	for {
		var xmin int64
		if err := s.reader().QueryRowContext(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`).Scan(&xmin); err != nil {
			return err
		}
		if xmin >= until {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// EventTail returns where a live stream of the user's events starts: next,
// below which every event is final and stored (EventListAfter reads
// them), and tail, the events already stored at or above next, in seq
// order: on PostgreSQL those of transactions that committed after the
// oldest one still open began (none on SQLite). Every later event commits
// after this call.
func (s *Store) EventTail(ctx context.Context, userID string) (next int64, tail []EventRow, err error) {
	if !s.d.multiNode() {
		next, err = s.eventNext(ctx, userID)
		return next, nil, err
	}
	rows, err := s.reader().QueryContext(ctx, `SELECT h.next, e.user_id, e.seq, e.type, e.activation_id, e.app_id, e.chat_id, e.payload, e.created_at
		FROM (SELECT `+s.d.eventHorizon("$1")+` AS next) h
		LEFT JOIN events e ON e.user_id = $1 AND e.seq >= h.next ORDER BY e.seq`, userID)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var seq sql.NullInt64
		var user, typ, activationID, appID, chatID sql.NullString
		var payload []byte
		var created sql.NullTime
		if err := rows.Scan(&next, &user, &seq, &typ, &activationID, &appID, &chatID, &payload, &created); err != nil {
			return 0, nil, err
		}
		if seq.Valid {
			tail = append(tail, EventRow{UserID: user.String, Seq: seq.Int64, Type: typ.String, ActivationID: activationID.String,
				AppID: appID.String, ChatID: chatID.String, Payload: payload, CreatedAt: created.Time})
		}
	}
	return next, tail, rows.Err()
}

// EventScan returns the horizon (every event below it is final and stored)
// and, for each of users, the seqs of their stored events after the
// matching entry of afters and below the horizon, in order: one statement
// for a node's whole tick of live delivery (PostgreSQL only: SQLite's
// dense seqs show what is missing without asking).
func (s *Store) EventScan(ctx context.Context, users []string, afters []int64) (horizon int64, seqs map[string][]int64, err error) {
	if !s.d.multiNode() {
		return 0, nil, errors.New("store: event scan needs PostgreSQL")
	}
	rows, err := s.reader().QueryContext(ctx, `SELECT h.next, e.user_id::text, e.seq
		FROM (SELECT `+s.d.eventHorizon("")+` AS next) h
		LEFT JOIN LATERAL (SELECT e.user_id, e.seq FROM unnest($1::uuid[], $2::bigint[]) AS q(user_id, after)
			JOIN events e ON e.user_id = q.user_id AND e.seq > q.after AND e.seq < h.next) e ON true
		ORDER BY e.user_id, e.seq`, users, afters)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	seqs = map[string][]int64{}
	for rows.Next() {
		var user sql.NullString
		var seq sql.NullInt64
		if err := rows.Scan(&horizon, &user, &seq); err != nil {
			return 0, nil, err
		}
		if seq.Valid {
			seqs[user.String] = append(seqs[user.String], seq.Int64)
		}
	}
	return horizon, seqs, rows.Err()
}

// EventGet returns one stored event.
func (s *Store) EventGet(ctx context.Context, userID string, seq int64) (*EventRow, error) {
	var e EventRow
	err := scanEvent(s.reader().QueryRowContext(ctx, `SELECT `+eventColumns+` FROM events
		WHERE user_id = $1 AND seq = $2`, userID, seq), &e)
	return &e, mapErr(err)
}

// EventDeleteBefore removes events created before t. A user's seq keeps
// increasing after their old events are gone: SQLite's counters stay, and
// PostgreSQL's transaction ids only grow.
func (s *Store) EventDeleteBefore(ctx context.Context, t time.Time) (int64, error) {
	res, err := s.writer().ExecContext(ctx, `DELETE FROM events WHERE created_at < $1`, s.ts(t))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// ErrNoNotify means the dialect has no LISTEN/NOTIFY (SQLite: one process).
var ErrNoNotify = errors.New("store: LISTEN/NOTIFY needs PostgreSQL")

// EventChannel names the NOTIFY channel of this database's schema: nodes on
// one schema share it, and other schemas of the same database (tests, other
// installations) do not hear each other.
func (s *Store) EventChannel(ctx context.Context) (string, error) {
	if !s.d.multiNode() {
		return "", ErrNoNotify
	}
	var schema string
	if err := s.reader().QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return "", err
	}
	ch := "ap_events_" + schema
	if len(ch) > 63 { // PostgreSQL truncates identifiers to 63 bytes
		ch = ch[:63]
	}
	return ch, nil
}

// EventNotify sends the payloads (each under 8000 bytes), in order, on
// channel to every listener, in one transaction: NOTIFY takes a lock all
// notifying commits share, so each one costs every node a turn.
func (s *Store) EventNotify(ctx context.Context, channel string, payloads []string) error {
	if !s.d.multiNode() {
		return ErrNoNotify
	}
	_, err := s.write.ExecContext(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, channel, payloads)
	return err
}

// EventListen holds one connection of the pool for LISTEN on channel and
// calls fn with each notification's payload until ctx ends or the
// connection fails; it returns why. ready is called once LISTEN is in
// effect. The connection is discarded afterwards, never handed back to the
// pool still listening.
func (s *Store) EventListen(ctx context.Context, channel string, ready func(), fn func(payload string)) error {
	if !s.d.multiNode() {
		return ErrNoNotify
	}
	conn, err := s.write.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var cause error
	_ = conn.Raw(func(dc any) error {
		pc, err := pgxConn(dc)
		if err != nil {
			cause = err
			return driver.ErrBadConn
		}
		if _, err := pc.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
			cause = err
			return driver.ErrBadConn
		}
		ready()
		for {
			n, err := pc.WaitForNotification(ctx)
			if err != nil {
				cause = err
				return driver.ErrBadConn
			}
			fn(n.Payload)
		}
	})
	return cause
}
