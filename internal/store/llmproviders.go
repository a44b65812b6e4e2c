package store

import (
	"context"
	"encoding/json"
	"time"
)

// LLMProvider is a user's own LLM provider. The system providers (echo,
// openai, anthropic) come from the configuration and are not rows.
type LLMProvider struct {
	ID           string
	UserID       string
	Name         string
	ProviderType string
	BaseURL      string
	APIKeyEnc    string // sealed with package secret; "" for none
	Models       []string
	DefaultModel string
	IsDefault    bool
	// Prices is the provider's own prices, a JSON object ({} for none):
	// package pricing reads it.
	Prices    json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
}

const llmProviderColumns = `id, user_id, name, provider_type, base_url, api_key_enc, models, default_model, is_default, prices, created_at, updated_at`

func scanLLMProvider(row interface{ Scan(...any) error }, p *LLMProvider) error {
	var models, prices []byte
	if err := row.Scan(&p.ID, &p.UserID, &p.Name, &p.ProviderType, &p.BaseURL, &p.APIKeyEnc, &models,
		&p.DefaultModel, &p.IsDefault, &prices, &p.CreatedAt, &p.UpdatedAt); err != nil {
		return err
	}
	p.Prices = json.RawMessage(prices)
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return json.Unmarshal(models, &p.Models)
}

// LLMProviderCreate inserts p; a name the user already has is ErrConflict.
func (s *Store) LLMProviderCreate(ctx context.Context, p *LLMProvider) error {
	models, err := jsonText(orEmpty(p.Models))
	if err != nil {
		return err
	}
	_, err = s.writer().ExecContext(ctx, `INSERT INTO llm_providers (`+llmProviderColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		p.ID, p.UserID, p.Name, p.ProviderType, p.BaseURL, p.APIKeyEnc, models, p.DefaultModel, p.IsDefault,
		pricesText(p.Prices), s.ts(p.CreatedAt), s.ts(p.UpdatedAt))
	return mapErr(err)
}

// LLMProviderGet returns the provider with id, whoever owns it.
func (s *Store) LLMProviderGet(ctx context.Context, id string) (*LLMProvider, error) {
	var p LLMProvider
	err := scanLLMProvider(s.reader().QueryRowContext(ctx, `SELECT `+llmProviderColumns+` FROM llm_providers WHERE id = $1`, id), &p)
	return &p, mapErr(err)
}

// LLMProviderGetDefault returns the user's provider marked is_default.
func (s *Store) LLMProviderGetDefault(ctx context.Context, userID string) (*LLMProvider, error) {
	var p LLMProvider
	err := scanLLMProvider(s.reader().QueryRowContext(ctx,
		`SELECT `+llmProviderColumns+` FROM llm_providers WHERE user_id = $1 AND is_default ORDER BY updated_at DESC LIMIT 1`, userID), &p)
	return &p, mapErr(err)
}

// LLMProviderListByUser returns a page of the user's providers, oldest
// first, and how many there are.
func (s *Store) LLMProviderListByUser(ctx context.Context, userID string, limit, offset int) ([]LLMProvider, int, error) {
	total, err := s.count(ctx, `SELECT COUNT(*) FROM llm_providers WHERE user_id = $1`, userID)
	if err != nil {
		return nil, 0, err
	}
	if limit == 0 {
		return []LLMProvider{}, total, nil
	}
	out, err := queryAll(ctx, s.reader(), scanLLMProvider, `SELECT `+llmProviderColumns+` FROM llm_providers
		WHERE user_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`, userID, limit, offset)
	return out, total, err
}

// LLMProviderUpdate writes every mutable field of p; a name the user
// already has is ErrConflict.
func (s *Store) LLMProviderUpdate(ctx context.Context, p *LLMProvider) error {
	models, err := jsonText(orEmpty(p.Models))
	if err != nil {
		return err
	}
	return expectOne(s.writer().ExecContext(ctx, `UPDATE llm_providers SET name = $2, provider_type = $3, base_url = $4,
		api_key_enc = $5, models = $6, default_model = $7, is_default = $8, updated_at = $9, prices = $10 WHERE id = $1`,
		p.ID, p.Name, p.ProviderType, p.BaseURL, p.APIKeyEnc, models, p.DefaultModel, p.IsDefault, s.ts(p.UpdatedAt),
		pricesText(p.Prices)))
}

// pricesText is the prices column's value: {} for none.
func pricesText(p json.RawMessage) string {
	if len(p) == 0 {
		return "{}"
	}
	return string(p)
}

// LLMProviderClearDefault unmarks every default provider of the user but
// keepID. Call it before marking keepID, in the same transaction: a unique
// index allows one default per user.
func (s *Store) LLMProviderClearDefault(ctx context.Context, userID, keepID string, at time.Time) error {
	_, err := s.writer().ExecContext(ctx, `UPDATE llm_providers SET is_default = FALSE, updated_at = $3
		WHERE user_id = $1 AND is_default AND id <> $2`, userID, keepID, s.ts(at))
	return err
}

// LLMProviderLockUser serialises, until the transaction ends, the changes
// to one user's providers that move the default mark: without it two such
// transactions on PostgreSQL lock the same rows in opposite orders. SQLite
// needs nothing: a write transaction already holds the whole database.
func (s *Store) LLMProviderLockUser(ctx context.Context, userID string) error {
	lock := s.d.forUpdate()
	if lock == "" {
		return nil
	}
	var id string
	return mapErr(s.writer().QueryRowContext(ctx, `SELECT id FROM users WHERE id = $1`+lock, userID).Scan(&id))
}

// LLMProviderDelete deletes the provider with id.
func (s *Store) LLMProviderDelete(ctx context.Context, id string) error {
	return expectOne(s.writer().ExecContext(ctx, `DELETE FROM llm_providers WHERE id = $1`, id))
}
