package oauthtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/agentplatform/agentplatform/internal/oauthtest"
)

const redirectURI = "http://127.0.0.1:9999/callback"

// bundle is one server with one client registered, and the HTTP client the
// test speaks to it with: it follows no redirect, so the authorize answer
// can be read, and its idle connections are closed for goleak.
type bundle struct {
	srv  *oauthtest.Server
	conf *oauth2.Config
	http *http.Client
	ctx  context.Context
}

func setup(t *testing.T, opts oauthtest.Options) *bundle {
	t.Helper()
	srv := oauthtest.New(t, opts)
	srv.AddClient("app", "s3cret", []string{redirectURI}, []string{"read", "write"})
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
	return &bundle{
		srv: srv,
		conf: &oauth2.Config{
			ClientID:     "app",
			ClientSecret: "s3cret",
			Endpoint:     oauth2.Endpoint{AuthURL: srv.AuthorizeURL(), TokenURL: srv.TokenURL()},
			RedirectURL:  redirectURI,
			Scopes:       []string{"read", "write"},
		},
		http: client,
		ctx:  context.WithValue(t.Context(), oauth2.HTTPClient, client),
	}
}

// authorize sends the browser to authURL with extra appended and returns the
// query of the redirect back to the client.
func (b *bundle) authorize(t *testing.T, authURL string, extra url.Values) url.Values {
	t.Helper()
	resp, err := b.http.Get(authURL + "&" + extra.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(loc.String(), redirectURI+"?"), loc.String())
	return loc.Query()
}

// connect runs the code flow with PKCE for subject and returns its tokens.
func (b *bundle) connect(t *testing.T, subject string) *oauth2.Token {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	q := b.authorize(t, b.conf.AuthCodeURL("state-1234567", oauth2.S256ChallengeOption(verifier)), url.Values{"login_as": {subject}})
	tok, err := b.conf.Exchange(b.ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	return tok
}

func (b *bundle) refresh(refreshToken string) (*oauth2.Token, error) {
	return b.conf.TokenSource(b.ctx, &oauth2.Token{RefreshToken: refreshToken}).Token()
}

func requireOAuthError(t *testing.T, err error, code string) {
	t.Helper()
	var re *oauth2.RetrieveError
	require.ErrorAs(t, err, &re)
	require.Equal(t, code, re.ErrorCode, re.ErrorDescription)
}

func (b *bundle) userinfo(t *testing.T, token string) (int, oauthtest.Userinfo) {
	t.Helper()
	req, err := http.NewRequestWithContext(b.ctx, http.MethodGet, b.srv.UserinfoURL(), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := b.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var info oauthtest.Userinfo
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	}
	return resp.StatusCode, info
}

// revoke is RFC 7009 as the platform sends it; x/oauth2 has no revocation.
func (b *bundle) revoke(t *testing.T, token, hint string) int {
	t.Helper()
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	req, err := http.NewRequestWithContext(b.ctx, http.MethodPost, b.srv.RevokeURL(), strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("app", "s3cret")
	resp, err := b.http.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func TestCodeFlowWithPKCE(t *testing.T) {
	t.Parallel()
	b := setup(t, oauthtest.Options{})
	verifier := oauth2.GenerateVerifier()
	authURL := b.conf.AuthCodeURL("state-1234567", oauth2.S256ChallengeOption(verifier), oauth2.AccessTypeOffline)
	q := b.authorize(t, authURL, url.Values{"login_as": {"alice"}})
	require.Equal(t, "state-1234567", q.Get("state"))
	require.NotEmpty(t, q.Get("code"))

	last := b.srv.LastAuthorizeQuery()
	require.Equal(t, "S256", last.Get("code_challenge_method"))
	require.Equal(t, "offline", last.Get("access_type"), "unknown parameters reach the test")

	tok, err := b.conf.Exchange(b.ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	require.NotEmpty(t, tok.AccessToken)
	require.NotEmpty(t, tok.RefreshToken, "no offline scope needed")
	require.Equal(t, "bearer", tok.TokenType)
	require.Equal(t, "read write", tok.Extra("scope"))
	require.WithinDuration(t, time.Now().Add(time.Hour), tok.Expiry, 5*time.Second)

	_, err = b.conf.Exchange(b.ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	requireOAuthError(t, err, "invalid_grant")
	require.EqualValues(t, 1, b.srv.CodeExchanges())
	require.EqualValues(t, 2, b.srv.TokenRequests())
}

func TestPKCEVerifierIsChecked(t *testing.T) {
	t.Parallel()
	b := setup(t, oauthtest.Options{})
	verifier := oauth2.GenerateVerifier()
	q := b.authorize(t, b.conf.AuthCodeURL("state-1234567", oauth2.S256ChallengeOption(verifier)), url.Values{"login_as": {"alice"}})

	_, err := b.conf.Exchange(b.ctx, q.Get("code"), oauth2.VerifierOption(oauth2.GenerateVerifier()))
	requireOAuthError(t, err, "invalid_grant")
	_, err = b.conf.Exchange(b.ctx, q.Get("code"))
	requireOAuthError(t, err, "invalid_grant") // a challenge sent is enforced, even after a failure

	// Without a challenge PKCE is optional, and a stray verifier is refused.
	q = b.authorize(t, b.conf.AuthCodeURL("state-1234567"), url.Values{"login_as": {"alice"}})
	_, err = b.conf.Exchange(b.ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	requireOAuthError(t, err, "invalid_grant")
	_, err = b.conf.Exchange(b.ctx, q.Get("code"))
	require.NoError(t, err)

	q = b.authorize(t, b.conf.AuthCodeURL("state-1234567", oauth2.SetAuthURLParam("code_challenge", verifier)), url.Values{"login_as": {"alice"}})
	require.Equal(t, "invalid_request", q.Get("error"), "plain PKCE is refused")
	require.EqualValues(t, 1, b.srv.CodeExchanges())
}

func TestRefreshRotates(t *testing.T) {
	t.Parallel()
	b := setup(t, oauthtest.Options{})
	a := b.connect(t, "alice")

	fresh, err := b.refresh(a.RefreshToken)
	require.NoError(t, err)
	require.NotEqual(t, a.RefreshToken, fresh.RefreshToken)
	require.NotEqual(t, a.AccessToken, fresh.AccessToken)
	require.Equal(t, "read write", fresh.Extra("scope"))
	require.WithinDuration(t, time.Now().Add(time.Hour), fresh.Expiry, 5*time.Second)

	code, _ := b.userinfo(t, a.AccessToken)
	require.Equal(t, http.StatusUnauthorized, code, "a refresh kills the access token it replaces")
	code, _ = b.userinfo(t, fresh.AccessToken)
	require.Equal(t, http.StatusOK, code)

	_, err = b.refresh(a.RefreshToken)
	requireOAuthError(t, err, "invalid_grant")
	_, err = b.refresh(fresh.RefreshToken)
	requireOAuthError(t, err, "invalid_grant") // reuse of the old token revoked the grant
	require.EqualValues(t, 1, b.srv.Refreshes())
	require.EqualValues(t, 4, b.srv.TokenRequests())
}

func TestLifespans(t *testing.T) {
	t.Parallel()
	// fosite rounds expiry times to the second and truncates expires_in:
	// 2 s is the shortest lifespan that never answers expires_in 0, which
	// x/oauth2 reads as "never expires".
	b := setup(t, oauthtest.Options{AccessTokenLifespan: 2 * time.Second, RefreshTokenLifespan: 2 * time.Second})
	tok := b.connect(t, "alice")
	expiresIn, ok := tok.Extra("expires_in").(float64)
	require.True(t, ok, "expires_in: %v", tok.Extra("expires_in"))
	require.Contains(t, []float64{1, 2}, expiresIn)
	require.WithinDuration(t, time.Now().Add(2*time.Second), tok.Expiry, 1500*time.Millisecond)

	require.Eventually(t, func() bool {
		code, _ := b.userinfo(t, tok.AccessToken)
		return code == http.StatusUnauthorized
	}, 5*time.Second, 100*time.Millisecond)
	// The refresh token has no expires_in to poll on; rotation forbids
	// polling with it.
	time.Sleep(time.Until(tok.Expiry.Add(1500 * time.Millisecond)))
	_, err := b.refresh(tok.RefreshToken)
	requireOAuthError(t, err, "invalid_grant")
}

func TestRevocation(t *testing.T) {
	t.Parallel()
	b := setup(t, oauthtest.Options{})

	tok := b.connect(t, "alice")
	require.Equal(t, http.StatusOK, b.revoke(t, tok.RefreshToken, "refresh_token"))
	_, err := b.refresh(tok.RefreshToken)
	requireOAuthError(t, err, "invalid_grant")
	code, _ := b.userinfo(t, tok.AccessToken)
	require.Equal(t, http.StatusUnauthorized, code, "revoking one token revokes the grant")

	tok = b.connect(t, "alice")
	require.Equal(t, http.StatusOK, b.revoke(t, tok.AccessToken, "access_token"))
	code, _ = b.userinfo(t, tok.AccessToken)
	require.Equal(t, http.StatusUnauthorized, code)
	_, err = b.refresh(tok.RefreshToken)
	requireOAuthError(t, err, "invalid_grant")

	require.Equal(t, http.StatusOK, b.revoke(t, "unknown", ""), "RFC 7009: an unknown token is no error")
	require.EqualValues(t, 3, b.srv.Revocations())
	require.EqualValues(t, 0, b.srv.Refreshes())
}

func TestUserinfo(t *testing.T) {
	t.Parallel()
	b := setup(t, oauthtest.Options{})
	tok := b.connect(t, "alice")

	code, info := b.userinfo(t, tok.AccessToken)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, oauthtest.Userinfo{
		Sub:           "alice",
		Email:         "alice@example.test",
		Name:          "User alice",
		EmailVerified: true,
		Picture:       "http://127.0.0.2/alice.png",
	}, info)

	code, _ = b.userinfo(t, "garbage")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = b.userinfo(t, tok.RefreshToken)
	require.Equal(t, http.StatusUnauthorized, code, "a refresh token is not a bearer token")
	require.EqualValues(t, 3, b.srv.UserinfoRequests())
}

func TestAuthStyles(t *testing.T) {
	t.Parallel()
	b := setup(t, oauthtest.Options{})
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams, oauth2.AuthStyleAutoDetect} {
		b.conf.Endpoint.AuthStyle = style
		tok := b.connect(t, "alice")
		_, err := b.refresh(tok.RefreshToken)
		require.NoError(t, err, "style %d", style)
	}
	require.EqualValues(t, 3, b.srv.CodeExchanges())
	require.EqualValues(t, 3, b.srv.Refreshes())

	b.conf.ClientSecret = "wrong"
	b.conf.Endpoint.AuthStyle = oauth2.AuthStyleInHeader
	_, err := b.refresh("whatever")
	requireOAuthError(t, err, "invalid_client")
}

func TestDown(t *testing.T) {
	t.Parallel()
	b := setup(t, oauthtest.Options{})
	tok := b.connect(t, "alice")

	b.srv.SetDown(true)
	_, err := b.refresh(tok.RefreshToken)
	var re *oauth2.RetrieveError
	require.ErrorAs(t, err, &re)
	require.Equal(t, http.StatusServiceUnavailable, re.Response.StatusCode)
	code, _ := b.userinfo(t, tok.AccessToken)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, http.StatusServiceUnavailable, b.revoke(t, tok.RefreshToken, ""))

	b.srv.SetDown(false)
	_, err = b.refresh(tok.RefreshToken)
	require.NoError(t, err, "an outage leaves the tokens as they were")
	require.EqualValues(t, 3, b.srv.TokenRequests())
	require.EqualValues(t, 1, b.srv.Refreshes())
}

func TestRevokeAllFor(t *testing.T) {
	t.Parallel()
	b := setup(t, oauthtest.Options{})
	alice1 := b.connect(t, "alice")
	alice2, err := b.refresh(b.connect(t, "alice").RefreshToken)
	require.NoError(t, err)
	bob := b.connect(t, "bob")

	b.srv.RevokeAllFor("alice")
	for _, tok := range []*oauth2.Token{alice1, alice2} {
		_, err := b.refresh(tok.RefreshToken)
		requireOAuthError(t, err, "invalid_grant")
		code, _ := b.userinfo(t, tok.AccessToken)
		require.Equal(t, http.StatusUnauthorized, code)
	}
	_, err = b.refresh(bob.RefreshToken)
	require.NoError(t, err)
}

func TestDenyAndNoLogin(t *testing.T) {
	t.Parallel()
	b := setup(t, oauthtest.Options{})
	q := b.authorize(t, b.conf.AuthCodeURL("state-1234567"), url.Values{"deny": {"1"}})
	require.Equal(t, "access_denied", q.Get("error"))
	require.Equal(t, "state-1234567", q.Get("state"))
	require.Empty(t, q.Get("code"))

	resp, err := b.http.Get(b.conf.AuthCodeURL("state-1234567"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.EqualValues(t, 0, b.srv.TokenRequests())
}

func TestTokenDelay(t *testing.T) {
	t.Parallel()
	b := setup(t, oauthtest.Options{})
	tok := b.connect(t, "alice")
	b.srv.SetTokenDelay(300 * time.Millisecond)

	// A request the client gave up on never reaches fosite.
	ctx, cancel := context.WithTimeout(b.ctx, 50*time.Millisecond)
	defer cancel()
	_, err := b.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)

	// Two refreshes with one token overlap in the delay; one wins.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, errs[i] = b.refresh(tok.RefreshToken) })
	}
	wg.Wait()
	require.True(t, (errs[0] == nil) != (errs[1] == nil), "%v", errs)
	requireOAuthError(t, errors.Join(errs...), "invalid_grant")
	require.EqualValues(t, 1, b.srv.Refreshes())
	require.EqualValues(t, 4, b.srv.TokenRequests())
}
