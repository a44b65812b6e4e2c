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

// EventAppend assigns e.Seq, the user's next number, and stores e. Called
// inside a transaction, the user's counter row stays locked until commit, so
// a concurrent append of the same user waits and takes the next number: seq
// order is commit order. Append late in a long transaction for that reason.
func (s *Store) EventAppend(ctx context.Context, e *EventRow) error {
	return s.InTx(ctx, func(tx *Store) error {
		err := tx.writer().QueryRowContext(ctx, `
			INSERT INTO event_counters (user_id, seq) VALUES ($1, 1)
			ON CONFLICT (user_id) DO UPDATE SET seq = event_counters.seq + 1
			RETURNING seq`, e.UserID).Scan(&e.Seq)
		if err != nil {
			return mapErr(err)
		}
		_, err = tx.writer().ExecContext(ctx, `
			INSERT INTO events (user_id, seq, type, activation_id, app_id, chat_id, payload, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			e.UserID, e.Seq, e.Type, nullable(e.ActivationID), nullable(e.AppID), nullable(e.ChatID), string(e.Payload), tx.ts(e.CreatedAt))
		return mapErr(err)
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
// in seq order.
func (s *Store) EventListAfter(ctx context.Context, userID string, after int64, limit int) ([]EventRow, error) {
	return queryAll(ctx, s.reader(), scanEvent, `SELECT `+eventColumns+` FROM events
		WHERE user_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, userID, after, limit)
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
	if s.dialect != Postgres {
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

// EventNotify sends payload (under 8000 bytes) on channel to every listener.
func (s *Store) EventNotify(ctx context.Context, channel, payload string) error {
	if s.dialect != Postgres {
		return ErrNoNotify
	}
	_, err := s.write.ExecContext(ctx, `SELECT pg_notify($1, $2)`, channel, payload)
	return err
}

// EventListen holds one connection of the pool for LISTEN on channel and
// calls fn with each notification's payload until ctx ends or the
// connection fails; it returns why. ready is called once LISTEN is in
// effect. The connection is discarded afterwards, never handed back to the
// pool still listening.
func (s *Store) EventListen(ctx context.Context, channel string, ready func(), fn func(payload string)) error {
	if s.dialect != Postgres {
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
