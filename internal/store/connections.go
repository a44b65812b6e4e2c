package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// The statuses of a connection's health (DESIGN §4 OAuth).
const (
	ConnConnected      = "connected"
	ConnRefreshFailing = "refresh_failing"
	ConnDisconnected   = "disconnected"
)

// Connection is a user's OAuth tokens for one authenticator of an app
// (sealed) and their health.
type Connection struct {
	ID              string
	UserID          string
	AppID           string
	AuthenticatorID string
	Status          string
	AccessTokenEnc  string
	RefreshTokenEnc string
	TokenType       string
	Scopes          []string
	ExpiresAt       *time.Time
	IssuedAt        *time.Time
	ConnectedAt     time.Time
	LastUsed        *time.Time
	LastRefreshed   *time.Time
	// NextRefreshAt is when the refresher takes the connection; nil when
	// there is nothing it could refresh.
	NextRefreshAt   *time.Time
	RefreshFailures int
	LastError       string
	LeaseOwner      string
	LeaseUntil      *time.Time
	// Version counts token writes and refresh outcomes.
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

const connectionColumns = `id, user_id, app_id, authenticator_id, status, access_token_enc, refresh_token_enc, token_type,
	scopes, expires_at, issued_at, connected_at, last_used, last_refreshed, next_refresh_at, refresh_failures, last_error,
	lease_owner, lease_until, version, created_at, updated_at`

func scanConnection(row interface{ Scan(...any) error }, c *Connection) error {
	var scopes []byte
	var expires, issued, used, refreshed, next, lease sql.NullTime
	if err := row.Scan(&c.ID, &c.UserID, &c.AppID, &c.AuthenticatorID, &c.Status, &c.AccessTokenEnc, &c.RefreshTokenEnc,
		&c.TokenType, &scopes, &expires, &issued, &c.ConnectedAt, &used, &refreshed, &next, &c.RefreshFailures,
		&c.LastError, &c.LeaseOwner, &lease, &c.Version, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return err
	}
	c.ExpiresAt, c.IssuedAt, c.LastUsed, c.LastRefreshed = nullTime(expires), nullTime(issued), nullTime(used), nullTime(refreshed)
	c.NextRefreshAt, c.LeaseUntil = nullTime(next), nullTime(lease)
	c.ConnectedAt, c.CreatedAt, c.UpdatedAt = c.ConnectedAt.UTC(), c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return json.Unmarshal(scopes, &c.Scopes)
}

// ConnectionSave stores c as the one connection of its user, app and
// authenticator: a new connection, or a reconnection that replaces the
// tokens and health of the old one (keeping its id) and ends any refresh
// lease on it, so a refresh of the old tokens that was under way cannot
// overwrite the new ones. c's ID, Version and CreatedAt are set from the
// stored row.
func (s *Store) ConnectionSave(ctx context.Context, c *Connection) error {
	scopes, err := json.Marshal(orEmptyStrings(c.Scopes))
	if err != nil {
		return err
	}
	return mapErr(s.writer().QueryRowContext(ctx, `INSERT INTO connections (id, user_id, app_id, authenticator_id, status,
		access_token_enc, refresh_token_enc, token_type, scopes, expires_at, issued_at, connected_at, last_refreshed,
		next_refresh_at, refresh_failures, last_error, version, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, 1, $17, $17)
		ON CONFLICT (user_id, app_id, authenticator_id) DO UPDATE SET status = excluded.status,
			access_token_enc = excluded.access_token_enc, refresh_token_enc = excluded.refresh_token_enc,
			token_type = excluded.token_type, scopes = excluded.scopes, expires_at = excluded.expires_at,
			issued_at = excluded.issued_at, connected_at = excluded.connected_at, last_refreshed = excluded.last_refreshed,
			next_refresh_at = excluded.next_refresh_at, refresh_failures = excluded.refresh_failures,
			last_error = excluded.last_error, lease_owner = '', lease_until = NULL,
			version = connections.version + 1, updated_at = excluded.updated_at
		RETURNING id, version, created_at`,
		c.ID, c.UserID, c.AppID, c.AuthenticatorID, c.Status, c.AccessTokenEnc, c.RefreshTokenEnc, c.TokenType, scopes,
		s.tsPtr(c.ExpiresAt), s.tsPtr(c.IssuedAt), s.ts(c.ConnectedAt), s.tsPtr(c.LastRefreshed), s.tsPtr(c.NextRefreshAt),
		c.RefreshFailures, c.LastError, s.ts(c.UpdatedAt)).Scan(&c.ID, &c.Version, &c.CreatedAt))
}

// ErrConnectionChanged: the connection's tokens were written since the
// version a refresh started from (a reconnection, or another refresh whose
// lease had run out), so that refresh's outcome is stale.
var ErrConnectionChanged = errors.New("store: connection changed")

// ConnectionFinishRefresh writes the outcome of a refresh that started
// from version `from` of c (tokens and health), ends the refresh lease and
// counts the version, in one statement: the new tokens are stored before
// the lease lets anyone else look. The version, not the lease, guards the
// write: a refresh token the provider just rotated is written even if the
// lease ran out meanwhile, unless the tokens changed underneath it
// (ErrConnectionChanged).
func (s *Store) ConnectionFinishRefresh(ctx context.Context, c *Connection, from int64) error {
	scopes, err := json.Marshal(orEmptyStrings(c.Scopes))
	if err != nil {
		return err
	}
	err = s.writer().QueryRowContext(ctx, `UPDATE connections SET status = $3, access_token_enc = $4,
		refresh_token_enc = $5, token_type = $6, scopes = $7, expires_at = $8, issued_at = $9, last_refreshed = $10,
		next_refresh_at = $11, refresh_failures = $12, last_error = $13, lease_owner = '', lease_until = NULL,
		version = version + 1, updated_at = $14
		WHERE id = $1 AND version = $2 RETURNING version`,
		c.ID, from, c.Status, c.AccessTokenEnc, c.RefreshTokenEnc, c.TokenType, scopes, s.tsPtr(c.ExpiresAt),
		s.tsPtr(c.IssuedAt), s.tsPtr(c.LastRefreshed), s.tsPtr(c.NextRefreshAt), c.RefreshFailures, c.LastError,
		s.ts(c.UpdatedAt)).Scan(&c.Version)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrConnectionChanged
	}
	return err
}

// ConnectionGet returns connection id.
func (s *Store) ConnectionGet(ctx context.Context, id string) (*Connection, error) {
	var c Connection
	err := scanConnection(s.reader().QueryRowContext(ctx, `SELECT `+connectionColumns+` FROM connections WHERE id = $1`, id), &c)
	return &c, mapErr(err)
}

// CredentialTarget is what a credential call names: the authenticator of
// that name (its UserID is the app's owner), and the caller's connection
// to it (nil when there is none).
type CredentialTarget struct {
	Authenticator Authenticator
	Connection    *Connection
}

// CredentialTargetGet resolves (app, authenticator name) for userID's
// connection. ErrNotFound when the app has no authenticator of that name
// (or there is no such app: AppGet tells them apart).
func (s *Store) CredentialTargetGet(ctx context.Context, userID, appID, name string) (*CredentialTarget, error) {
	var t CredentialTarget
	err := scanAuthenticator(s.reader().QueryRowContext(ctx, authenticatorSelect+` WHERE au.app_id = $1 AND au.name = $2`,
		appID, name), &t.Authenticator)
	if err != nil {
		return nil, mapErr(err)
	}
	var c Connection
	err = scanConnection(s.reader().QueryRowContext(ctx, `SELECT `+connectionColumns+` FROM connections
		WHERE user_id = $1 AND app_id = $2 AND authenticator_id = $3`, userID, appID, t.Authenticator.ID), &c)
	switch {
	case err == nil:
		t.Connection = &c
	case !errors.Is(err, sql.ErrNoRows):
		return nil, err
	}
	return &t, nil
}

// ConnectionList returns a page of userID's connections (of appID when
// not ""), oldest first, with the total.
func (s *Store) ConnectionList(ctx context.Context, userID, appID string, limit, offset int) ([]Connection, int, error) {
	where, args := `user_id = $1`, []any{userID}
	if appID != "" {
		where, args = where+` AND app_id = $2`, append(args, appID)
	}
	total, err := s.count(ctx, `SELECT COUNT(*) FROM connections WHERE `+where, args...)
	if err != nil {
		return nil, 0, err
	}
	cs, err := queryAll(ctx, s.reader(), scanConnection, `SELECT `+connectionColumns+` FROM connections WHERE `+where+
		` ORDER BY created_at, id LIMIT $`+strconv.Itoa(len(args)+1)+` OFFSET $`+strconv.Itoa(len(args)+2),
		append(args, limit, offset)...)
	return cs, total, err
}

// ConnectionListByAuthenticator returns every connection to an
// authenticator (to revoke them before it goes).
func (s *Store) ConnectionListByAuthenticator(ctx context.Context, authenticatorID string) ([]Connection, error) {
	return queryAll(ctx, s.reader(), scanConnection,
		`SELECT `+connectionColumns+` FROM connections WHERE authenticator_id = $1 ORDER BY created_at, id`, authenticatorID)
}

// ConnectionDelete deletes connection id.
func (s *Store) ConnectionDelete(ctx context.Context, id string) error {
	return expectOne(s.writer().ExecContext(ctx, `DELETE FROM connections WHERE id = $1`, id))
}

// ConnectionTouch records a use of connection id at now.
func (s *Store) ConnectionTouch(ctx context.Context, id string, now time.Time) error {
	_, err := s.writer().ExecContext(ctx, `UPDATE connections SET last_used = $2 WHERE id = $1`, id, s.ts(now))
	return err
}

// ConnectionsClaimDue takes up to limit connections whose next refresh is
// due at now, oldest due first, and moves their next_refresh_at to
// retryAt, so the next scan does not take them again while their refresh
// jobs run (and does take them if a job is lost). It answers their ids.
func (s *Store) ConnectionsClaimDue(ctx context.Context, now, retryAt time.Time, limit int) ([]string, error) {
	return queryAll(ctx, s.writer(), func(row interface{ Scan(...any) error }, v *string) error { return row.Scan(v) },
		`UPDATE connections SET next_refresh_at = $2 WHERE id IN (
		SELECT id FROM connections WHERE next_refresh_at <= $1 ORDER BY next_refresh_at LIMIT $3)
		RETURNING id`, s.ts(now), s.ts(retryAt), limit)
}

// OAuthState is an issued authorization flow, waiting for its callback.
type OAuthState struct {
	StateHash       []byte
	UserID          string
	AppID           string
	AuthenticatorID string
	VerifierEnc     string
	ReturnTo        string
	ExpiresAt       time.Time
	CreatedAt       time.Time
}

const oauthStateColumns = `state_hash, user_id, app_id, authenticator_id, verifier_enc, return_to, expires_at, created_at`

func scanOAuthState(row interface{ Scan(...any) error }, st *OAuthState) error {
	if err := row.Scan(&st.StateHash, &st.UserID, &st.AppID, &st.AuthenticatorID, &st.VerifierEnc, &st.ReturnTo,
		&st.ExpiresAt, &st.CreatedAt); err != nil {
		return err
	}
	st.ExpiresAt, st.CreatedAt = st.ExpiresAt.UTC(), st.CreatedAt.UTC()
	return nil
}

// OAuthStateCreate stores an issued state.
func (s *Store) OAuthStateCreate(ctx context.Context, st *OAuthState) error {
	_, err := s.writer().ExecContext(ctx, `INSERT INTO oauth_states (`+oauthStateColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		st.StateHash, st.UserID, st.AppID, st.AuthenticatorID, st.VerifierEnc, st.ReturnTo, s.ts(st.ExpiresAt), s.ts(st.CreatedAt))
	return mapErr(err)
}

// OAuthStateGet returns the state of hash, without using it up.
func (s *Store) OAuthStateGet(ctx context.Context, hash []byte) (*OAuthState, error) {
	var st OAuthState
	err := scanOAuthState(s.reader().QueryRowContext(ctx, `SELECT `+oauthStateColumns+` FROM oauth_states WHERE state_hash = $1`, hash), &st)
	return &st, mapErr(err)
}

// OAuthStateTake deletes the state of hash and answers it: of two callers
// with the same state only one gets it (ErrNotFound for the other).
func (s *Store) OAuthStateTake(ctx context.Context, hash []byte) (*OAuthState, error) {
	var st OAuthState
	err := scanOAuthState(s.writer().QueryRowContext(ctx, `DELETE FROM oauth_states WHERE state_hash = $1 RETURNING `+oauthStateColumns, hash), &st)
	return &st, mapErr(err)
}

// OAuthStateDeleteExpired deletes the states that expired before t.
func (s *Store) OAuthStateDeleteExpired(ctx context.Context, t time.Time) (int64, error) {
	res, err := s.writer().ExecContext(ctx, `DELETE FROM oauth_states WHERE expires_at < $1`, s.ts(t))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func orEmptyStrings(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}
