package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestQuotaCountersUnderConcurrency: writers racing past a quota stop at
// it exactly (storage keys and bytes, records, models, API keys), and
// deletes give back what they held.
func TestQuotaCountersUnderConcurrency(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		u := newUser(t, s, "quota@example.com", false)
		app := newApp(t, s, u.ID, "quota")
		race := func(n int, fn func(i int) error) (ok int, refused map[string]int) {
			var mu sync.Mutex
			var wg sync.WaitGroup
			refused = map[string]int{}
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := fn(i)
					mu.Lock()
					defer mu.Unlock()
					var qe *store.QuotaError
					switch {
					case err == nil:
						ok++
					case errors.As(err, &qe):
						refused[qe.Name]++
					default:
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			return ok, refused
		}
		value := json.RawMessage(`"` + strings.Repeat("v", 98) + `"`) // 100 bytes
		lim := store.StorageLimits{Keys: 5, Bytes: 100_000}
		ok, refused := race(20, func(i int) error {
			return s.StorageSet(ctx, u.ID, app.ID, fmt.Sprintf("k%d", i), value, store.Now(), lim)
		})
		require.Equal(t, 5, ok)
		require.Equal(t, map[string]int{store.QuotaStorageKeys: 15}, refused)
		kept, err := s.StorageList(ctx, u.ID, app.ID, "", "", 100, 1<<20)
		require.NoError(t, err)
		require.Len(t, kept, 5)
		require.NoError(t, s.StorageDelete(ctx, u.ID, app.ID, kept[0].Key))
		require.NoError(t, s.StorageDelete(ctx, u.ID, app.ID, kept[1].Key))
		// 3 keys (300 bytes) left; bytes now bind: room for 2 more of 100.
		lim = store.StorageLimits{Keys: 100, Bytes: 500}
		ok, refused = race(10, func(i int) error {
			return s.StorageSet(ctx, u.ID, app.ID, fmt.Sprintf("b%d", i), value, store.Now(), lim)
		})
		require.Equal(t, 2, ok, "%v", refused)
		require.Equal(t, map[string]int{store.QuotaStorageBytes: 8}, refused)

		ok, refused = race(6, func(i int) error {
			now := store.Now()
			return s.AppModelCreate(ctx, &store.AppModel{ID: uuid.Must(uuid.NewV7()).String(), AppID: app.ID, Slug: fmt.Sprintf("m%d", i),
				Name: "m", CreatedAt: now, UpdatedAt: now}, 2)
		})
		require.Equal(t, 2, ok)
		require.Equal(t, map[string]int{store.QuotaModels: 4}, refused)
		models, err := s.AppModelListByApp(ctx, app.ID)
		require.NoError(t, err)
		rec := func(i int) *store.Record {
			now := store.Now()
			return &store.Record{ID: uuid.Must(uuid.NewV7()).String(), ModelID: models[0].ID, AppID: app.ID, UserID: u.ID,
				Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i%10)), CreatedAt: now, UpdatedAt: now}
		}
		ok, refused = race(12, func(i int) error { return s.RecordCreate(ctx, rec(i), store.RecordLimits{Count: 4, Bytes: 1000}) })
		require.Equal(t, 4, ok)
		require.Equal(t, map[string]int{store.QuotaRecords: 8}, refused)
		n, err := s.RecordCount(ctx, u.ID, models[0].ID)
		require.NoError(t, err)
		require.Equal(t, 4, n)

		ok, refused = race(10, func(i int) error {
			return s.APIKeyCreateWithin(ctx, &store.APIKey{UserID: u.ID, Name: fmt.Sprint("k", i), KeyHash: []byte(fmt.Sprint("hash-", i)),
				KeyPrefix: "ak_", Scopes: []string{"read:all"}, CreatedAt: store.Now()}, 3)
		})
		require.Equal(t, 3, ok)
		require.Equal(t, map[string]int{store.QuotaAPIKeys: 7}, refused)
	})
}
