package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
)

// The parts of an app a manifest declares besides agents: data models,
// functions, pipelines and OAuth authenticator definitions. Each is named
// uniquely within its app (ErrConflict otherwise), which is how a manifest
// upgrade matches old parts to new ones.

// AppModel is a data model of an app; Fields is its field list as JSON.
type AppModel struct {
	ID        string
	AppID     string
	Slug      string
	Name      string
	Fields    json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
}

const appModelColumns = `id, app_id, slug, name, fields, created_at, updated_at`

func scanAppModel(row interface{ Scan(...any) error }, m *AppModel) error {
	var fields []byte
	err := row.Scan(&m.ID, &m.AppID, &m.Slug, &m.Name, &fields, &m.CreatedAt, &m.UpdatedAt)
	m.Fields = json.RawMessage(fields)
	return err
}

// AppModelUpdate writes m's name and fields.
func (s *Store) AppModelUpdate(ctx context.Context, m *AppModel) error {
	return expectOne(s.writer().ExecContext(ctx, `UPDATE app_models SET name = $2, fields = $3, updated_at = $4 WHERE id = $1`,
		m.ID, m.Name, jsonOr(m.Fields, "[]"), s.ts(m.UpdatedAt)))
}

// AppModelDelete deletes a model.
func (s *Store) AppModelDelete(ctx context.Context, id string) error {
	return expectOne(s.writer().ExecContext(ctx, `DELETE FROM app_models WHERE id = $1`, id))
}

// AppModelListByApp returns an app's models in creation order.
func (s *Store) AppModelListByApp(ctx context.Context, appID string) ([]AppModel, error) {
	return queryAll(ctx, s.reader(), scanAppModel,
		`SELECT `+appModelColumns+` FROM app_models WHERE app_id = $1 ORDER BY created_at, id`, appID)
}

// AppModelGetBySlug returns the model of app with slug, or ErrNotFound.
func (s *Store) AppModelGetBySlug(ctx context.Context, appID, slug string) (*AppModel, error) {
	var m AppModel
	err := scanAppModel(s.reader().QueryRowContext(ctx, `SELECT `+appModelColumns+` FROM app_models WHERE app_id = $1 AND slug = $2`, appID, slug), &m)
	return &m, mapErr(err)
}

// Function is JavaScript code of an app, run on demand with a JSON input
// checked against InputSchema.
type Function struct {
	ID             string
	AppID          string
	UserID         string
	Name           string
	Description    string
	Code           string
	InputSchema    json.RawMessage
	TimeoutSeconds int
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

const functionColumns = `id, app_id, user_id, name, description, code, input_schema, timeout_seconds, created_at, updated_at`

func scanFunction(row interface{ Scan(...any) error }, f *Function) error {
	var schema []byte
	err := row.Scan(&f.ID, &f.AppID, &f.UserID, &f.Name, &f.Description, &f.Code, &schema, &f.TimeoutSeconds, &f.CreatedAt, &f.UpdatedAt)
	f.InputSchema = json.RawMessage(schema)
	return err
}

// FunctionCreate inserts f.
func (s *Store) FunctionCreate(ctx context.Context, f *Function) error {
	return s.changingAgents(func() error {
		_, err := s.writer().ExecContext(ctx, `INSERT INTO functions (`+functionColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			f.ID, f.AppID, f.UserID, f.Name, f.Description, f.Code, jsonOr(f.InputSchema, "{}"), f.TimeoutSeconds,
			s.ts(f.CreatedAt), s.ts(f.UpdatedAt))
		return mapErr(err)
	})
}

// FunctionUpdate writes every mutable field of f.
func (s *Store) FunctionUpdate(ctx context.Context, f *Function) error {
	return s.changingAgents(func() error {
		return expectOne(s.writer().ExecContext(ctx, `UPDATE functions SET name = $2, description = $3, code = $4,
		input_schema = $5, timeout_seconds = $6, updated_at = $7 WHERE id = $1`,
			f.ID, f.Name, f.Description, f.Code, jsonOr(f.InputSchema, "{}"), f.TimeoutSeconds, s.ts(f.UpdatedAt)))
	})
}

// FunctionDelete deletes a function.
func (s *Store) FunctionDelete(ctx context.Context, id string) error {
	return s.changingAgents(func() error {
		return expectOne(s.writer().ExecContext(ctx, `DELETE FROM functions WHERE id = $1`, id))
	})
}

// FunctionGet returns the function with id, whoever owns it.
func (s *Store) FunctionGet(ctx context.Context, id string) (*Function, error) {
	var f Function
	err := scanFunction(s.reader().QueryRowContext(ctx, `SELECT `+functionColumns+` FROM functions WHERE id = $1`, id), &f)
	return &f, mapErr(err)
}

// FunctionListByApp returns an app's functions in creation order.
func (s *Store) FunctionListByApp(ctx context.Context, appID string) ([]Function, error) {
	return queryAll(ctx, s.reader(), scanFunction,
		`SELECT `+functionColumns+` FROM functions WHERE app_id = $1 ORDER BY created_at, id`, appID)
}

// FunctionGetByName returns app's function called name, or ErrNotFound.
func (s *Store) FunctionGetByName(ctx context.Context, appID, name string) (*Function, error) {
	var f Function
	err := scanFunction(s.reader().QueryRowContext(ctx, `SELECT `+functionColumns+` FROM functions WHERE app_id = $1 AND name = $2`, appID, name), &f)
	return &f, mapErr(err)
}

// FunctionListByUser returns a page of the user's functions (of one app
// when appID is set), in creation order, and how many there are.
func (s *Store) FunctionListByUser(ctx context.Context, userID, appID string, limit, offset int) ([]Function, int, error) {
	cond := `user_id = $1 AND ($2 = '' OR ` + s.d.cast("app_id", "text") + ` = $2)`
	var total int
	if err := s.reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM functions WHERE `+cond, userID, appID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := queryAll(ctx, s.reader(), scanFunction, `SELECT `+functionColumns+` FROM functions WHERE `+cond+
		` ORDER BY created_at, id LIMIT $3 OFFSET $4`, userID, appID, limit, offset)
	return rows, total, err
}

// Pipeline is a sequence of agent and function steps; Steps is their JSON.
type Pipeline struct {
	ID          string
	AppID       string
	UserID      string
	Name        string
	Description string
	Steps       json.RawMessage
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

const pipelineColumns = `id, app_id, user_id, name, description, steps, created_at, updated_at`

func scanPipeline(row interface{ Scan(...any) error }, p *Pipeline) error {
	var steps []byte
	err := row.Scan(&p.ID, &p.AppID, &p.UserID, &p.Name, &p.Description, &steps, &p.CreatedAt, &p.UpdatedAt)
	p.Steps = json.RawMessage(steps)
	return err
}

// PipelineCreate inserts p.
func (s *Store) PipelineCreate(ctx context.Context, p *Pipeline) error {
	return s.changingAgents(func() error {
		_, err := s.writer().ExecContext(ctx, `INSERT INTO pipelines (`+pipelineColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			p.ID, p.AppID, p.UserID, p.Name, p.Description, jsonOr(p.Steps, "[]"), s.ts(p.CreatedAt), s.ts(p.UpdatedAt))
		return mapErr(err)
	})
}

// PipelineUpdate writes every mutable field of p.
func (s *Store) PipelineUpdate(ctx context.Context, p *Pipeline) error {
	return s.changingAgents(func() error {
		return expectOne(s.writer().ExecContext(ctx, `UPDATE pipelines SET name = $2, description = $3, steps = $4, updated_at = $5 WHERE id = $1`,
			p.ID, p.Name, p.Description, jsonOr(p.Steps, "[]"), s.ts(p.UpdatedAt)))
	})
}

// PipelineDelete deletes a pipeline.
func (s *Store) PipelineDelete(ctx context.Context, id string) error {
	return s.changingAgents(func() error {
		return expectOne(s.writer().ExecContext(ctx, `DELETE FROM pipelines WHERE id = $1`, id))
	})
}

// PipelineGet returns the pipeline with id, whoever owns it.
func (s *Store) PipelineGet(ctx context.Context, id string) (*Pipeline, error) {
	var p Pipeline
	err := scanPipeline(s.reader().QueryRowContext(ctx, `SELECT `+pipelineColumns+` FROM pipelines WHERE id = $1`, id), &p)
	return &p, mapErr(err)
}

// PipelineListByApp returns an app's pipelines in creation order.
func (s *Store) PipelineListByApp(ctx context.Context, appID string) ([]Pipeline, error) {
	return queryAll(ctx, s.reader(), scanPipeline,
		`SELECT `+pipelineColumns+` FROM pipelines WHERE app_id = $1 ORDER BY created_at, id`, appID)
}

// PipelineListByUser returns a page of the user's pipelines (of one app
// when appID is set), in creation order, and how many there are.
func (s *Store) PipelineListByUser(ctx context.Context, userID, appID string, limit, offset int) ([]Pipeline, int, error) {
	cond := `user_id = $1 AND ($2 = '' OR ` + s.d.cast("app_id", "text") + ` = $2)`
	var total int
	if err := s.reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM pipelines WHERE `+cond, userID, appID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := queryAll(ctx, s.reader(), scanPipeline, `SELECT `+pipelineColumns+` FROM pipelines WHERE `+cond+
		` ORDER BY created_at, id LIMIT $3 OFFSET $4`, userID, appID, limit, offset)
	return rows, total, err
}

// Authenticator is an OAuth 2.0 provider definition of an app. The client
// secret arrives later from the user and is stored sealed.
type Authenticator struct {
	ID    string
	AppID string
	// UserID is the owner of the app: read with the row, never written.
	UserID            string
	Name              string
	AuthenticatorType string
	ClientID          string
	ClientSecretEnc   string
	Scopes            []string
	AuthorizeURL      string
	TokenURL          string
	RefreshURL        string
	RevokeURL         string
	RedirectURI       string
	Configuration     json.RawMessage
	IsActive          bool
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

const authenticatorColumns = `id, app_id, name, authenticator_type, client_id, client_secret_enc, scopes, authorize_url,
	token_url, refresh_url, revoke_url, redirect_uri, configuration, is_active, created_at, updated_at`

// authenticatorSelect reads authenticators (as au) with their app's owner.
const authenticatorSelect = `SELECT au.id, au.app_id, au.name, au.authenticator_type, au.client_id, au.client_secret_enc, au.scopes,
	au.authorize_url, au.token_url, au.refresh_url, au.revoke_url, au.redirect_uri, au.configuration, au.is_active,
	au.created_at, au.updated_at, ap.user_id
	FROM authenticators au JOIN apps ap ON ap.id = au.app_id`

func scanAuthenticator(row interface{ Scan(...any) error }, a *Authenticator) error {
	var scopes, conf []byte
	if err := row.Scan(&a.ID, &a.AppID, &a.Name, &a.AuthenticatorType, &a.ClientID, &a.ClientSecretEnc, &scopes,
		&a.AuthorizeURL, &a.TokenURL, &a.RefreshURL, &a.RevokeURL, &a.RedirectURI, &conf, &a.IsActive,
		&a.CreatedAt, &a.UpdatedAt, &a.UserID); err != nil {
		return err
	}
	a.Configuration = json.RawMessage(conf)
	return json.Unmarshal(scopes, &a.Scopes)
}

// AuthenticatorCreate inserts a; a name the app already has is ErrConflict.
func (s *Store) AuthenticatorCreate(ctx context.Context, a *Authenticator) error {
	scopes, err := jsonText(orEmpty(a.Scopes))
	if err != nil {
		return err
	}
	_, err = s.writer().ExecContext(ctx, `INSERT INTO authenticators (`+authenticatorColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
		a.ID, a.AppID, a.Name, a.AuthenticatorType, a.ClientID, a.ClientSecretEnc, scopes, a.AuthorizeURL, a.TokenURL,
		a.RefreshURL, a.RevokeURL, a.RedirectURI, jsonOr(a.Configuration, "{}"), a.IsActive, s.ts(a.CreatedAt), s.ts(a.UpdatedAt))
	return mapErr(err)
}

// AuthenticatorUpdate writes every mutable field of a.
func (s *Store) AuthenticatorUpdate(ctx context.Context, a *Authenticator) error {
	scopes, err := jsonText(orEmpty(a.Scopes))
	if err != nil {
		return err
	}
	return expectOne(s.writer().ExecContext(ctx, `UPDATE authenticators SET name = $2, authenticator_type = $3,
		client_id = $4, client_secret_enc = $5, scopes = $6, authorize_url = $7, token_url = $8, refresh_url = $9,
		revoke_url = $10, redirect_uri = $11, configuration = $12, is_active = $13, updated_at = $14 WHERE id = $1`,
		a.ID, a.Name, a.AuthenticatorType, a.ClientID, a.ClientSecretEnc, scopes, a.AuthorizeURL, a.TokenURL,
		a.RefreshURL, a.RevokeURL, a.RedirectURI, jsonOr(a.Configuration, "{}"), a.IsActive, s.ts(a.UpdatedAt)))
}

// AuthenticatorDelete deletes an authenticator.
func (s *Store) AuthenticatorDelete(ctx context.Context, id string) error {
	return expectOne(s.writer().ExecContext(ctx, `DELETE FROM authenticators WHERE id = $1`, id))
}

// AuthenticatorGet returns the authenticator with id, whoever owns its app.
func (s *Store) AuthenticatorGet(ctx context.Context, id string) (*Authenticator, error) {
	var a Authenticator
	err := scanAuthenticator(s.reader().QueryRowContext(ctx, authenticatorSelect+` WHERE au.id = $1`, id), &a)
	return &a, mapErr(err)
}

// AuthenticatorListByApp returns an app's authenticators in creation order.
func (s *Store) AuthenticatorListByApp(ctx context.Context, appID string) ([]Authenticator, error) {
	return queryAll(ctx, s.reader(), scanAuthenticator, authenticatorSelect+` WHERE au.app_id = $1 ORDER BY au.created_at, au.id`, appID)
}

// AuthenticatorPage returns a page of an app's authenticators in creation
// order, and how many it has.
func (s *Store) AuthenticatorPage(ctx context.Context, appID string, limit, offset int) ([]Authenticator, int, error) {
	var total int
	if err := s.reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM authenticators WHERE app_id = $1`, appID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := queryAll(ctx, s.reader(), scanAuthenticator,
		authenticatorSelect+` WHERE au.app_id = $1 ORDER BY au.created_at, au.id LIMIT $2 OFFSET $3`, appID, limit, offset)
	return rows, total, err
}

// AppPart is an agent, a function or a pipeline of an app, as much of it
// as its MCP tool needs.
type AppPart struct {
	Kind        string // agent, function or pipeline
	ID          string
	AppID       string
	Name        string
	Description string
	AgentTypeID string          // agents only
	InputSchema json.RawMessage // agents and functions; nil when none
}

// AppPartList returns the agents, then the functions, then the pipelines
// of the user's apps (of app appID when set), each in creation order; with
// names, only the parts with one of those names. It is one statement
// where listing each kind with its count took six: an MCP request lists
// them on every call.
func (s *Store) AppPartList(ctx context.Context, userID, appID string, names ...string) ([]AppPart, error) {
	// An app's parts are found through its (app_id, name) indexes; the
	// user's own check rides along.
	args := []any{userID}
	cond := `user_id = $1 AND app_id IS NOT NULL`
	if appID != "" {
		args = append(args, appID)
		cond = `app_id = $2 AND user_id = $1`
	}
	if len(names) > 0 {
		cond += ` AND name IN (` + placeholders(len(args)+1, len(names)) + `)`
		for _, n := range names {
			args = append(args, n)
		}
	}
	schema := s.d.cast("input_schema", "text")
	q := `SELECT 0 AS kind, id, app_id, name, description, agent_type_id, ` + schema + ` AS input_schema, created_at FROM agents WHERE ` + cond + `
		UNION ALL SELECT 1, id, app_id, name, description, '', ` + schema + `, created_at FROM functions WHERE ` + cond + `
		UNION ALL SELECT 2, id, app_id, name, description, '', NULL, created_at FROM pipelines WHERE ` + cond + `
		ORDER BY 1, 8, 2`
	kinds := [...]string{"agent", "function", "pipeline"}
	return queryAll(ctx, s.reader(), func(row interface{ Scan(...any) error }, p *AppPart) error {
		var kind int
		var schema sql.NullString
		var created any
		if err := row.Scan(&kind, &p.ID, &p.AppID, &p.Name, &p.Description, &p.AgentTypeID, &schema, &created); err != nil {
			return err
		}
		p.Kind = kinds[kind]
		if schema.Valid {
			p.InputSchema = json.RawMessage(schema.String)
		}
		return nil
	}, q, args...)
}
