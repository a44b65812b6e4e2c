// Package oauthtest runs a real OAuth 2.0 authorization server, built on
// github.com/ory/fosite (the library behind Ory Hydra), for the tests of the
// platform's OAuth client side: the credential service connects accounts
// against it, refreshes, revokes and reads userinfo. A hand-written fake
// answers what its author expected; fosite answers what a provider that
// follows the RFCs does, so the platform is tested against the protocol
// rather than against our reading of it.
//
// What fosite does that a test must expect:
//   - A refresh rotates: it returns a new refresh token, and the old one is
//     dead. Presenting a dead refresh token again is taken as theft (RFC 6819
//     5.2.2.3): it fails with invalid_grant AND revokes the grant's current
//     tokens, so the winner of two racing refreshes loses its new tokens too.
//   - A refresh also kills the access token it replaces, at once.
//   - Revoking either token of a grant (RFC 7009) revokes both.
//   - Refresh tokens are issued whatever the scopes (no "offline" scope is
//     needed). Expiry times are rounded to the second and expires_in is
//     truncated: a 1 s lifespan may answer expires_in 0, which x/oauth2
//     reads as "never expires"; use 2 s or more.
//   - state must be at least 8 characters (invalid_state otherwise), and a
//     loopback redirect URI matches on any port (RFC 8252).
//
// There is no login page: /authorize signs in the subject named by the
// login_as query parameter and grants every requested scope, or answers
// access_denied when deny=1 is present. Tests append those parameters to the
// authorize URL the platform produced.
package oauthtest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/storage"
	"golang.org/x/oauth2"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
)

// Options configure a Server; the zero value is a provider with an hour's
// access tokens and a day's refresh tokens.
type Options struct {
	AccessTokenLifespan  time.Duration
	RefreshTokenLifespan time.Duration
}

// Server is the authorization server and the test's handle on it.
type Server struct {
	// URL is the base URL, http://127.0.0.2:port.
	URL string

	t        testing.TB
	config   *fosite.Config
	store    *store
	provider fosite.OAuth2Provider
	stopped  chan struct{}

	// mu serializes every use of fosite. Its memory store is not safe for
	// concurrent use (RevokeRefreshToken writes the token map under another
	// map's lock), and a provider's database makes a refresh atomic: of two
	// refreshes with one token, one wins and the other is refused.
	mu            sync.Mutex
	grants        map[string][]string // subject → request IDs, for RevokeAllFor
	lastAuthorize url.Values

	down       atomic.Bool
	tokenDelay atomic.Int64

	tokenRequests, refreshes, codeExchanges, revocations, userinfoRequests atomic.Int64
}

// store keeps a code's PKCE challenge for as long as the code. fosite deletes
// the challenge before it compares the verifier; with PKCE optional, a code
// whose verifier was wrong once could then be redeemed with no verifier.
type store struct{ *storage.MemoryStore }

func (*store) DeletePKCERequestSession(context.Context, string) error { return nil }

// New starts a server on egresstest's address; it stops when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.AccessTokenLifespan == 0 {
		opts.AccessTokenLifespan = time.Hour
	}
	if opts.RefreshTokenLifespan == 0 {
		opts.RefreshTokenLifespan = 24 * time.Hour
	}
	s := &Server{
		t:       t,
		store:   &store{storage.NewMemoryStore()},
		stopped: make(chan struct{}),
		grants:  map[string][]string{},
	}
	s.config = &fosite.Config{
		AccessTokenLifespan:  opts.AccessTokenLifespan,
		RefreshTokenLifespan: opts.RefreshTokenLifespan,
		GlobalSecret:         secret(),
		// bcrypt's minimum: fosite checks the client secret on every
		// token and revocation request.
		HashCost:      4,
		ScopeStrategy: fosite.ExactScopeStrategy,
		// fosite issues refresh tokens only to grants with an "offline"
		// scope unless this is empty; providers such as Google ask for
		// access_type=offline instead, and the platform needs one anyway.
		RefreshTokenScopes: []string{},
		// PKCE is the client's choice, but a challenge sent is enforced.
		EnforcePKCE:                    false,
		EnablePKCEPlainChallengeMethod: false,
		// error_description then says why, which is what a failing test
		// needs to read.
		SendDebugMessagesToClients: true,
	}
	s.provider = compose.Compose(s.config, s.store, compose.NewOAuth2HMACStrategy(s.config),
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2PKCEFactory, // after the code handler: it files the challenge under the code
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2TokenRevocationFactory,
		compose.OAuth2TokenIntrospectionFactory,
	)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /revoke", s.revoke)
	mux.HandleFunc("/userinfo", s.userinfo)
	s.URL = egresstest.NewServer(t, mux).URL
	// Registered after the server's Close, so it runs before it: a /token
	// request waiting out its delay ends instead of holding Close up.
	t.Cleanup(func() { close(s.stopped) })
	return s
}

func secret() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails: crypto/rand panics instead
	return b
}

// AuthorizeURL, TokenURL, RevokeURL and UserinfoURL are the endpoints, as a
// provider's configuration names them.
func (s *Server) AuthorizeURL() string { return s.URL + "/authorize" }
func (s *Server) TokenURL() string     { return s.URL + "/token" }
func (s *Server) RevokeURL() string    { return s.URL + "/revoke" }
func (s *Server) UserinfoURL() string  { return s.URL + "/userinfo" }

// AddClient registers a confidential client allowed the authorization code
// and refresh token grants and the given scopes. It may authenticate with
// client_secret_basic or client_secret_post: fosite enforces one method only
// for its OpenID Connect client type, not for DefaultClient.
func (s *Server) AddClient(id, secret string, redirectURIs, scopes []string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	hash, err := s.config.GetSecretsHasher(context.Background()).Hash(context.Background(), []byte(secret))
	if err != nil {
		s.t.Fatalf("oauthtest: hash the secret of client %s: %v", id, err)
	}
	s.store.Clients[id] = &fosite.DefaultClient{
		ID:            id,
		Secret:        hash,
		RedirectURIs:  redirectURIs,
		Scopes:        scopes,
		GrantTypes:    []string{"authorization_code", "refresh_token"},
		ResponseTypes: []string{"code"},
	}
}

// TokenRequests counts every request to /token, refused ones included.
func (s *Server) TokenRequests() int64 { return s.tokenRequests.Load() }

// Refreshes counts successful refresh_token grants.
func (s *Server) Refreshes() int64 { return s.refreshes.Load() }

// CodeExchanges counts successful authorization_code grants.
func (s *Server) CodeExchanges() int64 { return s.codeExchanges.Load() }

// Revocations counts every request to /revoke.
func (s *Server) Revocations() int64 { return s.revocations.Load() }

// UserinfoRequests counts every request to /userinfo.
func (s *Server) UserinfoRequests() int64 { return s.userinfoRequests.Load() }

// SetDown makes /token, /revoke and /userinfo answer 503 with a plain text
// body, as a provider behind a load balancer does in an outage.
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// SetTokenDelay makes /token wait d before fosite sees the request, so that
// concurrent refreshes overlap and a request the client gave up on changes
// nothing.
func (s *Server) SetTokenDelay(d time.Duration) { s.tokenDelay.Store(int64(d)) }

// LastAuthorizeQuery is the query of the latest /authorize request, valid or
// not.
func (s *Server) LastAuthorizeQuery() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := url.Values{}
	for k, v := range s.lastAuthorize {
		q[k] = append([]string(nil), v...)
	}
	return q
}

// RevokeAllFor revokes every grant the subject has made so far, as a user
// does who removes the app in the provider's account settings: the next
// refresh fails with invalid_grant and the access tokens stop working.
// fosite keeps the authorize request's ID through the code exchange and every
// refresh, so the IDs recorded at /authorize name all of a grant's tokens.
func (s *Server) RevokeAllFor(subject string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx := context.Background()
	for _, id := range s.grants[subject] {
		// Not found: the grant's tokens are already gone (never exchanged,
		// or deleted when a used refresh token came back).
		if err := s.store.RevokeRefreshToken(ctx, id); err != nil && !errors.Is(err, fosite.ErrNotFound) {
			s.t.Errorf("oauthtest: revoke refresh token of %s: %v", subject, err)
		}
		if err := s.store.RevokeAccessToken(ctx, id); err != nil && !errors.Is(err, fosite.ErrNotFound) {
			s.t.Errorf("oauthtest: revoke access token of %s: %v", subject, err)
		}
	}
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastAuthorize = r.URL.Query()
	ar, err := s.provider.NewAuthorizeRequest(ctx, r)
	if err != nil {
		s.provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	form := ar.GetRequestForm()
	if form.Get("deny") == "1" {
		s.provider.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint("The user denied the request (deny=1)."))
		return
	}
	subject := form.Get("login_as")
	if subject == "" {
		http.Error(w, "oauthtest: no login page; add login_as=<subject> (or deny=1) to the authorize URL", http.StatusBadRequest)
		return
	}
	for _, scope := range ar.GetRequestedScopes() {
		ar.GrantScope(scope)
	}
	resp, err := s.provider.NewAuthorizeResponse(ctx, ar, &fosite.DefaultSession{Subject: subject, Username: subject})
	if err != nil {
		s.provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	s.grants[subject] = append(s.grants[subject], ar.GetID())
	s.provider.WriteAuthorizeResponse(ctx, w, ar, resp)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.tokenRequests.Add(1)
	if s.unavailable(w) {
		return
	}
	if d := time.Duration(s.tokenDelay.Load()); d > 0 {
		// Read the body first: only then does net/http watch the
		// connection and cancel the context when the client hangs up.
		_ = r.ParseForm()
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done():
			return
		case <-s.stopped:
			return
		}
	}
	ctx := r.Context()
	s.mu.Lock()
	defer s.mu.Unlock()
	ar, err := s.provider.NewAccessRequest(ctx, r, new(fosite.DefaultSession))
	if err != nil {
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	resp, err := s.provider.NewAccessResponse(ctx, ar)
	if err != nil {
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	switch {
	case ar.GetGrantTypes().ExactOne("authorization_code"):
		s.codeExchanges.Add(1)
	case ar.GetGrantTypes().ExactOne("refresh_token"):
		s.refreshes.Add(1)
	}
	s.provider.WriteAccessResponse(ctx, w, ar, resp)
}

func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	s.revocations.Add(1)
	if s.unavailable(w) {
		return
	}
	ctx := r.Context()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.provider.WriteRevocationResponse(ctx, w, s.provider.NewRevocationRequest(ctx, r))
}

// Userinfo is what /userinfo answers for a subject.
type Userinfo struct {
	Sub           string `json:"sub"`
	Email         string `json:"email"`
	Name          string `json:"name"`
	EmailVerified bool   `json:"email_verified"`
	Picture       string `json:"picture"`
}

// UserinfoFor is the userinfo of subject.
func UserinfoFor(subject string) Userinfo {
	return Userinfo{
		Sub:           subject,
		Email:         subject + "@example.test",
		Name:          "User " + subject,
		EmailVerified: true,
		Picture:       "http://" + egresstest.Addr + "/" + subject + ".png",
	}
}

func (s *Server) userinfo(w http.ResponseWriter, r *http.Request) {
	s.userinfoRequests.Add(1)
	if s.unavailable(w) {
		return
	}
	ctx := r.Context()
	token := fosite.AccessTokenFromRequest(r)
	s.mu.Lock()
	use, ar, err := s.provider.IntrospectToken(ctx, token, fosite.AccessToken, new(fosite.DefaultSession))
	s.mu.Unlock()
	// fosite falls back to the refresh token store when the access token
	// is unknown; a refresh token is no bearer credential.
	if token == "" || err != nil || use != fosite.AccessToken {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprintln(w, `{"error":"invalid_token"}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(UserinfoFor(ar.GetSession().GetSubject()))
}

func (s *Server) unavailable(w http.ResponseWriter) bool {
	if !s.down.Load() {
		return false
	}
	http.Error(w, "oauthtest: the provider is down", http.StatusServiceUnavailable)
	return true
}

// Grant is a grant made straight to a client, as if its user had
// connected through the platform: the code flow run against the server's
// own endpoints with x/oauth2, for tests and benchmarks that need many real
// grants without a browser. redirectURI must be one of the client's.
func (s *Server) Grant(ctx context.Context, client *http.Client, clientID, clientSecret, redirectURI, subject string, scopes []string) (*oauth2.Token, error) {
	conf := &oauth2.Config{ClientID: clientID, ClientSecret: clientSecret, RedirectURL: redirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: s.AuthorizeURL(), TokenURL: s.TokenURL()}}
	noFollow := *client
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		conf.AuthCodeURL("grant-"+subject)+"&"+url.Values{"login_as": {subject}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	res, err := noFollow.Do(req)
	if err != nil {
		return nil, err
	}
	res.Body.Close()
	loc, err := url.Parse(res.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		return nil, fmt.Errorf("oauthtest: authorize answered %d, %q", res.StatusCode, res.Header.Get("Location"))
	}
	return conf.Exchange(context.WithValue(ctx, oauth2.HTTPClient, client), loc.Query().Get("code"))
}
