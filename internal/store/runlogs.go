package store

import (
	"context"
	"encoding/json"
	"time"
)

// RunLogs are the logs of one run (an activation or an execution).
type RunLogs struct {
	RunID     string
	UserID    string
	AppID     string
	Logs      json.RawMessage // [{ts, level, message}]
	Truncated bool
	CreatedAt time.Time
}

// RunLogsPut stores the logs of a run, replacing those of an earlier
// attempt of it.
func (s *Store) RunLogsPut(ctx context.Context, l *RunLogs) error {
	_, err := s.writer().ExecContext(ctx, `INSERT INTO run_logs (run_id, user_id, app_id, logs, truncated, created_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (run_id) DO UPDATE SET logs = excluded.logs, truncated = excluded.truncated, created_at = excluded.created_at`,
		l.RunID, l.UserID, l.AppID, string(l.Logs), l.Truncated, s.ts(l.CreatedAt))
	return mapErr(err)
}

// RunLogsGet returns the logs of the user's run, or ErrNotFound when it
// wrote none.
func (s *Store) RunLogsGet(ctx context.Context, userID, runID string) (*RunLogs, error) {
	l := RunLogs{RunID: runID, UserID: userID}
	var logs []byte
	err := s.reader().QueryRowContext(ctx, `SELECT app_id, logs, truncated, created_at FROM run_logs WHERE run_id = $1 AND user_id = $2`,
		runID, userID).Scan(&l.AppID, &logs, &l.Truncated, &l.CreatedAt)
	l.Logs = logs
	return &l, mapErr(err)
}
