package oauth

import (
	"net/url"
	"regexp"
)

// slack is Slack's OAuth v2 (apps installed in a workspace); its user info
// is "Sign in with Slack" (OpenID Connect).
type slack struct{}

var slackClientID = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)

func (slack) Endpoints(Configuration) Endpoints {
	return Endpoints{
		AuthorizeURL: "https://slack.com/oauth/v2/authorize",
		TokenURL:     "https://slack.com/api/oauth.v2.access",
		RevokeURL:    "https://slack.com/api/auth.revoke",
		UserinfoURL:  "https://slack.com/api/openid.connect.userInfo",
	}
}

func (slack) CheckClientID(id string) string {
	if slackClientID.MatchString(id) {
		return ""
	}
	return "a Slack client id is two numbers joined by a dot, e.g. 1234567890.0987654321"
}

func (slack) AuthParams(conf Configuration) url.Values {
	return authParams(conf, "user_scope", "team")
}

// UserInfo prefers Slack's own claims: its user id is what Slack's API
// calls the user, and its images are there when picture is not.
func (slack) UserInfo(m map[string]any) UserInfo {
	u := oidcUserInfo(m)
	u.ProviderUserID = claim(m, "https://slack.com/user_id", "sub")
	u.Name = claim(m, "name", "given_name")
	u.Picture = claim(m, "picture", "https://slack.com/user_image_192", "https://slack.com/user_image_72")
	return u
}

// ScopeSeparator: Slack reads scope (and user_scope) as a comma-separated
// list.
func (slack) ScopeSeparator() string { return "," }
