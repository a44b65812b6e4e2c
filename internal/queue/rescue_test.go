package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestRescueStranded: running jobs attempted last by a dead client before
// the horizon come back as River's rescuer would leave them (available
// again, discarded when out of attempts, cancelled when a cancel was
// asked), with an attempt error; a live client's job, this process's own,
// one younger than the horizon and one that is not running stay as they
// are.
func TestRescueStranded(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		q := queue.New(s, testdb.Logger(), queue.Options{ClientID: "self"})
		require.NoError(t, q.Start(ctx))
		t.Cleanup(func() { require.NoError(t, q.Stop(context.Background())) })
		exec := s.RiverDriver().GetExecutor()
		old, young := time.Now().Add(-time.Minute), time.Now()
		job := func(state rivertype.JobState, by string, at time.Time, attempt int, meta string) int64 {
			j, err := exec.JobInsertFull(ctx, &riverdriver.JobInsertFullParams{Kind: "k", EncodedArgs: []byte(`{}`), Queue: "q",
				Priority: 1, MaxAttempts: 3, State: state, Attempt: attempt, AttemptedAt: &at, AttemptedBy: []string{"earlier", by},
				Metadata: []byte(meta)})
			require.NoError(t, err)
			return j.ID
		}
		retried := job(rivertype.JobStateRunning, "dead", old, 1, `{}`)
		exhausted := job(rivertype.JobStateRunning, "dead", old, 3, `{}`)
		cancelled := job(rivertype.JobStateRunning, "dead", old, 1, `{"cancel_attempted_at":"2026-01-01T00:00:00Z"}`)
		live := job(rivertype.JobStateRunning, "live", old, 1, `{}`)
		own := job(rivertype.JobStateRunning, "self", old, 1, `{}`)
		recent := job(rivertype.JobStateRunning, "dead", young, 1, `{}`)
		done := job(rivertype.JobStateAvailable, "dead", old, 1, `{}`)

		n, err := q.RescueStranded(ctx, time.Now().Add(-30*time.Second), func(id string) bool { return id == "live" })
		require.NoError(t, err)
		require.Equal(t, 3, n)

		want := map[int64]rivertype.JobState{retried: rivertype.JobStateAvailable, exhausted: rivertype.JobStateDiscarded,
			cancelled: rivertype.JobStateCancelled, live: rivertype.JobStateRunning, own: rivertype.JobStateRunning,
			recent: rivertype.JobStateRunning, done: rivertype.JobStateAvailable}
		for id, state := range want {
			j, err := exec.JobGetByID(ctx, &riverdriver.JobGetByIDParams{ID: id})
			require.NoError(t, err)
			require.Equal(t, state, j.State, "job %d", id)
			if id == retried || id == exhausted || id == cancelled {
				require.Len(t, j.Errors, 1, "job %d", id)
				require.Contains(t, j.Errors[0].Error, "stopped heartbeating")
				require.Equal(t, state != rivertype.JobStateAvailable, j.FinalizedAt != nil)
			} else {
				require.Empty(t, j.Errors, "job %d", id)
			}
		}
	})
}
