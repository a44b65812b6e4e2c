package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// riverV031Version is the last migration of River v0.31.0's main line:
// versions 1 to 6 are the same SQL in v0.31.0 and v0.51.2.
const riverV031Version = 6

// TestMigrateUpgradesRiverV031Database: a database an older build left (our
// schema, River's at v0.31.0's last migration, jobs written as v0.31.0 wrote
// them: JSON as text on SQLite) is brought up to date by Migrate, and its
// jobs survive readable: a queued one, and a running one's attempted_by,
// which the reaper reads (queue.RescueStranded). A new job follows the old
// ones' ids.
func TestMigrateUpgradesRiverV031Database(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Unmigrated(t, d)
		require.NoError(t, s.MigrateRiverTo(ctx, testdb.Logger(), riverV031Version))
		migrator, err := rivermigrate.New(s.RiverDriver(), nil)
		require.NoError(t, err)
		require.Equal(t, riverV031Version, latestRiver(t, migrator))

		require.NoError(t, s.ExecOnWriter(ctx, `INSERT INTO river_job
			(args, kind, max_attempts, queue, state, priority, scheduled_at)
			VALUES ('{"activation_id":"queued"}', 'activation', 10, 'activations', 'available', 2, CURRENT_TIMESTAMP)`))
		require.NoError(t, s.ExecOnWriter(ctx, `INSERT INTO river_job
			(args, kind, max_attempts, queue, state, priority, scheduled_at, attempt, attempted_at, attempted_by)
			VALUES ('{"activation_id":"running"}', 'activation', 10, 'activations', 'running', 2, CURRENT_TIMESTAMP,
				1, CURRENT_TIMESTAMP, `+attemptedBy(d)+`)`))

		require.NoError(t, s.Migrate(ctx, testdb.Logger()))
		require.Greater(t, latestRiver(t, migrator), riverV031Version)
		require.Equal(t, migrator.AllVersions()[len(migrator.AllVersions())-1].Version, latestRiver(t, migrator), "River's schema is the newest")
		require.NoError(t, s.Migrated(ctx))

		exec := s.RiverDriver().GetExecutor()
		jobs, err := exec.JobGetByIDMany(ctx, &riverdriver.JobGetByIDManyParams{ID: []int64{1, 2}})
		require.NoError(t, err)
		require.Len(t, jobs, 2)
		byArgs := map[string]*rivertype.JobRow{}
		for _, j := range jobs {
			var args struct {
				ActivationID string `json:"activation_id"`
			}
			require.NoError(t, json.Unmarshal(j.EncodedArgs, &args))
			byArgs[args.ActivationID] = j
		}
		require.Equal(t, rivertype.JobStateAvailable, byArgs["queued"].State)
		require.Equal(t, "activations", byArgs["queued"].Queue)
		require.Equal(t, rivertype.JobStateRunning, byArgs["running"].State)
		require.Equal(t, []string{"old-client", "dead-worker"}, byArgs["running"].AttemptedBy)

		fresh, err := exec.JobInsertFull(ctx, &riverdriver.JobInsertFullParams{Kind: "activation", EncodedArgs: []byte(`{"activation_id":"new"}`),
			Queue: "activations", Priority: 2, MaxAttempts: 10, State: rivertype.JobStateAvailable, Metadata: []byte(`{}`)})
		require.NoError(t, err)
		require.Greater(t, fresh.ID, int64(2))
	})
}

// attemptedBy is the SQL of an attempted_by array as River v0.31.0 stored
// it: a text[] on PostgreSQL, JSON text on SQLite.
func attemptedBy(d store.Dialect) string {
	if d == store.Postgres {
		return `ARRAY['old-client', 'dead-worker']`
	}
	return `'["old-client","dead-worker"]'`
}

func latestRiver[TTx any](t *testing.T, m *rivermigrate.Migrator[TTx]) int {
	t.Helper()
	versions, err := m.ExistingVersions(context.Background())
	require.NoError(t, err)
	v := 0
	for _, m := range versions {
		v = max(v, m.Version)
	}
	return v
}
