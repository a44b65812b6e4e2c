package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
)

// Agent is an LLM or custom agent of an app, or a system agent (no app, no
// user) visible to everyone.
type Agent struct {
	ID             string
	AppID          string // empty for system agents
	UserID         string // empty for system agents
	Name           string
	Description    string
	AgentTypeID    string // llm or custom
	Version        string
	Status         string
	IsSystem       bool
	Capabilities   []string
	TimeoutSeconds int
	// Config is agent_config as JSON, without secrets (SecretEnc holds a
	// webhook agent's secret, encrypted).
	Config     json.RawMessage
	SecretEnc  string
	WebhookURL string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

const agentColumns = `id, app_id, user_id, name, description, agent_type_id, version, status, is_system,
	capabilities, timeout_seconds, config, secret_enc, webhook_url, created_at, updated_at`

func scanAgent(row interface{ Scan(...any) error }, a *Agent) error {
	var appID, userID sql.NullString
	var caps, config []byte
	if err := row.Scan(&a.ID, &appID, &userID, &a.Name, &a.Description, &a.AgentTypeID, &a.Version, &a.Status, &a.IsSystem,
		&caps, &a.TimeoutSeconds, &config, &a.SecretEnc, &a.WebhookURL, &a.CreatedAt, &a.UpdatedAt); err != nil {
		return err
	}
	a.AppID, a.UserID = appID.String, userID.String
	a.Config = json.RawMessage(config)
	return json.Unmarshal(caps, &a.Capabilities)
}

// nullable stores "" as NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// jsonText is the JSON of v as a string, the form both dialects accept for
// a JSON column.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// AgentCreate inserts a; a name the app already has is ErrConflict.
func (s *Store) AgentCreate(ctx context.Context, a *Agent) error {
	caps, err := jsonText(orEmpty(a.Capabilities))
	if err != nil {
		return err
	}
	config := string(a.Config)
	if config == "" {
		config = "{}"
	}
	_, err = s.writer().ExecContext(ctx, `INSERT INTO agents (`+agentColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
		a.ID, nullable(a.AppID), nullable(a.UserID), a.Name, a.Description, a.AgentTypeID, a.Version, a.Status, a.IsSystem,
		caps, a.TimeoutSeconds, config, a.SecretEnc, a.WebhookURL, s.ts(a.CreatedAt), s.ts(a.UpdatedAt))
	return mapErr(err)
}

// AgentGet returns the agent with id, whoever owns it.
func (s *Store) AgentGet(ctx context.Context, id string) (*Agent, error) {
	var a Agent
	err := scanAgent(s.reader().QueryRowContext(ctx, `SELECT `+agentColumns+` FROM agents WHERE id = $1`, id), &a)
	return &a, mapErr(err)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
