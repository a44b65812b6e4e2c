// Package queue owns the River client: the durable job queue that lives in
// the platform's own database, so a job is inserted in the same transaction
// as the rows it belongs to. Domain packages add their workers and periodic
// jobs before Start; a node started without workers (serve --no-worker) still
// inserts jobs, and worker nodes run them.
package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/agentplatform/agentplatform/internal/fairshare"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Options tune the queue.
type Options struct {
	// RunWorkers makes this process work jobs (serve without --no-worker,
	// and the worker command).
	RunWorkers bool
	// Workers is how many activations this process holds in flight at
	// once (AP_MAX_INFLIGHT): they mostly wait, so this is no CPU bound.
	Workers int
	// FetchPollInterval is how often an idle worker looks for new jobs when
	// it is not notified of them; zero means River's default.
	FetchPollInterval time.Duration
	// BackgroundPollInterval is FetchPollInterval for the queues whose
	// jobs may wait a moment (the housekeeping, and queues added with
	// AddBackgroundQueue); zero means FetchPollInterval. Every queue polls
	// on its own: at 20 ms, five queues on each of two worker nodes were
	// 500 fetches a second, most of them finding nothing, more PostgreSQL
	// CPU than the activations they ran beside.
	BackgroundPollInterval time.Duration
	// FetchCooldown is the least time between two fetches; zero means
	// River's default (100 ms), far too slow for short activations.
	FetchCooldown time.Duration
	// ClientID names this process to River, which records it in the
	// attempted_by of every job it fetches: the activation worker's id, so
	// that the reaper can tell a dead process's jobs (RescueStranded).
	// Empty means River's own random id.
	ClientID string
	// Middleware wraps job inserts and work (tracing, when it is on).
	Middleware []rivertype.Middleware
}

// Activations is the queue of activation jobs, apart from webhook
// deliveries and housekeeping: pausing activations (an admin's POST
// /api/v1/worker/pause) must not stop those.
const Activations = "activations"

// housekeepingWorkers bounds the default queue: periodic clean-ups (and
// webhook deliveries enqueued before they had a queue of their own).
const housekeepingWorkers = 4

// River hands a job whose worker died back to the queue only after
// RescueStuckJobsAfter, and its timeout (the job's own, else the default
// below), have passed; its default, an hour, would leave a webhook
// delivery or a housekeeping job that long when its process died. The
// platform's jobs are idempotent (a duplicate's claim is a no-op), so
// rescuing early is safe; River requires the default job timeout below
// it. Jobs without a timeout (activations, pipeline steps) River never
// rescues: the reaper does, by the dead worker (RescueStranded).
const (
	rescueStuckJobsAfter = 30 * time.Second
	defaultJobTimeout    = 25 * time.Second
)

// Queue is the River client of this process.
type Queue struct {
	store    *store.Store
	log      *slog.Logger
	opts     Options
	workers  *river.Workers
	periodic []*river.PeriodicJob
	queues   map[string]int // added by domain packages: name → workers
	// background are the added queues that poll at BackgroundPollInterval.
	background map[string]bool
	client     *river.Client[*sql.Tx]
	started    bool
}

// New returns a queue; add workers, then Start.
func New(s *store.Store, log *slog.Logger, opts Options) *Queue {
	return &Queue{store: s, log: log, opts: opts, workers: river.NewWorkers()}
}

// AddWorker registers the worker of one job kind.
func AddWorker[T river.JobArgs](q *Queue, w river.Worker[T]) { river.AddWorker(q.workers, w) }

// AddQueue adds a queue of its own to a domain's jobs, worked by at most
// maxWorkers at once in this process, apart from the activations and the
// housekeeping.
func (q *Queue) AddQueue(name string, maxWorkers int) {
	if q.queues == nil {
		q.queues = map[string]int{}
	}
	q.queues[name] = max(1, maxWorkers)
}

// AddBackgroundQueue is AddQueue for jobs that may wait a moment to be
// fetched (Options.BackgroundPollInterval): deliveries, refreshes.
func (q *Queue) AddBackgroundQueue(name string, maxWorkers int) {
	q.AddQueue(name, maxWorkers)
	if q.background == nil {
		q.background = map[string]bool{}
	}
	q.background[name] = true
}

// AddPeriodic schedules a job that River's elected leader inserts on its
// interval (once across all nodes).
func (q *Queue) AddPeriodic(j *river.PeriodicJob) { q.periodic = append(q.periodic, j) }

// Client is the River client, for InsertTx; valid after Start.
func (q *Queue) Client() *river.Client[*sql.Tx] { return q.client }

// Start builds the client and, with RunWorkers, starts working jobs.
func (q *Queue) Start(ctx context.Context) error {
	cfg := &river.Config{
		ID: q.opts.ClientID,
		// River logs its own chatter at info; ours stays readable.
		Logger:               slog.New(levelFloor{q.log.Handler(), slog.LevelWarn}),
		ErrorHandler:         failureLog{q.log},
		Workers:              q.workers,
		FetchPollInterval:    q.opts.FetchPollInterval,
		FetchCooldown:        q.opts.FetchCooldown,
		JobTimeout:           defaultJobTimeout,
		RescueStuckJobsAfter: rescueStuckJobsAfter,
		Middleware:           q.opts.Middleware,
	}
	if q.opts.RunWorkers {
		cfg.Queues = map[string]river.QueueConfig{
			// The activation slots are a fairshare.Shared pool of
			// Workers, which lends a few more to a user below their
			// share: as many River workers, so that a lent slot's job
			// can be fetched while another user's fill the rest. River
			// takes at most QueueNumWorkersMax; past that, the local
			// fast path (activation/local.go) holds the rest.
			Activations:        {MaxWorkers: activationWorkers(q.opts.Workers)},
			river.QueueDefault: {MaxWorkers: housekeepingWorkers, FetchPollInterval: q.opts.BackgroundPollInterval},
		}
		for name, n := range q.queues {
			c := river.QueueConfig{MaxWorkers: n}
			if q.background[name] {
				c.FetchPollInterval = q.opts.BackgroundPollInterval
			}
			cfg.Queues[name] = c
		}
		cfg.PeriodicJobs = q.periodic
	}
	client, err := river.NewClient(q.store.RiverDriver(), cfg)
	if err != nil {
		return err
	}
	q.client = client
	if !q.opts.RunWorkers {
		return nil
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	q.started = true
	return nil
}

// activationWorkers is River's worker count for the activations of an
// in-flight bound of n: the bound and what its pool lends, within what
// River accepts.
func activationWorkers(n int) int {
	n = max(1, n)
	return min(n+fairshare.Overdraft(n), river.QueueNumWorkersMax)
}

// Stop lets running jobs finish until ctx ends, then cancels them; River
// hands unfinished jobs back to the queue. Safe to call more than once.
func (q *Queue) Stop(ctx context.Context) error {
	if !q.started {
		return nil
	}
	q.started = false
	err := q.client.Stop(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		hard, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return q.client.StopAndCancel(hard)
	}
	return err
}

// levelFloor drops records below a level, whatever the wrapped handler
// would accept.
type levelFloor struct {
	slog.Handler
	min slog.Level
}

func (h levelFloor) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}
func (h levelFloor) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFloor{h.Handler.WithAttrs(a), h.min}
}
func (h levelFloor) WithGroup(n string) slog.Handler {
	return levelFloor{h.Handler.WithGroup(n), h.min}
}

// failureLog logs a job's failure as River did before v0.33 (which
// demoted it to info, below levelFloor): a warning while River retries,
// an error once it gives up or the job panicked. Explicit cancels
// (river.JobCancel) and jobs interrupted by Stop do not reach it.
type failureLog struct{ log *slog.Logger }

func (f failureLog) HandleError(ctx context.Context, job *rivertype.JobRow, err error) *river.ErrorHandlerResult {
	level, msg := slog.LevelWarn, "queue job failed; retrying"
	if job.Attempt >= job.MaxAttempts {
		level, msg = slog.LevelError, "queue job failed"
	}
	f.log.Log(ctx, level, msg, "job_kind", job.Kind, "job_id", job.ID, "attempt", job.Attempt, "err", err)
	return nil
}

func (f failureLog) HandlePanic(ctx context.Context, job *rivertype.JobRow, panicVal any, trace string) *river.ErrorHandlerResult {
	f.log.ErrorContext(ctx, "queue job panicked", "job_kind", job.Kind, "job_id", job.ID, "attempt", job.Attempt,
		"panic", fmt.Sprint(panicVal), "trace", trace)
	return nil
}

// InsertTx inserts a job in tx's transaction, so that it exists exactly
// when the rows it belongs to do; outside a transaction it is inserted on
// its own. The *sql.Tx stays between the store and the queue.
func (q *Queue) InsertTx(ctx context.Context, tx *store.Store, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	rctx, rtx, ok := tx.RiverTx(ctx)
	if !ok {
		return q.client.Insert(ctx, args, opts)
	}
	return q.client.InsertTx(rctx, rtx, args, opts)
}

// InsertMany inserts jobs on their own, in one statement.
func (q *Queue) InsertMany(ctx context.Context, jobs []river.InsertManyParams) error {
	if len(jobs) == 0 {
		return nil
	}
	_, err := q.client.InsertMany(ctx, jobs)
	return err
}
