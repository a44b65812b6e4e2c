package credential

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Queue is the queue of background refreshes, apart from activations and
// housekeeping.
const Queue = "credentials"

// refreshWorkers bounds this process's concurrent background refreshes:
// enough for Options.RefreshRate against providers that take a few hundred
// milliseconds to answer; the rate, not this, bounds the CPU they use.
const refreshWorkers = 32

// scanBatch bounds the connections one scan hands out; the next scan takes
// the rest.
const scanBatch = 1000

// claimFor is how long a scan's claim on a due connection lasts: when its
// refresh job is lost, the connection is due again after that.
const claimFor = 2 * time.Minute

// ScanArgs is the periodic job that finds connections due for a refresh.
type ScanArgs struct{}

// Kind implements river.JobArgs.
func (ScanArgs) Kind() string { return "credential_refresh_scan" }

// RefreshArgs is the background refresh of one connection.
type RefreshArgs struct {
	ConnectionID string `json:"connection_id"`
}

// Kind implements river.JobArgs.
func (RefreshArgs) Kind() string { return "credential_refresh" }

// InsertOpts implements river.JobArgsWithInsertOpts: its queue, no River
// retries, since a failed refresh is retried on the connection's own
// schedule (Backoff), which its health shows, and one waiting job per
// connection: a scan that claims a connection again because its paced job
// has not run yet within claimFor adds none.
func (RefreshArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByArgs: true,
		ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateRetryable, rivertype.JobStateScheduled}}}
}

// AddJobs registers the refresher with q: the periodic scan (on River's
// leader only) and the refresh workers (on every worker node).
func (s *Service) AddJobs(q *queue.Queue) {
	s.queue = q
	q.AddBackgroundQueue(Queue, refreshWorkers)
	queue.AddWorker(q, &scanWorker{s: s})
	queue.AddWorker(q, &refreshWorker{s: s})
	q.AddPeriodic(river.NewPeriodicJob(river.PeriodicInterval(s.opts.ScanInterval),
		func() (river.JobArgs, *river.InsertOpts) { return ScanArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true, ID: "credential_refresh_scan"}))
}

type scanWorker struct {
	river.WorkerDefaults[ScanArgs]
	s *Service
}

func (w *scanWorker) Work(ctx context.Context, _ *river.Job[ScanArgs]) error {
	_, err := w.s.Scan(ctx)
	return err
}

// unpacedWithin is how close to its expiry a token's background refresh
// skips the pace.
const unpacedWithin = time.Minute

// stateKept is how long an expired authorization state is kept, so that
// a user who comes back late from the provider is told the attempt
// expired rather than that it is unknown.
const stateKept = time.Hour

// Scan claims the connections due for a refresh and enqueues a refresh
// job for each; it answers how many. Long-expired authorization states go
// too.
func (s *Service) Scan(ctx context.Context) (int, error) {
	now := s.now()
	if _, err := s.store.OAuthStateDeleteExpired(ctx, now.Add(-stateKept)); err != nil {
		return 0, err
	}
	total := 0
	for {
		ids, err := s.store.ConnectionsClaimDue(ctx, now, now.Add(claimFor), scanBatch)
		if err != nil {
			return total, err
		}
		jobs := make([]river.InsertManyParams, len(ids))
		for i, id := range ids {
			jobs[i] = river.InsertManyParams{Args: RefreshArgs{ConnectionID: id}}
		}
		if err := s.queue.InsertMany(ctx, jobs); err != nil {
			return total, err
		}
		total += len(ids)
		if len(ids) < scanBatch {
			return total, nil
		}
	}
}

type refreshWorker struct {
	river.WorkerDefaults[RefreshArgs]
	s *Service
}

func (w *refreshWorker) Timeout(*river.Job[RefreshArgs]) time.Duration {
	return leaseTTL + 10*time.Second
}

func (w *refreshWorker) Work(ctx context.Context, j *river.Job[RefreshArgs]) error {
	return w.s.refreshDue(ctx, j.Args.ConnectionID)
}

// refreshDue is the background refresh of connection id, unless it was
// refreshed since it was found due (on the spot, or by another job).
func (s *Service) refreshDue(ctx context.Context, id string) error {
	conn, err := s.store.ConnectionGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil // revoked or deleted meanwhile
	}
	if err != nil {
		return err
	}
	if !s.due(conn) {
		return nil
	}
	// Pacing must never let a token expire: one about to is refreshed at
	// once.
	if conn.ExpiresAt == nil || conn.ExpiresAt.Sub(s.now()) > unpacedWithin {
		if err := s.pace.Wait(ctx); err != nil {
			return err
		}
	}
	_, err = s.refresh(ctx, conn, false)
	return err
}

// due reports whether conn needs its background refresh now: a retry of a
// failing one, or tokens within their refresh time.
func (s *Service) due(c *store.Connection) bool {
	if c.Status == store.ConnDisconnected || c.RefreshTokenEnc == "" || c.ExpiresAt == nil {
		return false
	}
	if c.Status == store.ConnRefreshFailing {
		return true
	}
	issued := c.UpdatedAt
	if c.IssuedAt != nil {
		issued = *c.IssuedAt
	}
	return !s.now().Before(*nextRefresh(c, issued))
}
