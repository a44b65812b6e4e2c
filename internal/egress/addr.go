package egress

import (
	"net/netip"
	"strconv"
	"strings"
)

// forbidden are the ranges an outbound call to a user-supplied address may
// not reach: everything that is not a public unicast address (IANA's
// special-purpose registries). The first match names the kind.
var forbidden = []struct {
	prefix netip.Prefix
	kind   string
}{
	// IPv4.
	{netip.MustParsePrefix("0.0.0.0/8"), private},       // "this network", unspecified
	{netip.MustParsePrefix("10.0.0.0/8"), private},      // RFC 1918
	{netip.MustParsePrefix("100.64.0.0/10"), private},   // carrier-grade NAT
	{netip.MustParsePrefix("127.0.0.0/8"), private},     // loopback
	{netip.MustParsePrefix("169.254.0.0/16"), private},  // link-local, cloud metadata
	{netip.MustParsePrefix("172.16.0.0/12"), private},   // RFC 1918
	{netip.MustParsePrefix("192.0.0.0/24"), reserved},   // IETF protocol assignments
	{netip.MustParsePrefix("192.0.2.0/24"), reserved},   // documentation
	{netip.MustParsePrefix("192.88.99.0/24"), reserved}, // 6to4 relay anycast
	{netip.MustParsePrefix("192.168.0.0/16"), private},  // RFC 1918
	{netip.MustParsePrefix("198.18.0.0/15"), reserved},  // benchmarking
	{netip.MustParsePrefix("198.51.100.0/24"), reserved},
	{netip.MustParsePrefix("203.0.113.0/24"), reserved},
	{netip.MustParsePrefix("224.0.0.0/4"), multicast},
	{netip.MustParsePrefix("240.0.0.0/4"), reserved}, // future use, 255.255.255.255 broadcast
	// IPv6. IPv4-mapped addresses are unmapped before this table is read;
	// the rest of ::/8 (unspecified, loopback, IPv4-compatible) is refused.
	{netip.MustParsePrefix("::/8"), private},
	{netip.MustParsePrefix("64:ff9b:1::/48"), private}, // local-use NAT64
	{netip.MustParsePrefix("100::/64"), reserved},      // discard-only
	{netip.MustParsePrefix("2001::/32"), reserved},     // Teredo: hides an IPv4 address
	{netip.MustParsePrefix("2001:2::/48"), reserved},   // benchmarking
	{netip.MustParsePrefix("2001:10::/28"), reserved},  // ORCHID
	{netip.MustParsePrefix("2001:db8::/32"), reserved}, // documentation
	{netip.MustParsePrefix("3fff::/20"), reserved},     // documentation
	{netip.MustParsePrefix("fc00::/7"), private},       // unique-local (AWS metadata fd00:ec2::254 too)
	{netip.MustParsePrefix("fe80::/10"), private},      // link-local
	{netip.MustParsePrefix("fec0::/10"), private},      // site-local (deprecated)
	{netip.MustParsePrefix("ff00::/8"), multicast},
}

// The kinds, as a refusal words them.
const (
	private   = "a private address"
	multicast = "a multicast address"
	reserved  = "a reserved address"
)

var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96") // the last 32 bits are an IPv4 address
	sixTo4 = netip.MustParsePrefix("2002::/16")    // bits 16 to 48 are an IPv4 address
)

// kindOf says why a may not be reached ("" when it is a public address).
// IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4) are judged by
// that address.
func kindOf(a netip.Addr) string {
	a = canonical(a)
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return kindOf(netip.AddrFrom4([4]byte(b[12:16])))
		case sixTo4.Contains(a):
			return kindOf(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	for _, f := range forbidden {
		if f.prefix.Contains(a) {
			return f.kind
		}
	}
	return ""
}

// canonical drops a zone and unmaps an IPv4-mapped IPv6 address, so that
// ::ffff:127.0.0.1 is judged (and allowed) as 127.0.0.1.
func canonical(a netip.Addr) netip.Addr {
	return a.WithZone("").Unmap()
}

// hostAddr reads a URL host as an IP address, in any spelling a resolver
// or browser accepts: IPv6 (with a zone), dotted IPv4, and the inet_aton
// forms (2130706433, 0x7f.1, 0177.0.0.1, 127.1). ok is false for a name.
func hostAddr(host string) (netip.Addr, bool) {
	host = strings.TrimSuffix(host, ".")
	if a, err := netip.ParseAddr(host); err == nil {
		return a, true
	}
	return looseIPv4(host)
}

// looseIPv4 parses inet_aton's forms: one to four parts, each decimal, hex
// (0x) or octal (leading 0); the last part fills the remaining bytes.
func looseIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var out [4]byte
	for i, p := range parts {
		base, digits := 10, p
		switch {
		case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
			base, digits = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		if digits == "" || strings.ContainsAny(digits, "+-_") {
			return netip.Addr{}, false
		}
		n, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, false
			}
			out[i] = byte(n)
			continue
		}
		rest := 4 - i // bytes the last part fills
		if n >= 1<<(8*rest) {
			return netip.Addr{}, false
		}
		for j := 3; j >= i; j-- {
			out[j] = byte(n)
			n >>= 8
		}
	}
	return netip.AddrFrom4(out), true
}
