package store

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	sqlite3 "modernc.org/sqlite/lib"
)

// StablePlans reports whether every SQLite connection of s keeps its
// statements' plans (the query planner stability guarantee).
func (s *Store) StablePlans(ctx context.Context) (bool, error) {
	for _, db := range []*sql.DB{s.read, s.write} {
		conn, err := db.Conn(ctx)
		if err != nil {
			return false, err
		}
		var on int32
		err = conn.Raw(func(dc any) error {
			var err error
			on, err = dbConfig(dc.(*cachingConn).conn, sqlite3.SQLITE_DBCONFIG_ENABLE_QPSG, -1)
			return err
		})
		conn.Close()
		if err != nil || on != 1 {
			return false, err
		}
	}
	return true, nil
}

// QueuedTxs is how many transactions wait for the SQLite committer.
func (s *Store) QueuedTxs() int {
	if s.commits == nil {
		return 0
	}
	s.commits.qmu.Lock()
	defer s.commits.qmu.Unlock()
	return len(s.commits.reqs) + len(s.commits.queued)
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

// CacheActivation is the activation cache's update of a write of a, as a
// write outside a transaction made it.
func (s *Store) CacheActivation(a *Activation) { s.cacheActivation(a) }

// UsageDailyTotals sums a user's daily usage rows of day: calls, input and
// output tokens, cost and unpriced calls.
func (s *Store) UsageDailyTotals(ctx context.Context, userID, day string) (sums [5]int64, rows int, err error) {
	err = s.reader().QueryRowContext(ctx, `SELECT COALESCE(SUM(calls), 0), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
		COALESCE(SUM(cost_micro_usd), 0), COALESCE(SUM(unpriced_calls), 0), COUNT(*) FROM usage_daily WHERE user_id = $1 AND day = $2`,
		userID, day).Scan(&sums[0], &sums[1], &sums[2], &sums[3], &sums[4], &rows)
	return sums, rows, err
}

// UsageBulk writes many records fast, for benchmarks: Add writes the
// records in multi-row INSERTs and sums them by day; Flush writes the
// daily sums, so the daily table is what UsageInsert would have made of
// the same records.
type UsageBulk struct {
	s     *Store
	daily map[usageDayKey]*[5]int64
}

type usageDayKey struct {
	user, day, app, agent string
	key                   int64
	provider, model       string
}

// NewUsageBulk starts a bulk load of s.
func (s *Store) NewUsageBulk() *UsageBulk {
	return &UsageBulk{s: s, daily: map[usageDayKey]*[5]int64{}}
}

// multiInsert runs INSERT head VALUES (…), (…) over rows of width
// columns, batch rows a statement.
func (s *Store) multiInsert(ctx context.Context, head string, width int, rows [][]any) error {
	batch := 30000 / width // under every driver's bound on parameters
	for start := 0; start < len(rows); start += batch {
		part := rows[start:min(start+batch, len(rows))]
		args := make([]any, 0, len(part)*width)
		for _, r := range part {
			args = append(args, r...)
		}
		if _, err := s.writer().ExecContext(ctx, head+" VALUES "+tuples(len(part), width), args...); err != nil {
			return err
		}
	}
	return nil
}

// Add writes recs.
func (b *UsageBulk) Add(ctx context.Context, recs []UsageRecord) error {
	rows := make([][]any, len(recs))
	for i, r := range recs {
		var cost any
		if r.CostMicroUSD != nil {
			cost = *r.CostMicroUSD
		}
		rows[i] = []any{r.ID, r.UserID, nullable(r.AppID), nullable(r.AgentID), nullable(r.ActivationID), nil, nullableID(r.APIKeyID),
			r.Provider, r.Model, r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens, cost, b.s.ts(r.CreatedAt)}
		k := usageDayKey{r.UserID, UsageDay(r.CreatedAt), r.AppID, r.AgentID, r.APIKeyID, r.Provider, r.Model}
		d := b.daily[k]
		if d == nil {
			d = new([5]int64)
			b.daily[k] = d
		}
		d[0]++
		d[1] += r.InputTokens
		d[2] += r.OutputTokens
		if r.CostMicroUSD != nil {
			d[3] += *r.CostMicroUSD
		} else {
			d[4]++
		}
	}
	return b.s.multiInsert(ctx, `INSERT INTO usage_records (id, user_id, app_id, agent_id, activation_id, step_index, api_key_id, provider, model,
		input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, created_at)`, 15, rows)
}

// Flush writes the daily sums of every record added: on PostgreSQL each
// sum spread over as many shards as UsageInsert's calls would have
// reached, so that a report reads as many rows as it would in production.
func (b *UsageBulk) Flush(ctx context.Context) error {
	rows := make([][]any, 0, len(b.daily))
	for k, d := range b.daily {
		n := int64(1)
		if b.s.d.multiNode() {
			n = min(d[0], usageShards)
		}
		for shard := range n {
			var part [5]int64
			for i, v := range d {
				part[i] = v / n
				if shard < v%n {
					part[i]++
				}
			}
			rows = append(rows, []any{k.user, k.day, k.app, k.agent, k.key, k.provider, k.model, shard, part[0], part[1], part[2], part[3], part[4]})
		}
	}
	return b.s.multiInsert(ctx, `INSERT INTO usage_daily (user_id, day, app_id, agent_id, api_key_id, provider, model, shard,
		calls, input_tokens, output_tokens, cost_micro_usd, unpriced_calls)`, 13, rows)
}

// Analyze refreshes the planner's statistics of the usage tables (and, on
// PostgreSQL, their visibility maps, which index-only scans need), as
// autovacuum or the periodic ANALYZE would have by the time a bulk of
// records is read.
func (s *Store) Analyze(ctx context.Context) error {
	q := "ANALYZE"
	if s.d.multiNode() {
		q = "VACUUM ANALYZE usage_records, usage_daily"
	}
	_, err := s.writer().ExecContext(ctx, q)
	return err
}

// SetAgentCacheTTL changes how long s's agent cache answers an entry.
func SetAgentCacheTTL(s *Store, ttl time.Duration) {
	s.agents.mu.Lock()
	s.agents.ttl = ttl
	s.agents.mu.Unlock()
}

// ChatHistorySQL is ActivationChatHistory's statement, for its plan.
func (s *Store) ChatHistorySQL() string { return s.chatHistorySQL() }
