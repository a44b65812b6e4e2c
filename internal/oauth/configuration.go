package oauth

import (
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// configRules are the spec's known configuration keys, in the order they
// are checked (so the first problem is always the same one), each with
// what its value must be: a description of the problem, "" when fine.
var configRules = []struct {
	key   string
	check func(v any) string
}{
	{"access_type", isString},
	{"prompt", isString},
	{"include_granted_scopes", isBool},
	{"approval_prompt", isString},
	{"user_scope", isString},
	{"team", isString},
	{"tenant", stringThat(checkTenant)},
	{"response_mode", isString},
	{"resource", isString},
	// The platform runs the authorization code flow and nothing else.
	{"response_type", oneOf("code")},
	{"token_endpoint_auth_method", oneOf("client_secret_basic", "client_secret_post")},
	{"grant_type", oneOf("authorization_code")},
	{"pkce_enabled", isBool},
	{"scope_separator", stringThat(func(s string) string {
		if utf8.RuneCountInString(s) != 1 {
			return "must be one character"
		}
		return ""
	})},
	{"userinfo_url", stringThat(func(s string) string {
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "must be an absolute http or https URL"
		}
		return ""
	})},
}

// CheckConfiguration checks the known keys of conf, the configuration of
// an authenticator of authType: it returns the first bad key and what is
// wrong with it, or "" and "". Unknown keys are allowed (and ignored).
func CheckConfiguration(authType string, conf Configuration) (key, problem string) {
	for _, r := range configRules {
		v, ok := conf[r.key]
		if !ok {
			continue
		}
		if p := r.check(v); p != "" {
			return r.key, p
		}
	}
	// A known provider's user info endpoint is its own; only a custom one
	// says where its user info is.
	if conf.Has("userinfo_url") && authType != "custom" {
		return "userinfo_url", "only a custom authenticator takes a userinfo_url"
	}
	return "", ""
}

func isString(v any) string {
	if _, ok := v.(string); !ok {
		return "expected a string"
	}
	return ""
}

func isBool(v any) string {
	if _, ok := v.(bool); !ok {
		return "expected a boolean"
	}
	return ""
}

// stringThat is a string that check accepts.
func stringThat(check func(string) string) func(any) string {
	return func(v any) string {
		s, ok := v.(string)
		if !ok {
			return "expected a string"
		}
		return check(s)
	}
}

func oneOf(values ...string) func(any) string {
	return stringThat(func(s string) string {
		if !slices.Contains(values, s) {
			if len(values) == 1 {
				return "only " + values[0] + " is supported"
			}
			return "must be one of " + strings.Join(values, ", ")
		}
		return ""
	})
}
