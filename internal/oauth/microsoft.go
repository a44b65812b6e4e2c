package oauth

import (
	"net/url"
	"regexp"
	"slices"
)

// microsoft is the Microsoft identity platform (v2.0 endpoints) of one
// tenant: configuration.tenant, "common" when unset.
type microsoft struct{}

var (
	guid = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)
	// domainName is a fully qualified name such as contoso.onmicrosoft.com.
	domainName = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$`)
	// tenantAliases are the tenants that are not one organisation.
	tenantAliases = []string{"common", "organizations", "consumers"}
)

// checkTenant describes what a Microsoft tenant is when t is not one ("" when
// it is). It is also what keeps the tenant from changing the endpoints'
// paths.
func checkTenant(t string) string {
	if slices.Contains(tenantAliases, t) || guid.MatchString(t) || (len(t) <= 253 && domainName.MatchString(t)) {
		return ""
	}
	return "a tenant is common, organizations, consumers, a tenant id (GUID) or a domain name"
}

func (microsoft) Endpoints(conf Configuration) Endpoints {
	tenant := conf.Str("tenant")
	if tenant == "" {
		tenant = "common"
	}
	base := "https://login.microsoftonline.com/" + url.PathEscape(tenant) + "/oauth2/v2.0/"
	return Endpoints{AuthorizeURL: base + "authorize", TokenURL: base + "token", UserinfoURL: "https://graph.microsoft.com/oidc/userinfo"}
}

func (microsoft) CheckClientID(id string) string {
	if guid.MatchString(id) {
		return ""
	}
	return "a Microsoft client id (application id) is a GUID such as 00000000-0000-0000-0000-000000000000"
}

func (microsoft) AuthParams(conf Configuration) url.Values {
	return authParams(conf, "response_mode", "prompt")
}

// UserInfo: Microsoft's user info has no email_verified; a work account
// may have no email but its user principal name.
func (microsoft) UserInfo(m map[string]any) UserInfo {
	u := oidcUserInfo(m)
	u.Email = claim(m, "email", "preferred_username", "upn")
	return u
}

func (microsoft) ScopeSeparator() string { return " " }
