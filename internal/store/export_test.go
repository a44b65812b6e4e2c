package store

import (
	"context"
	"log/slog"
	"time"
)

// QueuedTxs is how many transactions wait for the SQLite committer.
func (s *Store) QueuedTxs() int {
	if s.commits == nil {
		return 0
	}
	return len(s.commits.reqs)
}

// ExecOnWriter runs q on the writer: on SQLite the one connection the
// committer's transactions use, what a test needs to plant TEMP objects
// (per connection) those transactions will meet.
func (s *Store) ExecOnWriter(ctx context.Context, q string) error {
	_, err := s.write.ExecContext(ctx, q)
	return err
}

// Fragment is the dialect's SQL for the fragment called name of the seam
// (dialect.go), for the suite that runs each on every database.
func (s *Store) Fragment(name string, args ...string) string {
	switch name {
	case "forUpdate":
		return s.d.forUpdate()
	case "cast":
		return s.d.cast(args[0], args[1])
	case "octets":
		return s.d.octets(args[0])
	case "millisBetween":
		return s.d.millisBetween(args[0], args[1])
	case "jsonStore":
		return s.d.jsonStore(args[0])
	case "jsonLoad":
		return s.d.jsonLoad(args[0])
	case "jsonPath":
		return s.d.jsonPath(args[0])
	case "jsonField":
		return s.d.jsonField(args[0], args[1])
	}
	panic("store: no fragment " + name)
}

// JSONValue is v as the dialect's jsonField compares it.
func (s *Store) JSONValue(v any, compare string) any { return s.d.jsonValue(v, compare) }

// TS is t as the dialect stores it.
func (s *Store) TS(t time.Time) any { return s.ts(t) }

// MigrateRiverTo is Migrate with River's schema left at version target, as
// an older River's migrations left it.
func (s *Store) MigrateRiverTo(ctx context.Context, log *slog.Logger, target int) error {
	return s.migrate(ctx, log, target)
}

// OnCommit runs fn once tx has committed, among the store's own work after
// the commit (the activation cache's updates), before InTx returns.
func (s *Store) OnCommit(fn func()) { s.onCommit(fn) }

// UsageDailyTotals sums a user's daily usage rows of day: calls, input and
// output tokens, cost and unpriced calls.
func (s *Store) UsageDailyTotals(ctx context.Context, userID, day string) (sums [5]int64, rows int, err error) {
	err = s.reader().QueryRowContext(ctx, `SELECT COALESCE(SUM(calls), 0), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
		COALESCE(SUM(cost_micro_usd), 0), COALESCE(SUM(unpriced_calls), 0), COUNT(*) FROM usage_daily WHERE user_id = $1 AND day = $2`,
		userID, day).Scan(&sums[0], &sums[1], &sums[2], &sums[3], &sums[4], &rows)
	return sums, rows, err
}
