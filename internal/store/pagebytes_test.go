package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestEventListAfterIsBoundedInBytes: a replay batch stops at the page
// budget (at least one event), so the next batch starts after it.
func TestEventListAfterIsBoundedInBytes(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		s := testdb.Open(t, d)
		s.SetPageBytes(10 << 10)
		ctx := context.Background()
		now := store.Now()
		u := &store.User{ID: uuid.NewString(), Email: uuid.NewString() + "@example.com", PasswordHash: "h", IsActive: true, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, s.UserCreate(ctx, u, false))
		payload, _ := json.Marshal(map[string]string{"output_data": strings.Repeat("x", 4000)})
		for range 5 {
			require.NoError(t, s.EventAppend(ctx, &store.EventRow{UserID: u.ID, Type: "activation_completed", Payload: payload, CreatedAt: now}))
		}
		big, _ := json.Marshal(map[string]string{"output_data": strings.Repeat("y", 50000)})
		last := &store.EventRow{UserID: u.ID, Type: "activation_completed", Payload: big, CreatedAt: now}
		require.NoError(t, s.EventAppend(ctx, last))
		waitFinal(t, s, u.ID, last.Seq)

		var batches []int
		for after := int64(0); ; {
			rows, err := s.EventListAfter(ctx, u.ID, after, 500)
			require.NoError(t, err)
			if len(rows) == 0 {
				break
			}
			batches = append(batches, len(rows))
			after = rows[len(rows)-1].Seq
			if len(rows[0].Payload) == len(big) {
				require.Len(t, rows, 1, "an event larger than the budget comes alone")
			}
		}
		// Two events of 4 KB fit in 10 KiB, a third does not; the big one
		// would take the third batch past the budget and comes alone.
		require.Equal(t, []int{2, 2, 1, 1}, batches)
	})
}
