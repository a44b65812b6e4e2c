package queue

import (
	"context"
	"time"

	"github.com/riverqueue/river"
)

// SessionCleaner deletes expired sessions (auth.Service).
type SessionCleaner interface {
	CleanupSessions(ctx context.Context) (int64, error)
}

// SessionCleanupArgs is the periodic job that removes expired sessions.
type SessionCleanupArgs struct{}

// Kind is the job's name in the queue.
func (SessionCleanupArgs) Kind() string { return "session_cleanup" }

// SessionCleanupWorker runs SessionCleanupArgs.
type SessionCleanupWorker struct {
	river.WorkerDefaults[SessionCleanupArgs]
	Cleaner SessionCleaner
}

// Work deletes the expired sessions.
func (w *SessionCleanupWorker) Work(ctx context.Context, _ *river.Job[SessionCleanupArgs]) error {
	_, err := w.Cleaner.CleanupSessions(ctx)
	return err
}

// AddMaintenance registers the platform's housekeeping jobs.
func (q *Queue) AddMaintenance(c SessionCleaner) {
	AddWorker(q, &SessionCleanupWorker{Cleaner: c})
	q.AddPeriodic(river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
		func() (river.JobArgs, *river.InsertOpts) { return SessionCleanupArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true, ID: "session_cleanup"}))
}
