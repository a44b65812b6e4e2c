package apps

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/agentplatform/agentplatform/internal/oauth"
	"github.com/agentplatform/agentplatform/internal/store"
)

// CallbackPath is the OAuth callback route under AP_PUBLIC_URL, where every
// provider sends the user back.
const CallbackPath = "/api/v1/oauth/callback"

// PrepareAuthenticator applies to a decoded authenticator the rules that
// depend on this instance, and fills in the defaults, so that the row
// says everything a flow needs:
//   - authorize_url is HTTPS in production;
//   - redirect_uri is the OAuth callback on AP_PUBLIC_URL (its default);
//   - the URLs the platform itself calls (token, refresh, revoke and user
//     info) pass the egress guard's create-time check;
//   - a known provider's endpoints fill those a leaves empty.
//
// Every failure is a 400 naming the field under prefix, a's path in the
// request ("" for a body of its own, "authenticators[0]." in a manifest).
func (s *Service) PrepareAuthenticator(prefix string, a *Authenticator) error {
	d := &decoder{}
	if s.opts.Production && a.AuthorizeURL != "" && scheme(a.AuthorizeURL) != "https" {
		d.invalid(prefix+"authorize_url", "must be an https URL in production (AP_ENV=production)")
		return d.err
	}
	callback := s.callback()
	if a.RedirectURI == "" {
		a.RedirectURI = callback
	} else if problem := checkRedirect(a.RedirectURI, callback); problem != "" {
		d.invalid(prefix+"redirect_uri", "%s", problem)
		return d.err
	}
	conf := configurationOf(a.Configuration)
	for _, u := range []struct{ field, raw string }{{"token_url", a.TokenURL}, {"refresh_url", a.RefreshURL},
		{"revoke_url", a.RevokeURL}, {"configuration.userinfo_url", conf.Str("userinfo_url")}} {
		if u.raw == "" {
			continue
		}
		if err := s.egress.CheckURL(prefix+u.field, u.raw); err != nil {
			return err
		}
	}
	ep := oauth.Presets[a.AuthenticatorType].Endpoints(conf)
	orDefault(&a.AuthorizeURL, ep.AuthorizeURL)
	orDefault(&a.TokenURL, ep.TokenURL)
	orDefault(&a.RevokeURL, ep.RevokeURL)
	return nil
}

// AuthenticatorSpec is row r as a manifest writes it: without the defaults
// PrepareAuthenticator filled in, so that a manifest moves to another
// instance (another callback), and a patch of the configuration (a
// Microsoft tenant) moves the endpoints with it.
func (s *Service) AuthenticatorSpec(r *store.Authenticator) Authenticator {
	a := Authenticator{Name: r.Name, AuthenticatorType: r.AuthenticatorType, ClientID: r.ClientID, Scopes: orEmpty(r.Scopes),
		AuthorizeURL: r.AuthorizeURL, TokenURL: r.TokenURL, RefreshURL: r.RefreshURL, RevokeURL: r.RevokeURL,
		RedirectURI: r.RedirectURI}
	if len(r.Configuration) > 0 && string(r.Configuration) != "{}" {
		a.Configuration = r.Configuration
	}
	if p, ok := oauth.Presets[r.AuthenticatorType]; ok {
		ep := p.Endpoints(configurationOf(r.Configuration))
		unlessDefault(&a.AuthorizeURL, ep.AuthorizeURL)
		unlessDefault(&a.TokenURL, ep.TokenURL)
		unlessDefault(&a.RevokeURL, ep.RevokeURL)
	}
	unlessDefault(&a.RedirectURI, s.callback())
	return a
}

// SetOn writes a's fields onto row r; r's id, app, secret, is_active and
// times are the caller's.
func (a *Authenticator) SetOn(r *store.Authenticator) {
	r.Name, r.AuthenticatorType, r.ClientID, r.Scopes = a.Name, a.AuthenticatorType, a.ClientID, a.Scopes
	r.AuthorizeURL, r.TokenURL, r.RefreshURL, r.RevokeURL = a.AuthorizeURL, a.TokenURL, a.RefreshURL, a.RevokeURL
	r.RedirectURI, r.Configuration = a.RedirectURI, a.Configuration
}

func (s *Service) callback() string { return s.opts.PublicURL + CallbackPath }

// checkRedirect describes why uri is not the platform's callback ("" when
// it is): the provider must send the user back to this platform's origin,
// at the callback path.
func checkRedirect(uri, callback string) string {
	u, err := url.Parse(uri)
	want, _ := url.Parse(callback)
	switch {
	case err != nil:
		return "must be an absolute http or https URL"
	case origin(u) != origin(want):
		return fmt.Sprintf("must be on this platform's origin %s (AP_PUBLIC_URL)", origin(want))
	case u.Path != want.Path || u.Fragment != "":
		return fmt.Sprintf("must be the OAuth callback %s", callback)
	}
	return ""
}

// origin is u's scheme://host:port, the default port left out.
func origin(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host
}

// scheme is raw's scheme, lower case (url.Parse makes it so).
func scheme(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme
}

// configurationOf is a stored or decoded configuration; a bad one (never
// written: it was validated) is empty.
func configurationOf(raw json.RawMessage) oauth.Configuration {
	var conf oauth.Configuration
	_ = json.Unmarshal(raw, &conf)
	return conf
}

func orDefault(v *string, def string) {
	if *v == "" {
		*v = def
	}
}

func unlessDefault(v *string, def string) {
	if *v == def {
		*v = ""
	}
}
