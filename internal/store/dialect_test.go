package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// Each fragment of the dialect seam, run on each database: the same
// question gets the same answer (River's riverdrivertest, scaled down).
func TestDialectFragments(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := testdb.Open(t, d)
		db := s.DB()
		f := s.Fragment
		require.Equal(t, d == store.Postgres, s.MultiNode())

		var n int64
		from := time.Date(2026, 1, 2, 3, 4, 5, 250_000_000, time.UTC)
		require.NoError(t, db.QueryRowContext(ctx, `SELECT `+f("millisBetween", f("cast", "$1", "timestamptz"), f("cast", "$2", "timestamptz")),
			s.TS(from), s.TS(from.Add(1500*time.Millisecond))).Scan(&n))
		require.EqualValues(t, 1500, n, "millisBetween")

		require.NoError(t, db.QueryRowContext(ctx, `SELECT `+f("octets", f("cast", "$1", "text")), "héllo").Scan(&n))
		require.EqualValues(t, 6, n, "octets counts bytes, not characters")

		var text string
		require.NoError(t, db.QueryRowContext(ctx, `SELECT `+f("jsonLoad", "v")+` FROM (SELECT `+f("cast", f("jsonStore", "$1"), "jsonb")+` AS v) t`,
			`{"a": 1}`).Scan(&text))
		require.JSONEq(t, `{"a": 1}`, text, "jsonStore, then jsonLoad, gives the JSON back")

		field := func(name, compare string, v any) bool {
			t.Helper()
			var match sql.NullBool
			q := `SELECT ` + f("jsonField", "$2", compare) + ` = $3 FROM (SELECT ` + f("cast", f("jsonStore", "$1"), "jsonb") + ` AS data) t`
			require.NoError(t, db.QueryRowContext(ctx, q, `{"s": "x", "n": 2.5, "b": true}`, f("jsonPath", name), s.JSONValue(v, compare)).Scan(&match))
			return match.Valid && match.Bool
		}
		require.True(t, field("s", store.CompareText, "x"))
		require.True(t, field("n", store.CompareNumber, 2.5))
		require.True(t, field("b", store.CompareBool, true))
		require.False(t, field("b", store.CompareBool, false))
		require.False(t, field("missing", store.CompareText, "x"))
		require.False(t, field("s", store.CompareNumber, 1), "a value of another type does not match, nor fail")

		// forUpdate locks what a transaction reads, where that means anything.
		u := newUser(t, s, "lock@x.io", false)
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback() //nolint:errcheck // read only
		var id string
		require.NoError(t, tx.QueryRowContext(ctx, `SELECT id FROM users WHERE id = $1`+f("forUpdate"), u.ID).Scan(&id))
		require.Equal(t, u.ID, id)
	})
}
