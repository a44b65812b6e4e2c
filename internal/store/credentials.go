package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"
)

// CredentialsValid returns which of userID's sessions and API keys among
// those given are still valid at now (not deleted or revoked, not expired,
// their user active), with their expiry (nil: none). Long-lived connections
// ask it again when their user's credentials change: one read per kind,
// however many connections.
func (s *Store) CredentialsValid(ctx context.Context, userID string, sessionIDs []string, keyIDs []int64, now time.Time) (
	sessions map[string]time.Time, keys map[int64]*time.Time, err error) {
	sessions, keys = map[string]time.Time{}, map[int64]*time.Time{}
	if len(sessionIDs) > 0 {
		args := []any{userID, s.ts(now)}
		for _, id := range sessionIDs {
			args = append(args, id)
		}
		err = s.credentialRows(ctx, `SELECT s.id, s.expires_at FROM sessions s JOIN users u ON u.id = s.user_id
			WHERE s.user_id = $1 AND s.expires_at > $2 AND u.is_active AND s.id IN (`+placeholders(3, len(sessionIDs))+`)`, args,
			func(rows *sql.Rows) error {
				var id string
				var until time.Time
				if err := rows.Scan(&id, &until); err != nil {
					return err
				}
				sessions[id] = until
				return nil
			})
		if err != nil {
			return nil, nil, err
		}
	}
	if len(keyIDs) > 0 {
		args := []any{userID, s.ts(now)}
		for _, id := range keyIDs {
			args = append(args, id)
		}
		err = s.credentialRows(ctx, `SELECT k.id, k.expires_at FROM api_keys k JOIN users u ON u.id = k.user_id
			WHERE k.user_id = $1 AND (k.expires_at IS NULL OR k.expires_at > $2) AND u.is_active AND k.id IN (`+placeholders(3, len(keyIDs))+`)`, args,
			func(rows *sql.Rows) error {
				var id int64
				var until sql.NullTime
				if err := rows.Scan(&id, &until); err != nil {
					return err
				}
				keys[id] = nullTime(until)
				return nil
			})
		if err != nil {
			return nil, nil, err
		}
	}
	return sessions, keys, nil
}

func (s *Store) credentialRows(ctx context.Context, query string, args []any, scan func(*sql.Rows) error) error {
	rows, err := s.reader().QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// placeholders is "$from, $from+1, …", n of them.
func placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(from+i))
	}
	return b.String()
}
