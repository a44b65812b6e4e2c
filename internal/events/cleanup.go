package events

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/agentplatform/agentplatform/internal/queue"
)

// CleanupArgs is the periodic job that deletes events past Retention.
type CleanupArgs struct{}

// Kind is the job's name in the queue.
func (CleanupArgs) Kind() string { return "event_cleanup" }

type cleanupWorker struct {
	river.WorkerDefaults[CleanupArgs]
	bus *Bus
}

func (w *cleanupWorker) Work(ctx context.Context, _ *river.Job[CleanupArgs]) error {
	_, err := w.bus.Cleanup(ctx)
	return err
}

// AddJobs registers the retention cleanup: hourly, so events live between
// Retention and Retention plus an hour. Not at start: nothing is due then
// that cannot wait an hour, and startup is when the writer is busiest.
func (b *Bus) AddJobs(q *queue.Queue) {
	queue.AddWorker(q, &cleanupWorker{bus: b})
	q.AddPeriodic(river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
		func() (river.JobArgs, *river.InsertOpts) { return CleanupArgs{}, nil },
		&river.PeriodicJobOpts{ID: "event_cleanup"}))
}
