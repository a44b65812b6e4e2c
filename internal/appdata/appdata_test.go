package appdata_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/appdata"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/quota"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

var ticketFields = []apps.Field{
	{Name: "subject", Type: "string", Required: true},
	{Name: "body", Type: "text"},
	{Name: "n", Type: "integer"},
	{Name: "score", Type: "number"},
	{Name: "done", Type: "boolean"},
	{Name: "due", Type: "datetime"},
	{Name: "extra", Type: "json"},
	{Name: "level", Type: "enum", Values: []string{"low", "high"}},
}

// FuzzValidate: whatever the data, Validate never panics, and what it
// accepts has only the model's fields with their types.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{`{"subject":"s"}`, `{"subject":"s","n":1,"score":1.5,"done":true,"due":"2026-01-02T03:04:05Z","extra":[1],"level":"low"}`,
		`{"subject":null}`, `{"n":1e400}`, `{"subject":"s","n":"1"}`, `{"subject":"s","level":"mid"}`, `{"x":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var data map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&data) != nil || data == nil {
			return
		}
		out, err := appdata.Validate(ticketFields, data)
		if err != nil {
			return
		}
		var back map[string]any
		dec = json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&back))
		require.IsType(t, "", back["subject"])
		for k, v := range back {
			switch k {
			case "subject", "body", "due", "level":
				require.IsType(t, "", v)
			case "n", "score":
				require.IsType(t, json.Number(""), v)
			case "done":
				require.IsType(t, true, v)
			case "extra":
			default:
				t.Fatalf("accepted a field that is not the model's: %s", k)
			}
		}
	})
}

// BenchmarkListRecords: a filtered, sorted page of a model with 10,000
// records, on both databases; p99 in ms is reported as a metric.
func BenchmarkListRecords(b *testing.B) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			if d == store.Postgres {
				testdb.RequirePostgres(b)
			}
			ctx := context.Background()
			st := testdb.Open(b, d)
			svc := appdata.New(st)
			now := store.Now()
			user := &store.User{ID: uuid.NewString(), Email: uuid.NewString() + "@example.com", PasswordHash: "x", IsActive: true, CreatedAt: now, UpdatedAt: now}
			require.NoError(b, st.UserCreate(ctx, user, false))
			app := &store.App{ID: uuid.NewString(), UserID: user.ID, Name: "Bench", Slug: "bench", Version: "1.0.0", Status: "active", CreatedAt: now, UpdatedAt: now}
			require.NoError(b, st.AppCreate(ctx, app))
			fields, _ := json.Marshal(map[string]any{"slug": "ticket", "fields": ticketFields})
			_, err := svc.CreateModel(ctx, app.ID, fields)
			require.NoError(b, err)
			const n = 10000
			err = st.InTx(ctx, func(tx *store.Store) error {
				m, err := tx.AppModelGetBySlug(ctx, app.ID, "ticket")
				if err != nil {
					return err
				}
				for i := range n {
					data := fmt.Sprintf(`{"subject":"t%d","n":%d,"score":%d.5,"done":%v,"level":"%s"}`, i, i%100, (i*7919)%10000, i%2 == 0, []string{"low", "high"}[i%2])
					if err := tx.RecordCreate(ctx, &store.Record{ID: uuid.Must(uuid.NewV7()).String(), ModelID: m.ID, AppID: app.ID, UserID: user.ID,
						Data: json.RawMessage(data), CreatedAt: now, UpdatedAt: now}, quota.Defaults().Data()); err != nil {
						return err
					}
				}
				return nil
			})
			require.NoError(b, err)
			q := appdata.Query{Filter: map[string]string{"level": "high"}, Sort: "-score", Limit: 50}
			var took []time.Duration
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				page, err := svc.ListRecords(ctx, user.ID, app.ID, "ticket", q)
				took = append(took, time.Since(start))
				if err != nil || page.TotalCount != n/2 || len(page.Items) != 50 {
					b.Fatal(err, page.TotalCount)
				}
			}
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
