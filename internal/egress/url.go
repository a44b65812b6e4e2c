package egress

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/agentplatform/agentplatform/internal/apperr"
)

// loopback4 and loopback6 are what `localhost` names (RFC 6761: always
// loopback, whatever a resolver says).
var (
	loopback4 = netip.MustParseAddr("127.0.0.1")
	loopback6 = netip.IPv6Loopback()
)

// CheckURL is the create-time check of a URL the platform will call: an
// absolute http(s) URL whose host is not a literal forbidden address (in
// any spelling) nor localhost, unless AP_EGRESS_ALLOW allows it. A host
// name is left to the dial-time check, where its DNS answer is known. The
// error is a 400 naming field.
func (g *Guard) CheckURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return apperr.Invalid(field, fmt.Sprintf("Invalid value for field %s: must be an absolute http or https URL", field))
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		if g.check(field, loopback4) != nil && g.check(field, loopback6) != nil {
			return refusedAtCreate(field, host, loopback4, private)
		}
		return nil
	}
	a, ok := hostAddr(host)
	if !ok {
		return nil
	}
	if err := g.check(field, a); err != nil {
		r := err.(*Refused)
		return refusedAtCreate(field, host, r.Addr, r.Kind)
	}
	return nil
}

func refusedAtCreate(field, host string, a netip.Addr, kind string) error {
	what := host
	if host != a.String() {
		what = fmt.Sprintf("%s (%s)", host, a)
	}
	return apperr.Invalid(field, fmt.Sprintf("Invalid value for field %s: %s is %s (allow it with %s)", field, what, kind, Variable))
}

// Redact is a user-supplied URL fit for logs and records: without userinfo,
// query or fragment, which may carry credentials.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
