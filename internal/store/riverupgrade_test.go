package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// riverV031Schema is the last of River's migrations that River v0.31.0
// shipped, on both its PostgreSQL and its SQLite line (006_bulk_unique):
// where every database this platform made before the upgrade to v0.51
// stands. River's later files 001-006 differ from v0.31.0's only in
// comments and no-op statements, so stopping today's migrator there builds
// the same schema.
const riverV031Schema = 6

type probeArgs struct {
	Note string `json:"note"`
}

func (probeArgs) Kind() string { return "upgrade_probe" }

type probeWorker struct {
	river.WorkerDefaults[probeArgs]
	worked chan string
}

func (w *probeWorker) Work(_ context.Context, job *river.Job[probeArgs]) error {
	w.worked <- job.Args.Note
	return nil
}

// TestMigrateUpgradesRiverV031Database is `migrate` (and `serve`) on a
// database made by the platform on River v0.31.0: River's later
// migrations are applied, a job queued before the upgrade is worked after
// it, a new one is inserted and worked, and the platform's rows and the
// old finished jobs are intact.
func TestMigrateUpgradesRiverV031Database(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s, err := store.Open(ctx, testdb.URL(t, d))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		require.NoError(t, s.MigrateRiverTo(ctx, testdb.Logger(), riverV031Schema))

		migrator, err := rivermigrate.New(s.RiverDriver(), nil)
		require.NoError(t, err)
		require.Equal(t, riverV031Schema, riverVersion(t, migrator), "the old database stands where v0.31.0 left it")

		u, app := testdb.UserApp(t, s)
		// Rows as River v0.31.0 wrote them: JSON text (SQLite had no jsonb
		// yet), a queued job and a finished one.
		_, err = s.DB().ExecContext(ctx, `INSERT INTO river_job (args, kind, max_attempts, queue, state)
			VALUES ('{"note":"queued before"}', 'upgrade_probe', 25, 'default', 'available')`)
		require.NoError(t, err)
		_, err = s.DB().ExecContext(ctx, `INSERT INTO river_job (args, kind, max_attempts, queue, state, metadata, attempt, attempted_at, finalized_at)
			VALUES ('{"note":"done before"}', 'upgrade_probe', 25, 'default', 'completed', '{"snoozes":2}', 1, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)`)
		require.NoError(t, err)

		require.NoError(t, s.Migrate(ctx, testdb.Logger()))
		latest := 0
		for _, m := range migrator.AllVersions() {
			latest = max(latest, m.Version)
		}
		require.Greater(t, latest, riverV031Schema)
		require.Equal(t, latest, riverVersion(t, migrator), "Migrate brings River's schema to its newest version")
		require.NoError(t, s.Migrate(ctx, testdb.Logger()), "migrating again is a no-op")

		gotUser, err := s.UserGet(ctx, u.ID)
		require.NoError(t, err)
		require.Equal(t, u.Email, gotUser.Email)
		gotApp, err := s.AppGet(ctx, app.ID)
		require.NoError(t, err)
		require.Equal(t, app.Slug, gotApp.Slug)

		w := &probeWorker{worked: make(chan string, 2)}
		workers := river.NewWorkers()
		river.AddWorker(workers, w)
		client, err := river.NewClient(s.RiverDriver(), &river.Config{
			Logger:            testdb.Logger(),
			Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 1}},
			Workers:           workers,
			FetchPollInterval: 50 * time.Millisecond,
			FetchCooldown:     10 * time.Millisecond,
		})
		require.NoError(t, err)

		old, err := client.JobList(ctx, river.NewJobListParams().States(rivertype.JobStateCompleted).Kinds("upgrade_probe"))
		require.NoError(t, err)
		require.Len(t, old.Jobs, 1)
		require.JSONEq(t, `{"note":"done before"}`, string(old.Jobs[0].EncodedArgs))
		var meta map[string]any
		require.NoError(t, json.Unmarshal(old.Jobs[0].Metadata, &meta))
		require.EqualValues(t, 2, meta["snoozes"])

		require.NoError(t, client.Start(ctx))
		t.Cleanup(func() { require.NoError(t, client.Stop(context.Background())) })
		_, err = client.Insert(ctx, probeArgs{Note: "inserted after"}, nil)
		require.NoError(t, err)

		seen := map[string]bool{}
		deadline := time.After(30 * time.Second)
		for len(seen) < 2 {
			select {
			case n := <-w.worked:
				seen[n] = true
			case <-deadline:
				t.Fatalf("jobs worked after the upgrade: %v; want the one queued before and the one inserted after", seen)
			}
		}
		require.Equal(t, map[string]bool{"queued before": true, "inserted after": true}, seen)
	})
}

// riverVersion is the newest River migration applied to the database.
func riverVersion(t *testing.T, m *rivermigrate.Migrator[*sql.Tx]) int {
	t.Helper()
	applied, err := m.ExistingVersions(context.Background())
	require.NoError(t, err)
	v := 0
	for _, a := range applied {
		v = max(v, a.Version)
	}
	return v
}
