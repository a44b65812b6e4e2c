package store

import (
	"context"
	"database/sql"
)

// UsageRecordsOf returns the ledger's records of activation id's LLM
// calls, oldest first (steps in order).
func (s *Store) UsageRecordsOf(ctx context.Context, activationID string) ([]UsageRecord, error) {
	return queryAll(ctx, s.reader(), scanUsageRecord, `SELECT id, user_id, app_id, agent_id, activation_id, step_index, api_key_id,
		provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_micro_usd, created_at
		FROM usage_records WHERE activation_id = $1 ORDER BY created_at, step_index, id`, activationID)
}

func scanUsageRecord(row interface{ Scan(...any) error }, r *UsageRecord) error {
	var app, agent, act sql.NullString
	var step, key, cost sql.NullInt64
	if err := row.Scan(&r.ID, &r.UserID, &app, &agent, &act, &step, &key, &r.Provider, &r.Model, &r.InputTokens, &r.OutputTokens,
		&r.CacheReadTokens, &r.CacheWriteTokens, &cost, &r.CreatedAt); err != nil {
		return err
	}
	r.AppID, r.AgentID, r.ActivationID, r.APIKeyID = app.String, agent.String, act.String, key.Int64
	r.CreatedAt = r.CreatedAt.UTC()
	if step.Valid {
		i := int(step.Int64)
		r.StepIndex = &i
	}
	if cost.Valid {
		c := cost.Int64
		r.CostMicroUSD = &c
	}
	return nil
}
