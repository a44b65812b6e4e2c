package oauth

import "net/url"

// custom is an RFC 6749 provider the authenticator describes: its URLs and
// configuration.userinfo_url. It takes every known configuration key that
// is an authorize URL parameter of the same name: the user asked for them.
type custom struct{}

func (custom) Endpoints(conf Configuration) Endpoints {
	return Endpoints{UserinfoURL: conf.Str("userinfo_url")}
}

func (custom) CheckClientID(string) string { return "" }

func (custom) AuthParams(conf Configuration) url.Values {
	return authParams(conf, "access_type", "prompt", "include_granted_scopes", "approval_prompt", "user_scope", "team",
		"response_mode", "resource")
}

func (custom) UserInfo(m map[string]any) UserInfo { return oidcUserInfo(m) }

func (custom) ScopeSeparator() string { return " " }
