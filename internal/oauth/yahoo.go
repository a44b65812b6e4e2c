package oauth

import (
	"net/url"
	"regexp"
)

// yahoo is Yahoo's OAuth 2.0 with OpenID Connect. It has no revocation
// endpoint.
type yahoo struct{}

// yahooClientID: Yahoo's client ids are base64-like strings ending in "--".
var yahooClientID = regexp.MustCompile(`^[A-Za-z0-9+/=_-]+$`)

func (yahoo) Endpoints(Configuration) Endpoints {
	return Endpoints{
		AuthorizeURL: "https://api.login.yahoo.com/oauth2/request_auth",
		TokenURL:     "https://api.login.yahoo.com/oauth2/get_token",
		UserinfoURL:  "https://api.login.yahoo.com/openid/v1/userinfo",
	}
}

func (yahoo) CheckClientID(id string) string {
	if yahooClientID.MatchString(id) {
		return ""
	}
	return "a Yahoo client id is made of letters, digits and + / = _ - only"
}

func (yahoo) AuthParams(conf Configuration) url.Values { return authParams(conf, "prompt") }

func (yahoo) UserInfo(m map[string]any) UserInfo {
	u := oidcUserInfo(m)
	u.Name = claim(m, "name", "nickname", "given_name")
	return u
}

func (yahoo) ScopeSeparator() string { return " " }
