package store

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestScanTimeReadsAsTheDriver: a timestamp read as text (a
// sqliteTimeColumn) into a scanTime is the time the SQLite driver gives
// for the typed column, whatever the text's layout.
func TestScanTimeReadsAsTheDriver(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "t.db"))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE t (ts TIMESTAMP)`)
	require.NoError(t, err)
	now := time.Date(2026, 11, 27, 17, 4, 5, 123456789, time.UTC)
	for _, v := range []string{
		now.Format(sqliteTime),
		now.Truncate(time.Second).Format(sqliteTime),
		now.Format(time.RFC3339Nano),
		"2026-11-27 17:04:05",
		"2026-11-27 17:04:05.123",
		"2026-11-27T17:04:05.5+02:00",
		"2026-11-27 17:04:05-07:00",
		"2026-11-27 17:04",
		"2026-11-27",
		"2026-11-27 17:04:05.123456789 +0000 UTC",
		"2026-11-27 17:04:05.123456789 +0100 CET m=+0.000000001",
	} {
		_, err := db.Exec(`DELETE FROM t`)
		require.NoError(t, err)
		_, err = db.Exec(`INSERT INTO t VALUES (?)`, v)
		require.NoError(t, err)
		var want time.Time
		var got scanTime
		require.NoError(t, db.QueryRow(`SELECT ts, `+sqliteTimeColumn("ts")+` FROM t`).Scan(&want, &got), v)
		require.True(t, got.Valid, v)
		require.True(t, want.Equal(got.Time), "%s: %v, the driver %v", v, got.Time, want)
		require.Equal(t, want.Location().String(), got.Time.Location().String(), v)
		_, offW := want.Zone()
		_, offG := got.Time.Zone()
		require.Equal(t, offW, offG, v)
	}
	var got scanTime
	require.NoError(t, db.QueryRow(`SELECT NULL`).Scan(&got))
	require.False(t, got.Valid)
	require.Error(t, db.QueryRow(`SELECT 'not a time'`).Scan(&got))
}
