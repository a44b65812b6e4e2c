package store

import (
	"fmt"
	"strings"
	"time"
)

// Reading a timestamp column, the SQLite driver (modernc) tries up to five
// layouts with time.Parse for every value of every row, the one that
// matches what the store writes (sqliteTime) coming last: on the
// activation path that was a few percent of the CPU. The hot queries select
// their timestamps as expressions on SQLite (sqliteTimeColumn), which the
// driver hands over as the stored text, and scan them into a scanTime,
// which reads the store's own format with Go's RFC 3339 fast path and any
// other text as the driver would have.

// sqliteTimeColumn is col as a SQLite expression without a declared type
// (unary + changes nothing in SQLite, whatever the value), so that the
// driver does not parse it.
func sqliteTimeColumn(col string) string { return "+" + col }

// scanTime is a nullable timestamp column: a time.Time from PostgreSQL's
// driver (or a typed SQLite column), text from a sqliteTimeColumn.
type scanTime struct {
	Time  time.Time
	Valid bool
}

func (t *scanTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*t = scanTime{}
		return nil
	case time.Time:
		*t = scanTime{Time: v, Valid: true}
		return nil
	case string:
		return t.parse(v)
	case []byte:
		return t.parse(string(v))
	}
	return fmt.Errorf("store: cannot scan %T into a timestamp", src)
}

func (t *scanTime) parse(s string) error {
	// What the store writes: RFC 3339 in UTC, which time.Parse reads
	// without trying layouts. The driver read it as UTC too.
	if strings.HasSuffix(s, "Z") && len(s) > 10 && s[10] == 'T' {
		if v, err := time.Parse(time.RFC3339Nano, s); err == nil {
			*t = scanTime{Time: v, Valid: true}
			return nil
		}
	}
	v, ok := parseDriverTime(s)
	if !ok {
		return fmt.Errorf("store: %q is not a timestamp", s)
	}
	*t = scanTime{Time: v, Valid: true}
	return nil
}

// driverTimeLayouts are the layouts modernc.org/sqlite reads a timestamp
// column's text with, in its order (its parseTimeFormats).
var driverTimeLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

// parseDriverTime reads s as modernc.org/sqlite reads a timestamp column
// (its conn.parseTime, with no _loc): time.String's format first, then the
// layouts, a trailing Z dropped.
func parseDriverTime(s string) (time.Time, bool) {
	ts := s
	if x := strings.Index(ts, "m="); x > 0 {
		ts = ts[:x]
	}
	if v, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", strings.TrimSpace(ts)); err == nil {
		return v, true
	}
	ts, _ = strings.CutSuffix(s, "Z")
	for _, layout := range driverTimeLayouts {
		if v, err := time.Parse(layout, ts); err == nil {
			return v, true
		}
	}
	return time.Time{}, false
}

// ptr is t as an optional time, in UTC as nullTime gives it.
func (t scanTime) ptr() *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}
