package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// Comma-separated settings are flag.Values, so that the variable and its
// flag parse and validate the same way: an error names the bad entry at
// startup, never at the first request.

// CIDRs is a comma-separated list of networks; a bare address is a network
// of one.
type CIDRs []netip.Prefix

// Set replaces the list with the networks of s.
func (c *CIDRs) Set(s string) error {
	var out CIDRs
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			a, aerr := netip.ParseAddr(part)
			if aerr != nil || a.Zone() != "" {
				return fmt.Errorf("%q is not a CIDR (e.g. 10.0.0.0/8) or an IP address", part)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		// Peers are compared unmapped: ::ffff:10.0.0.0/104 is 10.0.0.0/8.
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return fmt.Errorf("%q mixes IPv4-mapped and IPv6 addresses", part)
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	*c = out
	return nil
}

func (c *CIDRs) String() string {
	if c == nil {
		return ""
	}
	parts := make([]string, len(*c))
	for i, p := range *c {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

// Contains reports whether a is in one of the networks.
func (c CIDRs) Contains(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range c {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Origins is a comma-separated list of web origins (scheme://host[:port]),
// kept the way browsers send them in the Origin header: lower case, no
// trailing slash.
type Origins []string

// Set replaces the list with the origins of s.
func (o *Origins) Set(s string) error {
	var out Origins
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimRight(strings.TrimSpace(part), "/")
		if part == "" {
			continue
		}
		u, err := url.Parse(part)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return fmt.Errorf("%q is not an origin (scheme://host[:port], e.g. https://app.example.com)", part)
		}
		out = append(out, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	*o = out
	return nil
}

func (o *Origins) String() string {
	if o == nil {
		return ""
	}
	return strings.Join(*o, ",")
}

// Has reports whether origin is listed.
func (o Origins) Has(origin string) bool {
	for _, x := range o {
		if x == origin {
			return true
		}
	}
	return false
}
