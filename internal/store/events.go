package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
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

// EventAppend assigns each row's Seq, the user's next numbers in order, and
// stores the rows, which must all be of one user. Called inside a
// transaction, the user's counter row stays locked until commit, so a
// concurrent append of the same user waits and takes the next numbers: seq
// order is commit order. That lock is what serialises a user's
// transactions, so append once, last, just before the commit: on
// PostgreSQL the whole append is one statement, and the lock is held for
// that statement and the commit only.
func (s *Store) EventAppend(ctx context.Context, rows ...*EventRow) error {
	if len(rows) == 0 {
		return nil
	}
	for _, e := range rows[1:] {
		if e.UserID != rows[0].UserID {
			return errors.New("store: event append: rows of several users")
		}
	}
	return s.InTx(ctx, func(tx *Store) error {
		last, err := tx.d.appendEvents(ctx, tx, rows)
		if err != nil {
			return mapErr(err)
		}
		for i, e := range rows {
			e.Seq = last - int64(len(rows)-1-i)
		}
		return nil
	})
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
// a replay holds one bounded batch at a time.
func (s *Store) EventListAfter(ctx context.Context, userID string, after int64, limit int) ([]EventRow, error) {
	return queryPage(ctx, s, scanEvent, `SELECT `+eventColumns+` FROM events
		WHERE user_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, userID, after, limit)
}

// EventLastSeq returns the last seq handed out to the user (0 before the
// first event): every event up to it has committed.
func (s *Store) EventLastSeq(ctx context.Context, userID string) (int64, error) {
	var seq int64
	err := s.reader().QueryRowContext(ctx, `SELECT seq FROM event_counters WHERE user_id = $1`, userID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

// EventGet returns one stored event.
func (s *Store) EventGet(ctx context.Context, userID string, seq int64) (*EventRow, error) {
	var e EventRow
	err := scanEvent(s.reader().QueryRowContext(ctx, `SELECT `+eventColumns+` FROM events
		WHERE user_id = $1 AND seq = $2`, userID, seq), &e)
	return &e, mapErr(err)
}

// EventDeleteBefore removes events created before t. The counters stay: a
// user's seq keeps increasing after their old events are gone.
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
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			cause = fmt.Errorf("store: listen: unexpected driver connection %T", dc)
			return driver.ErrBadConn
		}
		pc := sc.Conn()
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
