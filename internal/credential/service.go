// Package credential is the credential service: users' OAuth connections to
// the authenticators of their apps (the authorization flow and its
// callback), the tokens kept sealed and fresh (refreshed on the spot when
// expired and in the background ahead of expiry, once across every node),
// each connection's health, and the operations agents and users call:
// get_credentials, is_connected, list_connections, refresh_token,
// revoke_connection, get_auth_url, validate_scopes, get_token_info,
// get_user_info.
package credential

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/oauth"
	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/secret"
	"github.com/agentplatform/agentplatform/internal/store"
)

// The credential events (DESIGN §4 OAuth; Events).
const (
	EventStatusChanged = "credential_status_changed"
	EventDisconnected  = "credential_disconnected"
)

// Lead is how long before expiry the background refresher renews tokens.
const Lead = 5 * time.Minute

// Apps checks the app filter of a list (apps.Service).
type Apps interface {
	ListApp(ctx context.Context, c *auth.Caller, appID string) (string, error)
}

// Options tune the service; zero values are the defaults.
type Options struct {
	// Apps checks a list's app filter (apps.Service); required.
	Apps      Apps
	Egress    *egress.Guard
	PublicURL string
	// ScanInterval is how often the refresher looks for due connections
	// (default 15 s).
	ScanInterval time.Duration
	// ProviderTimeout bounds one call to a provider (default 15 s).
	ProviderTimeout time.Duration
	// RefreshRate bounds the background refreshes this process starts
	// per second (default 50).
	RefreshRate int
}

// Service is the credential service.
type Service struct {
	store  *store.Store
	box    *secret.Box
	events *events.Bus
	log    *slog.Logger
	opts   Options
	http   *http.Client
	queue  *queue.Queue // set by AddJobs
	// flight joins this process's concurrent refreshes of one connection;
	// the store's lease joins those of different processes.
	flight singleflight.Group
	// pace spreads background refreshes out, so that a fleet of tokens
	// falling due together does not starve the API of CPU; on-the-spot
	// refreshes are not paced.
	pace *rate.Limiter
	// node names this process's leases.
	node string
	now  func() time.Time
}

// New returns the service.
func New(s *store.Store, box *secret.Box, bus *events.Bus, log *slog.Logger, opts Options) *Service {
	if opts.ScanInterval <= 0 {
		opts.ScanInterval = 15 * time.Second
	}
	if opts.ProviderTimeout <= 0 {
		opts.ProviderTimeout = 15 * time.Second
	}
	if opts.RefreshRate <= 0 {
		opts.RefreshRate = 50
	}
	guard := opts.Egress
	if guard == nil {
		guard = egress.New(nil)
	}
	return &Service{store: s, box: box, events: bus, log: log, opts: opts, node: uuid.NewString(), now: store.Now,
		pace: rate.NewLimiter(rate.Limit(opts.RefreshRate), 1),
		http: guard.Client(egress.Options{Field: "the authenticator's URL", Timeout: opts.ProviderTimeout, MaxBody: 1 << 20})}
}

// Credentials is what get_credentials answers. The tokens are left out
// for callers that may not hold them (CanHoldTokens).
type Credentials struct {
	AccessToken  string     `json:"access_token,omitempty" doc:"Only to agent keys and admin or app:access API keys"`
	RefreshToken string     `json:"refresh_token,omitempty" doc:"Only to agent keys and admin or app:access API keys"`
	ExpiresAt    *time.Time `json:"expires_at"`
	Scopes       []string   `json:"scopes"`
	Provider     string     `json:"provider"`
	TokenType    string     `json:"token_type" enum:"Bearer"`
}

// Connection is a connection as list_connections shows it, with its
// health.
type Connection struct {
	AuthenticatorID   string     `json:"authenticator_id" format:"uuid"`
	AuthenticatorType string     `json:"authenticator_type" enum:"custom,google,slack,microsoft,yahoo"`
	Name              string     `json:"name" doc:"The authenticator's name: the provider of the credential routes"`
	AppID             string     `json:"app_id" format:"uuid"`
	IsConnected       bool       `json:"is_connected"`
	Status            string     `json:"status" enum:"connected,refresh_failing,disconnected"`
	LastError         string     `json:"last_error"`
	ConnectedAt       time.Time  `json:"connected_at"`
	LastUsed          *time.Time `json:"last_used"`
	LastRefreshed     *time.Time `json:"last_refreshed"`
	NextRefreshAt     *time.Time `json:"next_refresh_at"`
	Scopes            []string   `json:"scopes"`
	ExpiresAt         *time.Time `json:"expires_at"`
}

// TokenInfo is get_token_info's answer: about the token, never the token.
type TokenInfo struct {
	Provider      string     `json:"provider"`
	IssuedAt      *time.Time `json:"issued_at"`
	ExpiresAt     *time.Time `json:"expires_at"`
	Scopes        []string   `json:"scopes"`
	IsExpired     bool       `json:"is_expired"`
	NeedsRefresh  bool       `json:"needs_refresh"`
	LastRefreshed *time.Time `json:"last_refreshed"`
	Status        string     `json:"status" enum:"connected,refresh_failing,disconnected"`
	LastError     string     `json:"last_error"`
}

// CanHoldTokens reports whether c may be handed third-party tokens: agent
// keys and admin or app:access API keys, never a session (a browser).
func CanHoldTokens(c *auth.Caller) bool {
	switch c.Kind {
	case auth.KindAgentKey:
		return true
	case auth.KindAPIKey:
		return c.HasScope(auth.ScopeAdmin) || c.HasScope(auth.ScopeAppAccess)
	}
	return false
}

var errAppNotFound = apperr.NotFoundf("App not found")

// target is what a credential call names: the app's authenticator of that
// name and the caller's connection to it (nil: none).
type target struct {
	auth *store.Authenticator
	conn *store.Connection
}

// resolve finds provider (an authenticator's name) in app appID for c.
// Another user's app, or one a bound key does not see, is absent (404);
// an app without that authenticator, or with it switched off, does not
// support the provider.
func (s *Service) resolve(ctx context.Context, c *auth.Caller, appID, provider string) (*target, error) {
	if uuid.Validate(appID) != nil || !c.SeesApp(appID) {
		return nil, errAppNotFound
	}
	t, err := s.store.CredentialTargetGet(ctx, c.UserID, appID, provider)
	if errors.Is(err, store.ErrNotFound) {
		app, err := s.store.AppGet(ctx, appID)
		if errors.Is(err, store.ErrNotFound) || err == nil && app.UserID != c.UserID {
			return nil, errAppNotFound
		}
		if err != nil {
			return nil, err
		}
		return nil, apperr.Newf(apperr.ProviderUnsupported, "This app has no authenticator named %q", provider)
	}
	if err != nil {
		return nil, err
	}
	if t.Authenticator.UserID != c.UserID {
		return nil, errAppNotFound
	}
	if !t.Authenticator.IsActive {
		return nil, apperr.Newf(apperr.ProviderUnsupported, "The authenticator %q is switched off (is_active false)", provider)
	}
	return &target{auth: &t.Authenticator, conn: t.Connection}, nil
}

func notConnected(provider string) error {
	return apperr.Newf(apperr.CredentialNotFound, "No connection to %q: the user must connect an account first", provider)
}

func lost(provider string) error {
	return apperr.Newf(apperr.TokenExpired, "The connection to %q was lost (the provider refused its refresh token): the user must connect again", provider)
}

// usable is the connection of t whose access token is valid now, refreshed
// on the spot when it has expired; the errors of the contract otherwise.
func (s *Service) usable(ctx context.Context, t *target) (*store.Connection, error) {
	conn := t.conn
	if conn == nil {
		return nil, notConnected(t.auth.Name)
	}
	if conn.Status == store.ConnDisconnected || conn.AccessTokenEnc == "" {
		return nil, lost(t.auth.Name)
	}
	if !expired(conn, s.now()) {
		return conn, nil
	}
	conn, err := s.refresh(ctx, conn, false)
	if err != nil {
		return nil, err
	}
	switch {
	case conn.Status == store.ConnDisconnected:
		return nil, lost(t.auth.Name)
	case expired(conn, s.now()):
		detail := conn.LastError
		switch {
		case detail != "":
		case conn.RefreshTokenEnc == "":
			detail = "the provider gave no refresh token"
		default:
			detail = "the provider's new token expires at once"
		}
		return nil, apperr.Newf(apperr.TokenExpired, "The token for %q has expired and could not be refreshed: %s", t.auth.Name, detail)
	}
	return conn, nil
}

// expiryMargin is how close to its expiry a token counts as expired: it
// must survive the agent's call to the provider. A token that lives less
// than four margins gets a quarter of its life instead.
const expiryMargin = 10 * time.Second

func expired(c *store.Connection, now time.Time) bool {
	if c.ExpiresAt == nil {
		return false
	}
	margin := expiryMargin
	if c.IssuedAt != nil {
		margin = min(margin, c.ExpiresAt.Sub(*c.IssuedAt)/4)
	}
	return !now.Add(margin).Before(*c.ExpiresAt)
}

// touchEvery spaces the writes of last_used: get_credentials is a hot path
// and a minute is precision enough.
const touchEvery = time.Minute

func (s *Service) touch(ctx context.Context, c *store.Connection) {
	now := s.now()
	if c.LastUsed != nil && now.Sub(*c.LastUsed) < touchEvery {
		return
	}
	if err := s.store.ConnectionTouch(ctx, c.ID, now); err != nil {
		s.log.Warn("credential: record last use", "connection_id", c.ID, "err", err)
	}
}

// Get is get_credentials: the connection's tokens, refreshed on the spot
// when expired; missing required scopes are InvalidScopeError.
func (s *Service) Get(ctx context.Context, c *auth.Caller, appID, provider string, required []string) (*Credentials, error) {
	t, err := s.resolve(ctx, c, appID, provider)
	if err != nil {
		return nil, err
	}
	conn, err := s.usable(ctx, t)
	if err != nil {
		return nil, err
	}
	if missing := missingScopes(conn.Scopes, required); len(missing) > 0 {
		return nil, apperr.Newf(apperr.InvalidScope, "The connection to %q lacks the scopes %v", provider, missing)
	}
	out := &Credentials{ExpiresAt: conn.ExpiresAt, Scopes: nonNil(conn.Scopes), Provider: provider, TokenType: "Bearer"}
	if CanHoldTokens(c) {
		if out.AccessToken, err = s.box.Open(conn.AccessTokenEnc); err != nil {
			return nil, err
		}
		if conn.RefreshTokenEnc != "" {
			if out.RefreshToken, err = s.box.Open(conn.RefreshTokenEnc); err != nil {
				return nil, err
			}
		}
	}
	s.touch(ctx, conn)
	return out, nil
}

// IsConnected is is_connected: a connection whose tokens are usable or
// being retried.
func (s *Service) IsConnected(ctx context.Context, c *auth.Caller, appID, provider string) (bool, error) {
	t, err := s.resolve(ctx, c, appID, provider)
	if err != nil {
		return false, err
	}
	return t.conn != nil && isConnected(t.conn), nil
}

func isConnected(c *store.Connection) bool {
	return c.Status != store.ConnDisconnected && c.AccessTokenEnc != ""
}

// List is list_connections: c's connections (of appID when given), with
// their health.
func (s *Service) List(ctx context.Context, c *auth.Caller, appID string, limit, offset int) ([]Connection, int, error) {
	app, err := s.opts.Apps.ListApp(ctx, c, appID)
	if err != nil {
		return nil, 0, err
	}
	conns, total, err := s.store.ConnectionList(ctx, c.UserID, app, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Connection, 0, len(conns))
	auths := map[string]*store.Authenticator{}
	for i := range conns {
		conn := &conns[i]
		a, ok := auths[conn.AuthenticatorID]
		if !ok {
			if a, err = s.store.AuthenticatorGet(ctx, conn.AuthenticatorID); err != nil {
				return nil, 0, err
			}
			auths[conn.AuthenticatorID] = a
		}
		out = append(out, connectionOut(a, conn))
	}
	return out, total, nil
}

func connectionOut(a *store.Authenticator, c *store.Connection) Connection {
	return Connection{AuthenticatorID: a.ID, AuthenticatorType: a.AuthenticatorType, Name: a.Name, AppID: c.AppID,
		IsConnected: isConnected(c), Status: c.Status, LastError: c.LastError, ConnectedAt: c.ConnectedAt, LastUsed: c.LastUsed,
		LastRefreshed: c.LastRefreshed, NextRefreshAt: c.NextRefreshAt, Scopes: nonNil(c.Scopes), ExpiresAt: c.ExpiresAt}
}

// Refresh is refresh_token: a refresh now, whatever the expiry. A
// connection without a refresh token answers false; a refusal of the
// provider is TokenExpiredError (invalid_grant: the connection is lost) or
// AuthenticationFailedError.
func (s *Service) Refresh(ctx context.Context, c *auth.Caller, appID, provider string) (bool, error) {
	t, err := s.resolve(ctx, c, appID, provider)
	if err != nil {
		return false, err
	}
	if t.conn == nil {
		return false, notConnected(provider)
	}
	if t.conn.Status == store.ConnDisconnected {
		return false, lost(provider)
	}
	if t.conn.RefreshTokenEnc == "" {
		return false, nil
	}
	conn, err := s.refresh(ctx, t.conn, true)
	if err != nil {
		return false, err
	}
	switch conn.Status {
	case store.ConnDisconnected:
		return false, lost(provider)
	case store.ConnRefreshFailing:
		return false, apperr.Newf(apperr.AuthFailed, "The refresh of %q failed: %s", provider, conn.LastError)
	}
	return true, nil
}

// Revoke is revoke_connection: the provider is asked to revoke the tokens
// (when it has a revocation endpoint), and the connection is deleted
// whatever it answers. False when there was no connection.
func (s *Service) Revoke(ctx context.Context, c *auth.Caller, appID, provider string) (bool, error) {
	t, err := s.resolve(ctx, c, appID, provider)
	if err != nil {
		return false, err
	}
	if t.conn == nil {
		return false, nil
	}
	return true, s.revoke(ctx, t.auth, t.conn)
}

// revoke revokes conn at the provider (best effort) and deletes it,
// announcing the disconnection.
func (s *Service) revoke(ctx context.Context, a *store.Authenticator, conn *store.Connection) error {
	if flow, err := s.flow(a); err != nil {
		s.log.Warn("credential: revoke", "authenticator_id", a.ID, "err", err)
	} else if flow.CanRevoke() {
		// Revoking the refresh token ends the grant (RFC 7009 §2.1).
		token, hint := conn.RefreshTokenEnc, "refresh_token"
		if token == "" {
			token, hint = conn.AccessTokenEnc, "access_token"
		}
		if token != "" {
			plain, err := s.box.Open(token)
			if err == nil {
				pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ProviderTimeout)
				err = flow.Revoke(pctx, plain, hint)
				cancel()
			}
			if err != nil {
				s.log.Warn("credential: the provider's revocation failed; the connection is deleted anyway",
					"connection_id", conn.ID, "reason", oauth.Describe(err))
			}
		}
	}
	return s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.ConnectionDelete(ctx, conn.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		ended := *conn
		ended.Status, ended.LastError = store.ConnDisconnected, "revoked"
		return s.announce(ctx, tx, a, conn.Status, &ended)
	})
}

// RevokeAll revokes every connection to authenticator a, before it is
// deleted.
func (s *Service) RevokeAll(ctx context.Context, a *store.Authenticator) error {
	conns, err := s.store.ConnectionListByAuthenticator(ctx, a.ID)
	if err != nil {
		return err
	}
	for i := range conns {
		if err := s.revoke(ctx, a, &conns[i]); err != nil {
			return err
		}
	}
	return nil
}

// ValidateScopes is validate_scopes: whether the connection holds every
// required scope, and those it lacks.
func (s *Service) ValidateScopes(ctx context.Context, c *auth.Caller, appID, provider string, required []string) (bool, []string, error) {
	t, err := s.resolve(ctx, c, appID, provider)
	if err != nil {
		return false, nil, err
	}
	if t.conn == nil || !isConnected(t.conn) {
		return false, nil, notConnected(provider)
	}
	missing := missingScopes(t.conn.Scopes, required)
	return len(missing) == 0, missing, nil
}

// TokenInfo is get_token_info.
func (s *Service) TokenInfo(ctx context.Context, c *auth.Caller, appID, provider string) (*TokenInfo, error) {
	t, err := s.resolve(ctx, c, appID, provider)
	if err != nil {
		return nil, err
	}
	conn := t.conn
	if conn == nil {
		return nil, notConnected(provider)
	}
	now := s.now()
	return &TokenInfo{Provider: provider, IssuedAt: conn.IssuedAt, ExpiresAt: conn.ExpiresAt, Scopes: nonNil(conn.Scopes),
		IsExpired:     conn.ExpiresAt != nil && !now.Before(*conn.ExpiresAt),
		NeedsRefresh:  conn.ExpiresAt != nil && !now.Add(Lead).Before(*conn.ExpiresAt) || conn.Status == store.ConnRefreshFailing,
		LastRefreshed: conn.LastRefreshed, Status: conn.Status, LastError: conn.LastError}, nil
}

// UserInfo is get_user_info: the provider's account of the connected
// user, read with a valid access token.
func (s *Service) UserInfo(ctx context.Context, c *auth.Caller, appID, provider string) (*oauth.UserInfo, error) {
	t, err := s.resolve(ctx, c, appID, provider)
	if err != nil {
		return nil, err
	}
	flow, err := s.flow(t.auth)
	if err != nil {
		return nil, err
	}
	if !flow.HasUserInfo() {
		return nil, apperr.Newf(apperr.ProviderUnsupported,
			"The authenticator %q has no user info endpoint (set configuration.userinfo_url)", provider)
	}
	conn, err := s.usable(ctx, t)
	if err != nil {
		return nil, err
	}
	token, err := s.box.Open(conn.AccessTokenEnc)
	if err != nil {
		return nil, err
	}
	u, err := flow.UserInfo(ctx, token)
	var status *oauth.StatusError
	if errors.As(err, &status) && status.Status == http.StatusUnauthorized {
		// A refresh may have rotated the token between our read and the
		// provider's answer (many providers revoke the old one at once),
		// or be rotating it still: refresh waits for one in flight, or
		// takes the one that ended since our read, or refreshes (the
		// provider refused the token). Once more with what it leaves.
		fresh, ferr := s.refresh(ctx, conn, false)
		if ferr == nil && fresh.Version != conn.Version && isConnected(fresh) && !expired(fresh, s.now()) {
			if token, err = s.box.Open(fresh.AccessTokenEnc); err != nil {
				return nil, err
			}
			conn = fresh
			u, err = flow.UserInfo(ctx, token)
		}
	}
	if err != nil {
		return nil, apperr.Newf(apperr.AuthFailed, "The user info of %q could not be read: %s", provider, oauth.Describe(err))
	}
	s.touch(ctx, conn)
	return u, nil
}

// flow is the OAuth flow of authenticator a, its client secret opened.
func (s *Service) flow(a *store.Authenticator) (*oauth.Flow, error) {
	conf, err := configuration(a)
	if err != nil {
		return nil, err
	}
	secretText := ""
	if a.ClientSecretEnc != "" {
		if secretText, err = s.box.Open(a.ClientSecretEnc); err != nil {
			return nil, err
		}
	}
	return oauth.New(oauth.Client{Type: a.AuthenticatorType, ClientID: a.ClientID, ClientSecret: secretText, Scopes: a.Scopes,
		AuthorizeURL: a.AuthorizeURL, TokenURL: a.TokenURL, RefreshURL: a.RefreshURL, RevokeURL: a.RevokeURL,
		RedirectURI: a.RedirectURI, Configuration: conf}, s.http)
}

// configuration is a's provider-specific settings.
func configuration(a *store.Authenticator) (oauth.Configuration, error) {
	conf := oauth.Configuration{}
	if len(a.Configuration) > 0 {
		if err := json.Unmarshal(a.Configuration, &conf); err != nil {
			return nil, fmt.Errorf("credential: configuration of authenticator %s: %w", a.ID, err)
		}
	}
	return conf, nil
}

// announce records the events of a connection's status change from
// `from` to conn's status, in tx: credential_status_changed on every
// change, and credential_disconnected when it ends disconnected.
func (s *Service) announce(ctx context.Context, tx *store.Store, a *store.Authenticator, from string, conn *store.Connection) error {
	if from == conn.Status {
		return nil
	}
	now := s.now()
	ev := func(typ string) *events.Event {
		return &events.Event{Type: typ, UserID: conn.UserID, Status: conn.Status, Error: conn.LastError, Timestamp: now,
			Context: map[string]any{"app_id": conn.AppID, "provider": a.Name, "authenticator_id": a.ID,
				"previous_status": from}}
	}
	evs := []*events.Event{ev(EventStatusChanged)}
	if conn.Status == store.ConnDisconnected {
		evs = append(evs, ev(EventDisconnected))
	}
	return s.events.Record(ctx, tx, evs...)
}

func missingScopes(have, required []string) []string {
	missing := []string{}
	for _, r := range required {
		if !slices.Contains(have, r) {
			missing = append(missing, r)
		}
	}
	return missing
}

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}
