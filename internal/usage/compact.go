package usage

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/store"
)

// CompactArgs is the periodic job that folds the daily sums' shards of
// days over into one row each (store.UsageCompact): on PostgreSQL every
// call adds to one of several rows of its day, so that one account's
// concurrent runs do not queue on one row, and a report over a month
// would otherwise read all of them for every day.
type CompactArgs struct{}

// Kind is the job's name in the queue.
func (CompactArgs) Kind() string { return "usage_compact" }

type compactWorker struct {
	river.WorkerDefaults[CompactArgs]
	svc *Service
}

func (w *compactWorker) Work(ctx context.Context, _ *river.Job[CompactArgs]) error {
	_, err := w.svc.Compact(ctx)
	return err
}

// Compact folds the shards of every day before today (UTC); it returns
// how many rows it wrote.
func (s *Service) Compact(ctx context.Context) (int64, error) {
	return s.store.UsageCompact(ctx, store.UsageDay(s.now()))
}

// AddJobs registers the compaction: hourly and at start, so a day's
// shards are folded within an hour of its end.
func (s *Service) AddJobs(q *queue.Queue) {
	queue.AddWorker(q, &compactWorker{svc: s})
	q.AddPeriodic(river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
		func() (river.JobArgs, *river.InsertOpts) { return CompactArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true, ID: "usage_compact"}))
}
