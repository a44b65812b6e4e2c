package appdata_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/appdata"
	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestRecordsAndPagesAreBounded: a record is at most the API's body limit,
// also when a merge grows it (413 naming the size, the record unchanged),
// and a page of records stops at 1 MiB (fewer items, has_more).
func TestRecordsAndPagesAreBounded(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		st := testdb.Open(t, d)
		svc := appdata.New(st)
		user, app := testdb.UserApp(t, st)
		fields, _ := json.Marshal(map[string]any{"slug": "ticket", "fields": ticketFields})
		_, err := svc.CreateModel(ctx, app.ID, fields)
		require.NoError(t, err)
		record := func(body string) json.RawMessage {
			b, _ := json.Marshal(map[string]any{"subject": "s", "body": body})
			return b
		}

		_, err = svc.CreateRecord(ctx, user.ID, app.ID, "ticket", record(strings.Repeat("x", 2<<20)), user.ID)
		e, ok := apperr.As(err)
		require.True(t, ok, "%v", err)
		require.Equal(t, apperr.PayloadTooLarge, e.Kind)
		require.Equal(t, "A record is at most 1048576 bytes of JSON (1 MiB); this one is 2097177 bytes", e.Detail)

		a, err := svc.CreateRecord(ctx, user.ID, app.ID, "ticket", record(strings.Repeat("a", 600<<10)), user.ID)
		require.NoError(t, err)
		_, err = svc.CreateRecord(ctx, user.ID, app.ID, "ticket", record(strings.Repeat("b", 600<<10)), user.ID)
		require.NoError(t, err)
		_, err = svc.PatchRecord(ctx, user.ID, app.ID, "ticket", a.ItemID, json.RawMessage(`{"extra":"`+strings.Repeat("c", 600<<10)+`"}`))
		require.True(t, apperr.Is(err, apperr.PayloadTooLarge), "%v", err)
		got, err := svc.GetRecord(ctx, user.ID, app.ID, "ticket", a.ItemID)
		require.NoError(t, err)
		require.NotContains(t, string(got.Data), "extra", "a refused merge leaves the record as it was")

		for _, sort := range []string{"", "subject"} {
			page, err := svc.ListRecords(ctx, user.ID, app.ID, "ticket", appdata.Query{Limit: 10, Sort: sort})
			require.NoError(t, err)
			require.Len(t, page.Items, 1, "two 600 KiB records are more than a 1 MiB page (sort %q)", sort)
			require.Equal(t, 2, page.TotalCount)
			require.True(t, page.HasMore)
			page, err = svc.ListRecords(ctx, user.ID, app.ID, "ticket", appdata.Query{Limit: 10, Offset: 1, Sort: sort})
			require.NoError(t, err)
			require.Len(t, page.Items, 1)
			require.False(t, page.HasMore)
		}
	})
}
