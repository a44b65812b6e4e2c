// Package oauth is the platform's OAuth 2.0 client side: one preset per
// provider type (the provider's endpoints, its client id format and the
// configuration keys it reads into the authorize URL), and Flow, the
// authorization code flow, refresh, revocation and user info of one
// authenticator on golang.org/x/oauth2. It keeps no state: the credential
// service stores what the flow returns.
package oauth

import (
	"net/url"
	"slices"
	"strconv"
)

// Provider is the preset of one authenticator type. Presets are listed in
// Presets; custom is the RFC 6749 provider the user describes entirely.
type Provider interface {
	// Endpoints are the provider's defaults for an authenticator's
	// configuration (Microsoft's tenant picks its URLs). A custom provider
	// has none.
	Endpoints(conf Configuration) Endpoints
	// CheckClientID returns a description of the expected format when id
	// is not a client id of this provider ("" when it is).
	CheckClientID(id string) string
	// AuthParams are the authorize URL's provider-specific parameters
	// taken from conf (e.g. Google's access_type), defaults included.
	AuthParams(conf Configuration) url.Values
	// UserInfo maps the claims of the provider's user info answer.
	UserInfo(claims map[string]any) UserInfo
	// ScopeSeparator joins the scopes in the authorize URL: a space
	// (RFC 6749), or what the provider wants instead (Slack: a comma).
	// configuration.scope_separator overrides it.
	ScopeSeparator() string
}

// Endpoints are a provider's URLs. Any may be empty: no revocation, no
// user info.
type Endpoints struct {
	AuthorizeURL, TokenURL, RevokeURL, UserinfoURL string
}

// UserInfo is the provider's account of the connected user.
type UserInfo struct {
	Email          string `json:"email"`
	Name           string `json:"name"`
	ProviderUserID string `json:"provider_user_id"`
	Verified       bool   `json:"verified"`
	Picture        string `json:"picture"`
}

// Presets are the supported authenticator types.
var Presets = map[string]Provider{
	"custom":    custom{},
	"google":    google{},
	"slack":     slack{},
	"microsoft": microsoft{},
	"yahoo":     yahoo{},
}

// Types lists the supported authenticator types, sorted.
func Types() []string {
	ts := make([]string, 0, len(Presets))
	for t := range Presets {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// Configuration is an authenticator's provider-specific settings (the
// spec's configuration keys).
type Configuration map[string]any

// Str is the string at key, "" when absent or not a string.
func (c Configuration) Str(key string) string {
	s, _ := c[key].(string)
	return s
}

// Bool is the boolean at key, false when absent or not a boolean.
func (c Configuration) Bool(key string) bool {
	b, _ := c[key].(bool)
	return b
}

// Has reports whether key is set.
func (c Configuration) Has(key string) bool {
	_, ok := c[key]
	return ok
}

// authParams are the authorize URL parameters of the named configuration
// keys that conf sets: strings as they are, booleans as true/false.
func authParams(conf Configuration, keys ...string) url.Values {
	v := url.Values{}
	for _, k := range keys {
		switch x := conf[k].(type) {
		case string:
			if x != "" {
				v.Set(k, x)
			}
		case bool:
			v.Set(k, strconv.FormatBool(x))
		}
	}
	return v
}

// claim is the first of the string claims keys that m has, "" when none.
func claim(m map[string]any, keys ...string) string {
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			if v != "" {
				return v
			}
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return ""
}

// oidcUserInfo maps the standard OpenID Connect claims.
func oidcUserInfo(m map[string]any) UserInfo {
	verified, _ := m["email_verified"].(bool)
	if s, ok := m["email_verified"].(string); ok {
		verified = s == "true"
	}
	return UserInfo{Email: claim(m, "email"), Name: claim(m, "name"), ProviderUserID: claim(m, "sub", "id", "user_id"),
		Verified: verified, Picture: claim(m, "picture")}
}
