// Package oauth is the platform's OAuth 2.0 client side: one preset per
// provider type (the provider's endpoints, its client id format and the
// configuration keys it reads into the authorize URL), and Flow, the
// authorization code flow, refresh, revocation and user info of one
// authenticator on golang.org/x/oauth2. It keeps no state: the credential
// service stores what the flow returns.
package oauth

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
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
	"custom": custom{},
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

// passThrough are the configuration keys that are authorize URL parameters
// of the same name, for every provider: the user asked for them.
var passThrough = []string{"access_type", "prompt", "approval_prompt", "user_scope", "team", "response_mode", "resource"}

// authParams are the authorize URL parameters of conf that every provider
// takes: the pass-through keys, and include_granted_scopes as true/false.
func authParams(conf Configuration) url.Values {
	v := url.Values{}
	for _, k := range passThrough {
		if s := conf.Str(k); s != "" {
			v.Set(k, s)
		}
	}
	if conf.Has("include_granted_scopes") {
		v.Set("include_granted_scopes", fmt.Sprint(conf.Bool("include_granted_scopes")))
	}
	return v
}

// claim is the string claim key of m, "" when absent or not a string.
func claim(m map[string]any, keys ...string) string {
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			if v != "" {
				return v
			}
		case float64:
			return strings.TrimSuffix(fmt.Sprintf("%f", v), ".000000")
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

// custom is an RFC 6749 provider the authenticator describes: its URLs and
// configuration.userinfo_url.
type custom struct{}

func (custom) Endpoints(conf Configuration) Endpoints {
	return Endpoints{UserinfoURL: conf.Str("userinfo_url")}
}
func (custom) CheckClientID(id string) string { return "" }
func (custom) AuthParams(conf Configuration) url.Values {
	v := authParams(conf)
	return v
}
func (custom) UserInfo(m map[string]any) UserInfo { return oidcUserInfo(m) }
