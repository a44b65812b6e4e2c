package queue

import (
	"context"
	"encoding/json"
	"time"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
)

// rescueBatch bounds the running jobs read at once.
const rescueBatch = 1000

// RescueStranded hands back the jobs River still counts as running but
// whose process is gone: running since before horizon, attempted last by
// a client that live does not know (a dead worker, or a process that
// never registered one) and that is not this process. It returns how
// many it handed back.
//
// River's own rescuer skips a job whose worker has no timeout
// (Timeout(job) < 0, River ≥ 0.40), and the activation and pipeline-step
// workers have none: their runs carry their own timeouts. A process
// killed between River's fetch and the worker's claim left such a job
// running for good, and the activation or step it was for queued; the
// reaper, which knows which processes are dead from their heartbeats,
// hands it back instead. River's executor reads and writes the rows, so
// the jobs end as River's rescuer would leave them (an attempt error, a
// rescue count, its own timestamp format), except that a retry is
// available at once, without River's backoff: nothing of the job's run
// outlived its process, so nothing is to be waited for.
func (q *Queue) RescueStranded(ctx context.Context, horizon time.Time, live func(clientID string) bool) (int, error) {
	exec := q.client.Driver().GetExecutor()
	self := q.client.ID()
	alive := func(id string) bool { return id == self || live(id) }
	rescued := 0
	var after int64
	for {
		jobs, err := exec.JobGetStuck(ctx, &riverdriver.JobGetStuckParams{AfterID: after, Max: rescueBatch, StuckHorizon: horizon})
		if err != nil {
			return rescued, err
		}
		params := rescueParams(jobs, horizon, alive)
		if len(params.ID) > 0 {
			if _, err := exec.JobRescueMany(ctx, params); err != nil {
				return rescued, err
			}
			rescued += len(params.ID)
		}
		if len(jobs) < rescueBatch {
			return rescued, nil
		}
		after = jobs[len(jobs)-1].ID
	}
}

// rescueParams decides each stranded job's end as River's rescuer does:
// cancelled if a cancel was asked for, discarded if out of attempts,
// otherwise available again.
func rescueParams(jobs []*rivertype.JobRow, horizon time.Time, live func(string) bool) *riverdriver.JobRescueManyParams {
	now := time.Now().UTC()
	p := &riverdriver.JobRescueManyParams{StuckHorizon: horizon}
	for _, j := range jobs {
		if n := len(j.AttemptedBy); n > 0 && live(j.AttemptedBy[n-1]) {
			continue
		}
		errData, _ := json.Marshal(rivertype.AttemptError{At: now, Attempt: max(j.Attempt, 0),
			Error: "Stranded job rescued: the worker that fetched it stopped heartbeating"})
		var meta struct {
			CancelAttemptedAt time.Time `json:"cancel_attempted_at"`
		}
		_ = json.Unmarshal(j.Metadata, &meta)
		state, finalized, at := rivertype.JobStateAvailable, (*time.Time)(nil), now
		switch {
		case !meta.CancelAttemptedAt.IsZero():
			state, finalized, at = rivertype.JobStateCancelled, &now, j.ScheduledAt
		case j.Attempt >= max(j.MaxAttempts, 0):
			state, finalized, at = rivertype.JobStateDiscarded, &now, j.ScheduledAt
		}
		p.ID = append(p.ID, j.ID)
		p.Error = append(p.Error, errData)
		p.FinalizedAt = append(p.FinalizedAt, finalized)
		p.ScheduledAt = append(p.ScheduledAt, at)
		p.State = append(p.State, string(state))
	}
	return p
}
