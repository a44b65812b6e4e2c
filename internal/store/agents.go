package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
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
	// InputSchema is a custom agent's JSON Schema of its input; nil when it
	// declares none.
	InputSchema json.RawMessage
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

const agentColumns = `id, app_id, user_id, name, description, agent_type_id, version, status, is_system,
	capabilities, timeout_seconds, config, secret_enc, webhook_url, created_at, updated_at, input_schema`

func scanAgent(row interface{ Scan(...any) error }, a *Agent) error {
	var appID, userID sql.NullString
	var caps, config, schema []byte
	if err := row.Scan(&a.ID, &appID, &userID, &a.Name, &a.Description, &a.AgentTypeID, &a.Version, &a.Status, &a.IsSystem,
		&caps, &a.TimeoutSeconds, &config, &a.SecretEnc, &a.WebhookURL, &a.CreatedAt, &a.UpdatedAt, &schema); err != nil {
		return err
	}
	a.AppID, a.UserID = appID.String, userID.String
	a.Config = json.RawMessage(config)
	a.InputSchema = nil
	if schema != nil {
		a.InputSchema = json.RawMessage(schema)
	}
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
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
		a.ID, nullable(a.AppID), nullable(a.UserID), a.Name, a.Description, a.AgentTypeID, a.Version, a.Status, a.IsSystem,
		caps, a.TimeoutSeconds, config, a.SecretEnc, a.WebhookURL, s.ts(a.CreatedAt), s.ts(a.UpdatedAt), nullable(string(a.InputSchema)))
	return mapErr(err)
}

// AgentGet returns the agent with id, whoever owns it.
func (s *Store) AgentGet(ctx context.Context, id string) (*Agent, error) {
	var a Agent
	err := scanAgent(s.reader().QueryRowContext(ctx, `SELECT `+agentColumns+` FROM agents WHERE id = $1`, id), &a)
	return &a, mapErr(err)
}

// AgentGetWithApp is AgentGet with the status of the agent's app ("" for
// a system agent, or when the app is gone), read in the same statement.
func (s *Store) AgentGetWithApp(ctx context.Context, id string) (*Agent, string, error) {
	a := new(Agent)
	var status sql.NullString
	err := scanAgent(withColumns{s.reader().QueryRowContext(ctx, `SELECT `+agentColumns+`,
		(SELECT status FROM apps WHERE apps.id = agents.app_id) FROM agents WHERE id = $1`, id), []any{&status}}, a)
	return a, status.String, mapErr(err)
}

// AgentToActivate is AgentGetWithApp for an activation, which reads both
// on every call: from memory when it can (agentcache.go). On PostgreSQL
// what another process changed may show a second late here, so reads a
// user sees (GET of the agent) and read-modify-writes use AgentGet or
// AgentGetWithApp.
func (s *Store) AgentToActivate(ctx context.Context, id string) (*Agent, string, error) {
	e, err := s.agentToActivate(id, func() (agentEntry, error) {
		a, status, err := s.AgentGetWithApp(ctx, id)
		return agentEntry{a: *a, appStatus: status}, err
	})
	return &e.a, e.appStatus, err
}

// agentToActivate is the entry of key from memory, else what read reads,
// kept (read alone, outside a transaction, whose writes are not yet
// everyone's).
func (s *Store) agentToActivate(key string, read func() (agentEntry, error)) (agentEntry, error) {
	if s.tx != nil {
		return read()
	}
	if e, ok := s.agents.get(key); ok {
		return e, nil
	}
	reading := s.agents.begin()
	e, err := read()
	if err == nil {
		s.agents.put(reading, key, e)
	}
	return e, err
}

// AgentGetInApp is AgentGetWithApp for the agent named name of one of
// user userID's own apps: app appID, or the app whose slug is appSlug
// when appID is empty. shared reports whether a function or a pipeline
// of that app has the name too (an MCP tool's name then says its kind).
// It is one statement: the OpenAI endpoint and MCP name agents, and a
// call by name should cost what a call by id does.
func (s *Store) AgentGetInApp(ctx context.Context, userID, appID, appSlug, name string) (a *Agent, appStatus string, shared bool, err error) {
	a = &Agent{}
	var status sql.NullString
	q, app := agentInAppByID, appID
	if appID == "" {
		q, app = agentInAppBySlug, appSlug
	}
	err = scanAgent(withColumns{s.reader().QueryRowContext(ctx, q, userID, app, name), []any{&status, &shared}}, a)
	return a, status.String, shared, mapErr(err)
}

// AgentToActivateInApp is AgentGetInApp for an activation, from memory
// when it can, as AgentToActivate is.
func (s *Store) AgentToActivateInApp(ctx context.Context, userID, appID, appSlug, name string) (*Agent, string, bool, error) {
	e, err := s.agentToActivate(inAppKey(userID, appID, appSlug, name), func() (agentEntry, error) {
		a, status, shared, err := s.AgentGetInApp(ctx, userID, appID, appSlug, name)
		return agentEntry{a: *a, appStatus: status, shared: shared}, err
	})
	return &e.a, e.appStatus, e.shared, err
}

// The statements of AgentGetInApp, by the app's id ($2) or by its slug.
const (
	agentInApp = `SELECT ` + agentColumns + `,
		(SELECT status FROM apps WHERE apps.id = agents.app_id),
		EXISTS (SELECT 1 FROM functions f WHERE f.app_id = agents.app_id AND f.name = agents.name)
			OR EXISTS (SELECT 1 FROM pipelines p WHERE p.app_id = agents.app_id AND p.name = agents.name)
		FROM agents WHERE name = $3 AND user_id = $1 AND app_id = `
	agentInAppByID   = agentInApp + `$2`
	agentInAppBySlug = agentInApp + `(SELECT id FROM apps WHERE user_id = $1 AND slug = $2)`
)

// withColumns scans a row's further columns into extra, after those its
// scanner reads: a query of one table's columns and something more.
type withColumns struct {
	row   interface{ Scan(...any) error }
	extra []any
}

func (w withColumns) Scan(dest ...any) error { return w.row.Scan(append(dest, w.extra...)...) }

// AgentGetByName returns app appID's agent called name, or the system
// agent called name when appID is empty; ErrNotFound otherwise.
func (s *Store) AgentGetByName(ctx context.Context, appID, name string) (*Agent, error) {
	var a Agent
	q := `SELECT ` + agentColumns + ` FROM agents WHERE app_id = $1 AND name = $2`
	args := []any{appID, name}
	if appID == "" {
		q, args = `SELECT `+agentColumns+` FROM agents WHERE app_id IS NULL AND is_system AND name = $1`, args[1:]
	}
	err := scanAgent(s.reader().QueryRowContext(ctx, q, args...), &a)
	return &a, mapErr(err)
}

// AgentFilter selects the agents a caller sees.
type AgentFilter struct {
	// UserID: agents of that user's apps.
	UserID string
	// AppID narrows to one app (a key bound to an app, or an app's list).
	AppID string
	// System adds the system agents (unless AppID is set).
	System bool
	// Search matches name or description, case-insensitively.
	Search string
}

func (f AgentFilter) where() (string, []any) {
	search := ""
	if f.Search != "" {
		search = "%" + likeEscaper.Replace(strings.ToLower(f.Search)) + "%"
	}
	return ` FROM agents WHERE ((user_id = $1 AND app_id IS NOT NULL AND ($2 = '' OR CAST(app_id AS TEXT) = $2))
		OR ($3 AND $2 = '' AND is_system))
		AND ($4 = '' OR LOWER(name) LIKE $4 ESCAPE '\' OR LOWER(description) LIKE $4 ESCAPE '\')`,
		[]any{nullable(f.UserID), f.AppID, f.System, search}
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// AgentList returns a page of the agents f selects, system agents first,
// then in creation order, and the total count.
func (s *Store) AgentList(ctx context.Context, f AgentFilter, limit, offset int) ([]Agent, int, error) {
	where, args := f.where()
	total, err := s.count(ctx, `SELECT COUNT(*)`+where, args...)
	if err != nil {
		return nil, 0, err
	}
	agents, err := queryAll(ctx, s.reader(), scanAgent,
		`SELECT `+agentColumns+where+` ORDER BY is_system DESC, created_at, id LIMIT $5 OFFSET $6`, append(args, limit, offset)...)
	return agents, total, err
}

// AgentListByApp returns every agent of an app in creation order.
func (s *Store) AgentListByApp(ctx context.Context, appID string) ([]Agent, error) {
	return queryAll(ctx, s.reader(), scanAgent, `SELECT `+agentColumns+` FROM agents WHERE app_id = $1 ORDER BY created_at, id`, appID)
}

// AgentUpdate writes every mutable field of a; a name the app already has
// is ErrConflict.
func (s *Store) AgentUpdate(ctx context.Context, a *Agent) error {
	caps, err := jsonText(orEmpty(a.Capabilities))
	if err != nil {
		return err
	}
	return s.changingAgents(func() error {
		return expectOne(s.writer().ExecContext(ctx, `UPDATE agents SET name = $2, description = $3, agent_type_id = $4,
		version = $5, status = $6, capabilities = $7, timeout_seconds = $8, config = $9, secret_enc = $10,
		webhook_url = $11, updated_at = $12, input_schema = $13 WHERE id = $1`,
			a.ID, a.Name, a.Description, a.AgentTypeID, a.Version, a.Status, caps, a.TimeoutSeconds, jsonOr(a.Config, "{}"),
			a.SecretEnc, a.WebhookURL, s.ts(a.UpdatedAt), nullable(string(a.InputSchema))))
	})
}

// AgentDelete deletes an agent and its activations.
func (s *Store) AgentDelete(ctx context.Context, id string) error {
	s.uncacheActivation("") // its activations go with it
	return s.changingAgents(func() error {
		return expectOne(s.writer().ExecContext(ctx, `DELETE FROM agents WHERE id = $1`, id))
	})
}

// AgentUpsertSystem creates the system agent a, or brings an existing one
// with its id up to date: every start seeds them, so it must be idempotent.
func (s *Store) AgentUpsertSystem(ctx context.Context, a *Agent) error {
	caps, err := jsonText(orEmpty(a.Capabilities))
	if err != nil {
		return err
	}
	return s.changingAgents(func() error {
		return s.upsertSystemAgent(ctx, a, caps)
	})
}

func (s *Store) upsertSystemAgent(ctx context.Context, a *Agent, caps string) error {
	_, err := s.writer().ExecContext(ctx, `INSERT INTO agents (`+agentColumns+`)
		VALUES ($1, NULL, NULL, $2, $3, $4, $5, 'active', TRUE, $6, $7, $8, '', '', $9, $9, NULL)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name, description = excluded.description,
			agent_type_id = excluded.agent_type_id, version = excluded.version, capabilities = excluded.capabilities,
			timeout_seconds = excluded.timeout_seconds, config = excluded.config, is_system = TRUE`,
		a.ID, a.Name, a.Description, a.AgentTypeID, a.Version, caps, a.TimeoutSeconds, jsonOr(a.Config, "{}"), s.ts(a.CreatedAt))
	return mapErr(err)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
