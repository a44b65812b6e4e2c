package store

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"time"
)

// UsageRecord is the usage of one LLM call (DESIGN §4 "Usage, cost and
// budgets"): who spent it, through what, and what it cost.
type UsageRecord struct {
	ID           string
	UserID       string
	AppID        string // "": none (a system agent's run)
	AgentID      string
	ActivationID string
	// StepIndex is the journal step whose answer this is; nil for a call
	// outside the journal (a plain completion's, ctx.llm.complete's).
	StepIndex *int
	APIKeyID  int64 // 0: not made with an API key
	Provider  string
	Model     string
	// InputTokens include the cached ones (CacheReadTokens, and
	// CacheWriteTokens where a provider reports them apart), as the
	// OpenTelemetry GenAI conventions count them.
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
	CostMicroUSD                                                 *int64 // nil: the model has no price
	CreatedAt                                                    time.Time
}

// UsageDay is the UTC day a record counts for in the daily sums.
func UsageDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// usageShards is how many daily rows one account's calls of a kind spread
// over on PostgreSQL, where concurrent transactions adding to one row
// wait for each other's commits. With 8, one user's runs on an API node
// and two workers waited 2.8 ms on average for these rows, ten times any
// other statement of a run (pg_stat_statements), and 32 brought it to
// 0.3 ms (238 -> 305 runs/s); a report sums a few more rows a day.
const usageShards = 32

// UsageInsert adds records to the ledger and to the daily sums. Call it in
// the transaction that records the calls' answers: a record of a journal
// step that is already in the ledger is ErrConflict.
func (s *Store) UsageInsert(ctx context.Context, recs ...*UsageRecord) error {
	for _, r := range recs {
		args := s.usageArgs(r)
		if s.d.writableCTE() {
			// One statement, one round trip: a run's end is short of them.
			if _, err := s.writer().ExecContext(ctx, `WITH rec AS (`+usageRecordInsert+`) `+usageDailyUpsert, args...); err != nil {
				return mapErr(err)
			}
			continue
		}
		if _, err := s.writer().ExecContext(ctx, usageRecordInsert, args[:15]...); err != nil {
			return mapErr(err)
		}
		if _, err := s.writer().ExecContext(ctx, usageDailyUpsert, args...); err != nil {
			return err
		}
	}
	return nil
}

// EventAppendWithUsage is EventAppend and UsageInsert in one, in a
// transaction: on PostgreSQL, with one usage record (a run's end), one
// statement where it would be two.
func (s *Store) EventAppendWithUsage(ctx context.Context, rows []*EventRow, recs ...*UsageRecord) error {
	if len(rows) == 0 || len(recs) != 1 || !s.d.writableCTE() || s.tx == nil {
		if err := s.EventAppend(ctx, rows...); err != nil {
			return err
		}
		return s.UsageInsert(ctx, recs...)
	}
	if err := oneUser(rows); err != nil {
		return err
	}
	return s.appendEvents(ctx, rows, statement{`rec AS (` + usageRecordInsert + `), daily AS (` + usageDailyUpsert + `)`, s.usageArgs(recs[0])})
}

// usageArgs are the arguments of usageRecordInsert and usageDailyUpsert
// for r.
func (s *Store) usageArgs(r *UsageRecord) []any {
	var step, cost any
	if r.StepIndex != nil {
		step = *r.StepIndex
	}
	priced, unpriced := int64(0), 0
	if r.CostMicroUSD != nil {
		cost, priced = *r.CostMicroUSD, *r.CostMicroUSD
	} else {
		unpriced = 1
	}
	shard := 0
	if s.d.multiNode() {
		shard = rand.IntN(usageShards)
	}
	return []any{r.ID, r.UserID, nullable(r.AppID), nullable(r.AgentID), nullable(r.ActivationID), step, nullableID(r.APIKeyID), r.Provider, r.Model,
		r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens, cost, s.ts(r.CreatedAt),
		UsageDay(r.CreatedAt), r.AppID, r.AgentID, r.APIKeyID, shard, priced, unpriced}
}

// The two writes of a usage record, numbered as UsageInsert's arguments:
// the ledger's row ($1–$15) and its daily sum (the user, provider, model
// and tokens again, then $16–$22). Each is an INSERT's head and its row,
// so that it can be written as INSERT … SELECT row WHERE (usageWritesIf).
const (
	usageRecordInto = `INSERT INTO usage_records (id, user_id, app_id, agent_id, activation_id, step_index,
			api_key_id, provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, created_at)`
	usageRecordRow    = `$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15`
	usageRecordInsert = usageRecordInto + ` VALUES (` + usageRecordRow + `)`
	usageDailyInto    = `INSERT INTO usage_daily (user_id, day, app_id, agent_id, api_key_id, provider, model, shard,
			calls, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, unpriced_calls)`
	usageDailyRow = `$2, $16, $17, $18, $19, $8, $9, $20, 1, $10, $11, $12, $13, $21, $22`
	usageDailyAdd = ` ON CONFLICT (user_id, day, app_id, agent_id, api_key_id, provider, model, shard) DO UPDATE SET
				calls = usage_daily.calls + 1,
				input_tokens = usage_daily.input_tokens + excluded.input_tokens,
				output_tokens = usage_daily.output_tokens + excluded.output_tokens,
				cache_read_tokens = usage_daily.cache_read_tokens + excluded.cache_read_tokens,
				cache_write_tokens = usage_daily.cache_write_tokens + excluded.cache_write_tokens,
				cost_micro_usd = usage_daily.cost_micro_usd + excluded.cost_micro_usd,
				unpriced_calls = usage_daily.unpriced_calls + excluded.unpriced_calls`
	usageDailyUpsert = usageDailyInto + ` VALUES (` + usageDailyRow + `)` + usageDailyAdd
)

// usageWritesIf is the two writes of a usage record as WITH queries rec
// and daily that write only if cond holds, their arguments numbered from
// $from+1 (PostgreSQL: a target column types a parameter of INSERT …
// SELECT as it does one of VALUES).
func usageWritesIf(cond string, from int) string {
	return shifted(`rec AS (`+usageRecordInto+` SELECT `+usageRecordRow+` WHERE `+cond+`),
		daily AS (`+usageDailyInto+` SELECT `+usageDailyRow+` WHERE `+cond+usageDailyAdd+`)`, from)
}

// UsageCompact folds the shards of the daily sums of days before day
// (YYYY-MM-DD) into shard 0, in one statement: a day over takes no more
// writes but the odd late one (a call recorded the moment before
// midnight), so its shards only make reports read more rows. A late
// write lands in a shard again and is folded the next time. SQLite
// writes shard 0 only: nothing to do.
func (s *Store) UsageCompact(ctx context.Context, day string) (int64, error) {
	if !s.d.multiNode() {
		return 0, nil
	}
	res, err := s.writer().ExecContext(ctx, `WITH moved AS (
			DELETE FROM usage_daily WHERE day < $1 AND shard > 0
			RETURNING user_id, day, app_id, agent_id, api_key_id, provider, model,
				calls, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, unpriced_calls)
		INSERT INTO usage_daily (user_id, day, app_id, agent_id, api_key_id, provider, model, shard,
			calls, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, unpriced_calls)
		SELECT user_id, day, app_id, agent_id, api_key_id, provider, model, 0,
			sum(calls), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens),
			sum(cost_micro_usd), sum(unpriced_calls)
		FROM moved GROUP BY user_id, day, app_id, agent_id, api_key_id, provider, model
		ON CONFLICT (user_id, day, app_id, agent_id, api_key_id, provider, model, shard) DO UPDATE SET
			calls = usage_daily.calls + excluded.calls,
			input_tokens = usage_daily.input_tokens + excluded.input_tokens,
			output_tokens = usage_daily.output_tokens + excluded.output_tokens,
			cache_read_tokens = usage_daily.cache_read_tokens + excluded.cache_read_tokens,
			cache_write_tokens = usage_daily.cache_write_tokens + excluded.cache_write_tokens,
			cost_micro_usd = usage_daily.cost_micro_usd + excluded.cost_micro_usd,
			unpriced_calls = usage_daily.unpriced_calls + excluded.unpriced_calls`, day)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// UsageHas reports whether the user's ledger holds calls of app appID (or
// of agent agentID): a report may ask about one deleted since.
func (s *Store) UsageHas(ctx context.Context, userID, appID, agentID string) (bool, error) {
	col, id := "app_id", appID
	if agentID != "" {
		col, id = "agent_id", agentID
	}
	var one int
	err := s.reader().QueryRowContext(ctx, `SELECT 1 FROM usage_daily WHERE user_id = $1 AND `+col+` = $2 LIMIT 1`, userID, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}
