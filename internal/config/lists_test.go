package config

import (
	"flag"
	"io"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(envOf(map[string]string{"AP_TRUSTED_PROXIES": " 10.0.0.0/8, 192.168.1.7 ,fd00::/8,::ffff:172.16.0.0/108,"}))
	require.NoError(t, err)
	require.Equal(t, "10.0.0.0/8,192.168.1.7/32,fd00::/8,172.16.0.0/12", c.TrustedProxies.String())
	for addr, want := range map[string]bool{
		"10.1.2.3": true, "::ffff:10.1.2.3": true, "192.168.1.7": true, "192.168.1.8": false,
		"fd12::1": true, "fe80::1": false, "172.31.255.255": true, "127.0.0.1": false,
	} {
		require.Equal(t, want, c.TrustedProxies.Contains(netip.MustParseAddr(addr)), addr)
	}

	none, err := FromEnv(envOf(nil))
	require.NoError(t, err)
	require.Empty(t, none.TrustedProxies)
	require.False(t, none.TrustedProxies.Contains(netip.MustParseAddr("127.0.0.1")))

	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0.1/8/2", "::ffff:10.0.0.0/8", "fe80::1%eth0"} {
		_, err := FromEnv(envOf(map[string]string{"AP_TRUSTED_PROXIES": bad}))
		require.ErrorContains(t, err, "AP_TRUSTED_PROXIES", bad)
	}
}

func TestCORSOrigins(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(envOf(map[string]string{"AP_CORS_ORIGINS": "https://App.example.com/, http://localhost:5173"}))
	require.NoError(t, err)
	require.Equal(t, Origins{"https://app.example.com", "http://localhost:5173"}, c.CORSOrigins)
	require.True(t, c.CORSOrigins.Has("http://localhost:5173"))
	require.False(t, c.CORSOrigins.Has("http://localhost:5174"))
	for _, bad := range []string{"app.example.com", "https://a.example.com/path", "ftp://a.example.com", "https://u@a.example.com", "*"} {
		_, err := FromEnv(envOf(map[string]string{"AP_CORS_ORIGINS": bad}))
		require.ErrorContains(t, err, "AP_CORS_ORIGINS", bad)
	}
}

func TestListFlagsOverrideEnvironment(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(envOf(map[string]string{"AP_TRUSTED_PROXIES": "10.0.0.0/8", "AP_CORS_ORIGINS": "https://a.example.com"}))
	require.NoError(t, err)
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.BindFlags(fs)
	require.NoError(t, fs.Parse([]string{"--trusted-proxies", "192.168.0.0/16", "--cors-origins=https://b.example.com", "--login-failure-limit=3"}))
	require.Equal(t, "192.168.0.0/16", c.TrustedProxies.String())
	require.Equal(t, Origins{"https://b.example.com"}, c.CORSOrigins)
	require.Equal(t, 3, c.LoginFailureLimit)
	require.Error(t, fs.Parse([]string{"--trusted-proxies", "nope"}))
}

func TestEgressAllow(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(envOf(map[string]string{"AP_EGRESS_ALLOW": " 127.0.0.2/32, 10.0.0.0/8,,fd00::/8, 192.168.1.7 "}))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.2/32,10.0.0.0/8,fd00::/8,192.168.1.7/32", c.EgressAllow.String())
	for _, bad := range []string{"10.0.0.0/33", "nope", "10.0.0.0/8,localhost", "10/8"} {
		_, err := FromEnv(envOf(map[string]string{"AP_EGRESS_ALLOW": bad}))
		require.ErrorContains(t, err, "AP_EGRESS_ALLOW", bad)
	}
}
