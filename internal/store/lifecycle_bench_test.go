package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/agentplatform/agentplatform/internal/cputime"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// BenchmarkActivationLifecycle is what the store writes for a run that
// starts at its creation, as the yardstick's runs do: the insert with its
// created and started events, then the end with its completed event, 64
// callers at once (the committer shares commits on SQLite), beside a
// history of 20,000 ended runs so that the indexes have their working
// size. It isolates the rows and indexes a run touches from the rest of
// the path.
func BenchmarkActivationLifecycle(b *testing.B) {
	for _, d := range testdb.Dialects {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			s := testdb.Open(b, d)
			u := newUser(b, s, "bench@x.io", false)
			agent := newAgent(b, s, newApp(b, s, u.ID, "bench"), "g", "")
			worker := uuid.NewString()
			run := func() error {
				now := store.Now()
				a := &store.Activation{ID: uuid.Must(uuid.NewV7()).String(), UserID: u.ID, AppID: agent.AppID, AgentID: agent.ID,
					Status: store.StatusRunning, Priority: 2, CreatedAt: now, StartedAt: &now, WorkerID: worker, Attempt: 1,
					InputData: json.RawMessage(`{"prompt":"hello"}`)}
				ev := func(typ string) *store.EventRow {
					return &store.EventRow{UserID: u.ID, Type: typ, ActivationID: a.ID, AppID: a.AppID,
						Payload: []byte(`{"activation_id":"` + a.ID + `","status":"running"}`), CreatedAt: now}
				}
				if err := s.ActivationCreateRecorded(ctx, a, ev("activation.created"), ev("activation.started")); err != nil {
					return err
				}
				_, ok, err := s.ActivationFinishRecorded(ctx, a.ID, store.Outcome{Status: store.StatusCompleted,
					OutputData: json.RawMessage(`{"content":"hi"}`), CompletedAt: store.Now()}, []*store.EventRow{ev("activation.completed")})
				if err == nil && !ok {
					err = fmt.Errorf("finish: activation %s was not running", a.ID)
				}
				return err
			}
			var history errgroup.Group
			history.SetLimit(64)
			for range 20000 {
				history.Go(run)
			}
			require.NoError(b, history.Wait())
			cpu := cputime.Process()
			b.SetParallelism(32) // 64 callers on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := run(); err != nil {
						b.Error(err) // not Fatal: this is not the benchmark's goroutine
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64((cputime.Process()-cpu).Microseconds())/float64(b.N), "cpu-µs/run")
		})
	}
}
