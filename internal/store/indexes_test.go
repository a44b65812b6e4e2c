package store_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// The partial indexes of activations (migration 00026) hold only the rows
// they are read for; each query that reads through one names a condition
// that implies the index's, so the index can still serve it. This holds
// the queries' shapes (as the store writes them) to that, on both
// databases: a query whose condition stopped implying its index's would
// scan the whole history.
func TestActivationPartialIndexesServeTheirQueries(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		const user, agent = "00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"
		for _, c := range []struct {
			index, query string
			args         []any
		}{
			{"activations_running", `SELECT id FROM activations WHERE status = 'running' AND worker_id = $1`, []any{"w"}},
			{"activations_running", `SELECT a.worker_id FROM activations a WHERE a.status = 'running' AND a.worker_id IS NOT NULL`, nil},
			{"activations_running", `SELECT COUNT(*) FROM activations WHERE status = 'running'`, nil},
			{"activations_queued", `SELECT COUNT(*) FROM activations WHERE status = 'queued'`, nil},
			{"activations_idempotency", `SELECT id FROM activations WHERE user_id = $1 AND idempotency_key = $2`, []any{user, "k"}},
			{"activations_chat", `SELECT COUNT(*) FROM activations WHERE user_id = $1 AND chat_id = $2`, []any{user, "c"}},
			{"activations_completed", `SELECT COUNT(*) FROM activations WHERE completed_at >= $1`, []any{"2026-01-01T00:00:00Z"}},
			// The store's own statement: on SQLite it names its index.
			{"activations_chat", s.ChatHistorySQL(), []any{agent, "c", user, "2026-01-01T00:00:00Z", 20}},
		} {
			query := c.query
			if d == store.SQLite {
				// SQLite picks among the indexes a query may use by cost,
				// without statistics a toss-up: INDEXED BY fails to
				// prepare where the index cannot serve.
				query = strings.Replace(strings.Replace(query, "FROM activations a ", "FROM activations AS a INDEXED BY "+c.index+" ", 1),
					"FROM activations WHERE", "FROM activations INDEXED BY "+c.index+" WHERE", 1)
			}
			plan := explain(t, ctx, s, query, c.args...)
			require.Contains(t, plan, c.index, "%s\nplan: %s", c.query, plan)
		}
	})
}

// explain is the plan the database makes for query, as text. PostgreSQL
// is told to avoid sequential scans where an index serves: on a table this
// small it would rightly prefer one.
func explain(t *testing.T, ctx context.Context, s *store.Store, query string, args ...any) string {
	t.Helper()
	tx, err := s.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	prefix := "EXPLAIN QUERY PLAN "
	if s.Dialect() == store.Postgres {
		_, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off")
		require.NoError(t, err)
		prefix = "EXPLAIN "
	}
	rows, err := tx.QueryContext(ctx, prefix+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var plan strings.Builder
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		for _, v := range vals {
			plan.WriteString(v.String + " ")
		}
		plan.WriteString("\n")
	}
	require.NoError(t, rows.Err())
	return plan.String()
}
