package queue

import (
	"context"
	"encoding/json"
	mrand "math/rand/v2"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/agentplatform/agentplatform/internal/fairshare"
)

// fullWait is how long a job whose owner holds its whole share waits
// in the worker for one of its own slots before it snoozes: long enough
// that a busy user's next job usually finds a slot freed by its last one,
// short enough that the worker soon goes to another user's job, which
// this process cannot see waiting while it is still in the database.
const fullWait = time.Second

// TakeSlot takes a slot of pool for a job of owner. nil: the slot is
// held (Release it). Otherwise the error to return from Work: a snooze
// (River counts no attempt) when owner holds its share and none of its
// slots frees within fullWait, or ctx's error.
func TakeSlot(ctx context.Context, pool *fairshare.Pool, owner string, job *rivertype.JobRow) error {
	wait := ctx
	if pool.Full(owner) {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(ctx, fullWait)
		defer cancel()
	}
	err := pool.Acquire(wait, owner)
	if err != nil && ctx.Err() == nil {
		return river.JobSnooze(SnoozeFor(job))
	}
	return err
}

// SnoozeFor is how long a job waits for its owner's turn: a second,
// doubling with each wait up to half a minute, jittered, so that a user
// with thousands of jobs queued costs a bounded number of database writes
// while they wait.
func SnoozeFor(job *rivertype.JobRow) time.Duration {
	var meta struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(job.Metadata, &meta)
	d := min(time.Second<<min(meta.Snoozes, 5), 30*time.Second)
	return d - mrand.N(d/4)
}
