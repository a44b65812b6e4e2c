package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// storageFixture is a user's app with n keys k00, k01… of size bytes each.
func storageFixture(t *testing.T, s *store.Store, n, size int) (userID, appID string) {
	t.Helper()
	ctx := context.Background()
	now := store.Now()
	u, app := testdb.UserApp(t, s)
	v, _ := json.Marshal(strings.Repeat("v", size-2))
	for i := range n {
		require.NoError(t, s.StorageSet(ctx, u.ID, app.ID, fmt.Sprintf("k%02d", i), v, now, store.StorageLimits{Keys: 1 << 40, Bytes: 1 << 40}))
	}
	require.NoError(t, s.StorageSet(ctx, u.ID, app.ID, "other", json.RawMessage(`1`), now, store.StorageLimits{Keys: 1 << 40, Bytes: 1 << 40}))
	return u.ID, app.ID
}

// TestStorageListIsABoundedPage: a page stops at its byte budget (the first
// key always comes) or its limit, and after walks the rest in key order.
func TestStorageListIsABoundedPage(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		s := testdb.Open(t, d)
		ctx := context.Background()
		user, app := storageFixture(t, s, 10, 20<<10)
		page, err := s.StorageList(ctx, user, app, "k", "", 1000, 64<<10)
		require.NoError(t, err)
		require.Len(t, page, 3, "three 20 KiB values fit in 64 KiB, four do not")
		page, err = s.StorageList(ctx, user, app, "k", "", 2, 64<<10)
		require.NoError(t, err)
		require.Len(t, page, 2)
		page, err = s.StorageList(ctx, user, app, "k", "", 1000, 100)
		require.NoError(t, err)
		require.Len(t, page, 1, "the first key comes whatever its size")
		var keys []string
		after := ""
		for range 20 {
			page, err := s.StorageList(ctx, user, app, "k", after, 1000, 64<<10)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			for _, it := range page {
				keys = append(keys, it.Key)
			}
			after = page[len(page)-1].Key
		}
		require.Equal(t, []string{"k00", "k01", "k02", "k03", "k04", "k05", "k06", "k07", "k08", "k09"}, keys)
	})
}

// TestStorageListReadsOnlyItsPage: listing 4 MiB of values with a 256 KiB
// budget allocates a few times the page in Go, not the 4 MiB. Not parallel: it
// counts the process's allocations.
func TestStorageListReadsOnlyItsPage(t *testing.T) { //nolint:paralleltest // counts allocations
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			if d == store.Postgres {
				testdb.RequirePostgres(t)
			}
			s := testdb.Open(t, d)
			user, app := storageFixture(t, s, 64, 64<<10)
			ctx := context.Background()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			page, err := s.StorageList(ctx, user, app, "", "", 1000, 256<<10)
			runtime.ReadMemStats(&after)
			require.NoError(t, err)
			require.Len(t, page, 3)
			n := after.TotalAlloc - before.TotalAlloc
			t.Logf("listing allocated %d bytes for a 256 KiB page of 4 MiB", n)
			require.Less(t, n, uint64(1<<20), "listing allocated %d bytes for a 256 KiB page", n)
		})
	}
}
