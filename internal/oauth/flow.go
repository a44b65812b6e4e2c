package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/agentplatform/agentplatform/internal/egress"
)

// Client is an authenticator as the flow needs it: its settings, its
// client secret opened.
type Client struct {
	Type          string
	ClientID      string
	ClientSecret  string
	Scopes        []string
	AuthorizeURL  string
	TokenURL      string
	RefreshURL    string
	RevokeURL     string
	RedirectURI   string
	Configuration Configuration
}

// Flow is the OAuth 2.0 flow of one authenticator. Every call to the
// provider goes through the HTTP client it was given (the egress guard's).
type Flow struct {
	provider Provider
	config   oauth2.Config
	refresh  oauth2.Config // config with the refresh URL as token URL
	client   Client
	userinfo string
	http     *http.Client
}

// Token is what the provider granted.
type Token struct {
	AccessToken  string
	RefreshToken string
	TokenType    string
	// Expiry is zero when the provider gave no expires_in.
	Expiry time.Time
	// Scopes are those granted: the answer's scope, else those asked.
	Scopes []string
}

// New returns the flow of c: the preset's endpoints fill in the URLs c
// leaves empty.
func New(c Client, hc *http.Client) (*Flow, error) {
	p, ok := Presets[c.Type]
	if !ok {
		return nil, fmt.Errorf("oauth: unsupported authenticator type %q", c.Type)
	}
	ep := p.Endpoints(c.Configuration)
	pick := func(own, preset string) string {
		if own != "" {
			return own
		}
		return preset
	}
	c.AuthorizeURL = pick(c.AuthorizeURL, ep.AuthorizeURL)
	c.TokenURL = pick(c.TokenURL, ep.TokenURL)
	c.RevokeURL = pick(c.RevokeURL, ep.RevokeURL)
	style := oauth2.AuthStyleAutoDetect
	switch c.Configuration.Str("token_endpoint_auth_method") {
	case "client_secret_basic":
		style = oauth2.AuthStyleInHeader
	case "client_secret_post":
		style = oauth2.AuthStyleInParams
	}
	f := &Flow{provider: p, client: c, http: hc, userinfo: pick(c.Configuration.Str("userinfo_url"), ep.UserinfoURL)}
	f.config = oauth2.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURL: c.RedirectURI, Scopes: c.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: c.AuthorizeURL, TokenURL: c.TokenURL, AuthStyle: style}}
	f.refresh = f.config
	f.refresh.Endpoint.TokenURL = pick(c.RefreshURL, c.TokenURL)
	return f, nil
}

// CanRevoke reports whether the provider has a revocation endpoint.
func (f *Flow) CanRevoke() bool { return f.client.RevokeURL != "" }

// HasUserInfo reports whether the provider has a user info endpoint.
func (f *Flow) HasUserInfo() bool { return f.userinfo != "" }

// AuthURL is where the user's browser goes to grant access; verifier is
// the PKCE code verifier ("" without PKCE).
func (f *Flow) AuthURL(state, verifier string) string {
	var opts []oauth2.AuthCodeOption
	if verifier != "" {
		opts = append(opts, oauth2.S256ChallengeOption(verifier))
	}
	sep := f.client.Configuration.Str("scope_separator")
	if sep == "" {
		sep = f.provider.ScopeSeparator()
	}
	if sep != " " {
		opts = append(opts, oauth2.SetAuthURLParam("scope", strings.Join(f.client.Scopes, sep)))
	}
	for k, vs := range f.provider.AuthParams(f.client.Configuration) {
		opts = append(opts, oauth2.SetAuthURLParam(k, vs[0]))
	}
	return f.config.AuthCodeURL(state, opts...)
}

func (f *Flow) ctx(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, f.http)
}

// Exchange trades an authorization code (and the PKCE verifier it was
// issued with) for tokens.
func (f *Flow) Exchange(ctx context.Context, code, verifier string) (*Token, error) {
	var opts []oauth2.AuthCodeOption
	if verifier != "" {
		opts = append(opts, oauth2.VerifierOption(verifier))
	}
	t, err := f.config.Exchange(f.ctx(ctx), code, opts...)
	if err != nil {
		return nil, err
	}
	return f.token(t, nil), nil
}

// Refresh trades a refresh token for new tokens. A provider that does not
// rotate refresh tokens answers none: the old one stays.
func (f *Flow) Refresh(ctx context.Context, refreshToken string, scopes []string) (*Token, error) {
	t, err := f.refresh.TokenSource(f.ctx(ctx), &oauth2.Token{RefreshToken: refreshToken}).Token()
	if err != nil {
		return nil, err
	}
	return f.token(t, scopes), nil
}

func (f *Flow) token(t *oauth2.Token, scopes []string) *Token {
	out := &Token{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, TokenType: t.Type(), Expiry: t.Expiry, Scopes: scopes}
	if out.Scopes == nil {
		out.Scopes = f.client.Scopes
	}
	if s, ok := t.Extra("scope").(string); ok && strings.TrimSpace(s) != "" {
		out.Scopes = strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
	}
	return out
}

// Revoke asks the provider to revoke token (RFC 7009); hint is
// "access_token" or "refresh_token". Without a revocation endpoint it does
// nothing.
func (f *Flow) Revoke(ctx context.Context, token, hint string) error {
	if f.client.RevokeURL == "" {
		return nil
	}
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	basic := f.config.Endpoint.AuthStyle == oauth2.AuthStyleInHeader
	if !basic {
		form.Set("client_id", f.client.ClientID)
		form.Set("client_secret", f.client.ClientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.client.RevokeURL, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(f.client.ClientID), url.QueryEscape(f.client.ClientSecret))
	}
	resp, err := f.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return &StatusError{Endpoint: "revoke_url", Status: resp.StatusCode}
	}
	return nil
}

// ErrNoUserInfo: the authenticator has no user info endpoint.
var ErrNoUserInfo = errors.New("oauth: the provider has no user info endpoint")

// UserInfo reads the connected user's account with accessToken.
func (f *Flow) UserInfo(ctx context.Context, accessToken string) (*UserInfo, error) {
	if f.userinfo == "" {
		return nil, ErrNoUserInfo
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.userinfo, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("Accept", "application/json")
	resp, err := f.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, &StatusError{Endpoint: "userinfo_url", Status: resp.StatusCode}
	}
	var claims map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&claims); err != nil {
		return nil, &StatusError{Endpoint: "userinfo_url", Status: resp.StatusCode, NotJSON: true}
	}
	u := f.provider.UserInfo(claims)
	return &u, nil
}

// StatusError is a provider endpoint's unexpected answer.
type StatusError struct {
	Endpoint string
	Status   int
	NotJSON  bool
}

func (e *StatusError) Error() string {
	if e.NotJSON {
		return fmt.Sprintf("%s answered %d with a body that is not a JSON object", e.Endpoint, e.Status)
	}
	return fmt.Sprintf("%s answered %d", e.Endpoint, e.Status)
}

// IsInvalidGrant reports whether the provider refused a grant for good
// (RFC 6749 invalid_grant: the code or refresh token is revoked, expired
// or used): the user must connect again.
func IsInvalidGrant(err error) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == "invalid_grant"
}

// Describe is a failed provider call's reason, fit to show the user and
// to record: the provider's error code, never its body or the tokens.
func Describe(err error) string {
	var re *oauth2.RetrieveError
	var se *StatusError
	switch {
	case errors.As(err, &re):
		if re.ErrorCode != "" {
			return fmt.Sprintf("the provider refused: %s", re.ErrorCode)
		}
		if re.Response != nil {
			return fmt.Sprintf("the provider answered %d", re.Response.StatusCode)
		}
		return "the provider refused"
	case errors.As(err, &se):
		return se.Error()
	case errors.Is(err, ErrNoUserInfo):
		return err.Error()
	}
	return "the provider could not be reached: " + egress.Describe(err)
}
