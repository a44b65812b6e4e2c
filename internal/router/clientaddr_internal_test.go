package router

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/config"
)

func TestClientAddr(t *testing.T) {
	t.Parallel()
	var lb config.CIDRs
	require.NoError(t, lb.Set("10.0.0.0/8,fd00::/8"))
	for _, tc := range []struct {
		name    string
		peer    string
		xff     []string
		trusted config.CIDRs
		want    string
	}{
		{"no proxies: the peer", "203.0.113.5:4000", nil, nil, "203.0.113.5"},
		{"no proxies: a forged header changes nothing", "203.0.113.5:4000", []string{"198.51.100.1"}, nil, "203.0.113.5"},
		{"untrusted peer: a forged header changes nothing", "203.0.113.5:4000", []string{"10.1.1.1, 198.51.100.1"}, lb, "203.0.113.5"},
		{"trusted peer: the entry it added", "10.0.0.2:4000", []string{"198.51.100.1"}, lb, "198.51.100.1"},
		{"the client's own entries are ignored", "10.0.0.2:4000", []string{"192.0.2.66, 198.51.100.1"}, lb, "198.51.100.1"},
		{"a chain of trusted proxies is skipped", "10.0.0.2:4000", []string{"192.0.2.66, 198.51.100.1, 10.0.0.9", "10.0.0.8"}, lb, "198.51.100.1"},
		{"a forged trusted address left of the client is not reached", "10.0.0.2:4000", []string{"10.9.9.9, 198.51.100.1"}, lb, "198.51.100.1"},
		{"trusted peer without the header: the peer", "10.0.0.2:4000", nil, lb, "10.0.0.2"},
		{"all entries trusted: the furthest", "10.0.0.2:4000", []string{"10.0.0.7, 10.0.0.8"}, lb, "10.0.0.7"},
		{"garbage from the proxy side: the last trusted hop", "10.0.0.2:4000", []string{"198.51.100.1, nonsense, 10.0.0.8"}, lb, "10.0.0.8"},
		{"entries with ports and IPv6", "[fd00::1]:4000", []string{"[2001:db8::7]:5555, 198.51.100.1:80"}, lb, "198.51.100.1"},
		{"IPv6 client", "[fd00::1]:4000", []string{"2001:db8::7"}, lb, "2001:db8::7"},
		{"IPv4-mapped peer", "[::ffff:10.0.0.2]:4000", []string{"198.51.100.1"}, lb, "198.51.100.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			require.Equal(t, tc.want, clientAddr(r, tc.trusted))
		})
	}
}
