package router

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/agentplatform/agentplatform/internal/config"
)

// clientAddr is the address per-address limits and logs know the client
// by: the TCP peer, unless the peer is a trusted proxy (AP_TRUSTED_PROXIES).
// Then it is the X-Forwarded-For entry added by the last trusted proxy:
// the header is read from the right, each trusted proxy's entry skipped,
// and the first untrusted one is the client. Entries further left were
// written by whoever the client is, so a forged header changes nothing,
// and behind a load balancer each client keeps its own limits.
func clientAddr(r *http.Request, trusted config.CIDRs) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	client := peer.Unmap().WithZone("")
	if !trusted.Contains(client) {
		return client.String()
	}
	hops := forwardedFor(r.Header.Values("X-Forwarded-For"))
	for i := len(hops) - 1; i >= 0; i-- {
		hop, ok := parseHop(hops[i])
		if !ok {
			// Not an address: the trusted proxy that added it is the
			// closest to the client we can name.
			break
		}
		client = hop
		if !trusted.Contains(hop) {
			break
		}
	}
	return client.String()
}

// forwardedFor is every entry of the X-Forwarded-For headers, in order.
func forwardedFor(values []string) []string {
	var hops []string
	for _, v := range values {
		for _, h := range strings.Split(v, ",") {
			hops = append(hops, strings.TrimSpace(h))
		}
	}
	return hops
}

// parseHop reads one X-Forwarded-For entry: an address, or (from some
// proxies) an address with a port.
func parseHop(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		if perr != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	return a.Unmap().WithZone(""), true
}
