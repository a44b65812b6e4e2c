package store

import (
	"context"
	"time"
)

// Worker is a process that runs activations.
type Worker struct {
	ID          string
	Hostname    string
	PID         int
	Version     string
	StartedAt   time.Time
	HeartbeatAt time.Time
	Running     int
	Concurrency int
}

// WorkerHeartbeat records that a worker is alive (inserting it the first
// time) with how many activations it runs now.
func (s *Store) WorkerHeartbeat(ctx context.Context, w *Worker) error {
	_, err := s.writer().ExecContext(ctx, `INSERT INTO workers (id, hostname, pid, version, started_at, heartbeat_at, running, concurrency)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, running = excluded.running`,
		w.ID, w.Hostname, w.PID, w.Version, s.ts(w.StartedAt), s.ts(w.HeartbeatAt), w.Running, w.Concurrency)
	return err
}

// WorkerDelete removes a worker (a clean stop, or a dead one reaped).
func (s *Store) WorkerDelete(ctx context.Context, id string) error {
	_, err := s.writer().ExecContext(ctx, `DELETE FROM workers WHERE id = $1`, id)
	return err
}

// WorkerList returns every registered worker, newest heartbeat first.
func (s *Store) WorkerList(ctx context.Context) ([]Worker, error) {
	return s.workers(ctx, `SELECT id, hostname, pid, version, started_at, heartbeat_at, running, concurrency
		FROM workers ORDER BY heartbeat_at DESC`)
}

// WorkersWithoutHeartbeat returns ids of workers that hold running
// activations or pipeline steps but have no worker row at all (a row
// deleted by a reaper that died halfway, or a worker that never heartbeat
// before dying).
func (s *Store) WorkersWithoutHeartbeat(ctx context.Context) ([]string, error) {
	return s.strings(ctx, `SELECT a.worker_id FROM activations a
		WHERE a.status = 'running' AND a.worker_id IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = a.worker_id)
		UNION SELECT r.worker_id FROM pipeline_runs r
		WHERE r.worker_id IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = r.worker_id)`)
}

func (s *Store) workers(ctx context.Context, q string, args ...any) ([]Worker, error) {
	return queryAll(ctx, s.reader(), func(row interface{ Scan(...any) error }, w *Worker) error {
		return row.Scan(&w.ID, &w.Hostname, &w.PID, &w.Version, &w.StartedAt, &w.HeartbeatAt, &w.Running, &w.Concurrency)
	}, q, args...)
}
