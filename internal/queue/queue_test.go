package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// cleaner counts runs and deletes expired sessions like auth.Service does.
type cleaner struct {
	s   *store.Store
	ran chan struct{}
}

func (c *cleaner) CleanupSessions(ctx context.Context) (int64, error) {
	n, err := c.s.SessionDeleteExpired(ctx, store.Now())
	select {
	case c.ran <- struct{}{}:
	default:
	}
	return n, err
}

// TestMaintenanceRunsOnTheQueue proves the River client works on each
// dialect: the periodic session cleanup is inserted, fetched and worked.
func TestMaintenanceRunsOnTheQueue(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		now := store.Now()
		u := &store.User{ID: uuid.NewString(), Email: "q@example.com", PasswordHash: "h", IsActive: true, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, s.UserCreate(ctx, u, false))
		require.NoError(t, s.SessionCreate(ctx, &store.Session{ID: uuid.NewString(), UserID: u.ID, TokenHash: []byte("old"), CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)}))

		c := &cleaner{s: s, ran: make(chan struct{}, 1)}
		q := queue.New(s, testdb.Logger(), queue.Options{RunWorkers: true, Workers: 2, FetchPollInterval: 100 * time.Millisecond})
		q.AddMaintenance(c)
		require.NoError(t, q.Start(ctx))
		t.Cleanup(func() { require.NoError(t, q.Stop(context.Background())) })

		select {
		case <-c.ran:
		case <-time.After(30 * time.Second):
			t.Fatal("the periodic session cleanup never ran")
		}
		n, err := s.SessionDeleteExpired(ctx, store.Now())
		require.NoError(t, err)
		require.Zero(t, n, "the job already deleted the expired session")
	})
}

// TestInsertOnlyClient is the serve --no-worker case: the client exists for
// inserting, works nothing, and stops cleanly.
func TestInsertOnlyClient(t *testing.T) {
	t.Parallel()
	s := testdb.Open(t, store.SQLite)
	q := queue.New(s, testdb.Logger(), queue.Options{})
	q.AddMaintenance(&cleaner{s: s, ran: make(chan struct{}, 1)})
	require.NoError(t, q.Start(context.Background()))
	require.NotNil(t, q.Client())
	require.NoError(t, q.Stop(context.Background()))
	require.NoError(t, q.Stop(context.Background()), "Stop is idempotent")
}
