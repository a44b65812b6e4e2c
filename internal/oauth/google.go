package oauth

import (
	"net/url"
	"regexp"
)

// google is Google's OAuth 2.0 for web server applications (OpenID Connect).
type google struct{}

var googleClientID = regexp.MustCompile(`^[A-Za-z0-9_.-]+\.apps\.googleusercontent\.com$`)

func (google) Endpoints(Configuration) Endpoints {
	return Endpoints{
		AuthorizeURL: "https://accounts.google.com/o/oauth2/v2/auth",
		TokenURL:     "https://oauth2.googleapis.com/token",
		RevokeURL:    "https://oauth2.googleapis.com/revoke",
		UserinfoURL:  "https://openidconnect.googleapis.com/v1/userinfo",
	}
}

func (google) CheckClientID(id string) string {
	if googleClientID.MatchString(id) {
		return ""
	}
	return "a Google client id ends in .apps.googleusercontent.com"
}

// AuthParams asks for offline access unless told otherwise: without it
// Google issues no refresh token, and the connection dies with its first
// access token.
func (google) AuthParams(conf Configuration) url.Values {
	v := authParams(conf, "access_type", "prompt", "include_granted_scopes")
	if v.Get("access_type") == "" {
		v.Set("access_type", "offline")
	}
	return v
}

func (google) UserInfo(m map[string]any) UserInfo { return oidcUserInfo(m) }

func (google) ScopeSeparator() string { return " " }
