// Package egresstest gives tests their "outside world": HTTP servers on a
// dedicated loopback address, 127.0.0.2, that the platform under test is
// allowed to reach with AP_EGRESS_ALLOW=127.0.0.2/32 (Allow). The egress
// guard stays on in tests: 127.0.0.1, where the platform itself listens,
// stays refused.
package egresstest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

// Addr is the outside world's address.
const Addr = "127.0.0.2"

// Allow is the AP_EGRESS_ALLOW that lets the platform reach it, and no
// other private address.
const Allow = Addr + "/32"

// AllowPrefixes is Allow parsed, for egress.New.
func AllowPrefixes() []netip.Prefix { return []netip.Prefix{netip.MustParsePrefix(Allow)} }

// Listen listens on a free port of Addr.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", Addr+":0")
	if err != nil {
		t.Fatalf("listen on %s (loopback: works on Linux without setup): %v", Addr, err)
	}
	return ln
}

// NewServer starts h on Addr; it is closed when the test ends.
func NewServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	s := NewUnstartedServer(t, h)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// NewUnstartedServer is NewServer for a caller that configures the server
// (TLS, config) before starting it; the caller closes it.
func NewUnstartedServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = Listen(t)
	return s
}
