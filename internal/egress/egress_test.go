package egress_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
)

// forbiddenHosts are URL hosts that must never be reached, in the
// spellings a resolver, a browser or an attacker uses, each with the
// address it means.
var forbiddenHosts = []struct{ host, addr string }{
	{"127.0.0.1", "127.0.0.1"},
	{"127.1", "127.0.0.1"},
	{"2130706433", "127.0.0.1"},
	{"0x7f000001", "127.0.0.1"},
	{"0x7f.0.0.1", "127.0.0.1"},
	{"0177.0.0.1", "127.0.0.1"},
	{"0177.1", "127.0.0.1"},
	{"127.0.0.1.", "127.0.0.1"},
	{"127.255.255.254", "127.255.255.254"},
	{"[::1]", "::1"},
	{"[0:0:0:0:0:0:0:1]", "::1"},
	{"[::ffff:127.0.0.1]", "127.0.0.1"},
	{"[::ffff:7f00:1]", "127.0.0.1"},
	{"[::127.0.0.1]", "::7f00:1"}, // IPv4-compatible
	{"0.0.0.0", "0.0.0.0"},
	{"0", "0.0.0.0"},
	{"[::]", "::"},
	{"10.0.0.1", "10.0.0.1"},
	{"172.16.5.4", "172.16.5.4"},
	{"172.31.255.255", "172.31.255.255"},
	{"192.168.1.1", "192.168.1.1"},
	{"3232235777", "192.168.1.1"},
	{"[::ffff:192.168.1.1]", "192.168.1.1"},
	{"169.254.169.254", "169.254.169.254"}, // cloud metadata
	{"[fd00:ec2::254]", "fd00:ec2::254"},   // AWS metadata over IPv6
	{"[fe80::1]", "fe80::1"},
	{"[fe80::1%25eth0]", "fe80::1"},
	{"[fc00::1]", "fc00::1"},
	{"100.64.0.1", "100.64.0.1"},
	{"100.127.255.254", "100.127.255.254"},
	{"224.0.0.1", "224.0.0.1"},
	{"239.255.255.250", "239.255.255.250"},
	{"[ff02::1]", "ff02::1"},
	{"255.255.255.255", "255.255.255.255"},
	{"240.0.0.1", "240.0.0.1"},
	{"192.0.2.1", "192.0.2.1"},
	{"198.18.0.1", "198.18.0.1"},
	{"[64:ff9b::7f00:1]", "64:ff9b::7f00:1"},     // NAT64 of 127.0.0.1
	{"[64:ff9b::a00:1]", "64:ff9b::a00:1"},       // NAT64 of 10.0.0.1
	{"[2002:7f00:1::]", "2002:7f00:1::"},         // 6to4 of 127.0.0.1
	{"[2002:a9fe:a9fe::1]", "2002:a9fe:a9fe::1"}, // 6to4 of 169.254.169.254
	{"[2001:db8::1]", "2001:db8::1"},
	{"[2001:0:4136:e378:8000:63bf:3fff:fdd2]", "2001:0:4136:e378:8000:63bf:3fff:fdd2"}, // Teredo
}

// publicHosts are fine.
var publicHosts = []string{"8.8.8.8", "1.1.1.1", "[2606:4700:4700::1111]", "[::ffff:8.8.8.8]", "[64:ff9b::808:808]",
	"[2002:808:808::1]", "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0", "example.com",
	"hooks.example.com", "127.0.0.1.example.com", "1e100.net", "0x7f.example.com", "localhost.example.com"}

func TestCheckURLRefusesEverySpelling(t *testing.T) {
	t.Parallel()
	g := egress.New(nil)
	for _, h := range forbiddenHosts {
		err := g.CheckURL("webhook_url", "http://"+h.host+":8080/hook?x=1")
		e, ok := apperr.As(err)
		require.True(t, ok, "%s: %v", h.host, err)
		require.Equal(t, apperr.Validation, e.Kind, h.host)
		require.Equal(t, "webhook_url", e.Field, h.host)
		require.Contains(t, e.Detail, "Invalid value for field webhook_url: ", h.host)
		require.Contains(t, e.Detail, h.addr, h.host)
		require.Contains(t, e.Detail, "(allow it with AP_EGRESS_ALLOW)", h.host)
	}
	for _, host := range []string{"localhost", "LOCALHOST", "localhost.", "api.localhost"} {
		err := g.CheckURL("base_url", "https://"+host+"/v1")
		e, ok := apperr.As(err)
		require.True(t, ok, host)
		require.Equal(t, "base_url", e.Field)
		require.Contains(t, e.Detail, "a private address (allow it with AP_EGRESS_ALLOW)", host)
	}
	for _, host := range publicHosts {
		require.NoError(t, g.CheckURL("webhook_url", "https://"+host+"/hook"), host)
	}
	for _, raw := range []string{"ftp://example.com/x", "javascript:alert(1)", "/relative", "https://", "", "http://[::1",
		"file:///etc/passwd", "gopher://127.0.0.1:6379/_", "http://:80/"} {
		err := g.CheckURL("webhook_url", raw)
		e, ok := apperr.As(err)
		require.True(t, ok, raw)
		require.Equal(t, "Invalid value for field webhook_url: must be an absolute http or https URL", e.Detail, raw)
	}
}

func TestCheckURLHonoursAllow(t *testing.T) {
	t.Parallel()
	g := egress.New(egresstest.AllowPrefixes())
	require.NoError(t, g.CheckURL("webhook_url", "http://127.0.0.2:9/x"))
	require.NoError(t, g.CheckURL("webhook_url", "http://[::ffff:127.0.0.2]:9/x"), "the same address, spelled as IPv6")
	require.NoError(t, g.CheckURL("webhook_url", "http://0x7f000002:9/x"))
	require.Error(t, g.CheckURL("webhook_url", "http://127.0.0.1:9/x"), "exactly 127.0.0.2")
	require.Error(t, g.CheckURL("webhook_url", "http://127.0.0.3:9/x"))
	require.Error(t, g.CheckURL("webhook_url", "http://localhost:9/x"))

	wide := egress.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::ffff:10.0.0.0/104")})
	require.NoError(t, wide.CheckURL("webhook_url", "http://localhost:9/x"))
	require.NoError(t, wide.CheckURL("webhook_url", "http://10.1.2.3/x"), "a mapped prefix allows its IPv4 addresses")
	require.Error(t, wide.CheckURL("webhook_url", "http://[::1]/x"))
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://user:pa55@hooks.example.com:8443/a/b?token=s3cret#frag": "https://hooks.example.com:8443/a/b",
		"http://example.com/?":  "http://example.com/",
		"http://example.com/x":  "http://example.com/x",
		"http://[::1]:80/p?q=1": "http://[::1]:80/p",
		"http://%zz":            "(unparsable URL)",
	} {
		require.Equal(t, want, egress.Redact(raw), raw)
	}
}

// hit counts the requests a server receives.
func hit(n *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = io.WriteString(w, "hello from "+r.URL.Path)
	})
}

// insideServer listens on 127.0.0.1: an internal service the platform
// must not reach.
func insideServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func requireRefused(t *testing.T, err error, addr string) {
	t.Helper()
	var r *egress.Refused
	require.ErrorAs(t, err, &r)
	require.Equal(t, addr, r.Addr.String())
	require.Equal(t, "webhook_url resolves to "+addr+", a private address (allow it with AP_EGRESS_ALLOW)", r.Error())
	require.Equal(t, r.Error(), egress.Describe(err))
}

func TestClientRefusesTheDialledAddress(t *testing.T) {
	t.Parallel()
	var inside, outside atomic.Int32
	in := insideServer(t, hit(&inside))
	out := egresstest.NewServer(t, hit(&outside))
	_, port, err := net.SplitHostPort(in.Listener.Addr().String())
	require.NoError(t, err)
	c := egress.New(egresstest.AllowPrefixes()).Client(egress.Options{Field: "webhook_url", Timeout: 5 * time.Second})

	get := func(url string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		require.NoError(t, err)
		res, err := c.Do(req)
		if err == nil {
			t.Cleanup(func() { res.Body.Close() })
		}
		return res, err
	}

	// Literal addresses in several spellings, and a name that resolves to
	// loopback: refused when dialled, the internal server never reached.
	for url, addr := range map[string]string{
		in.URL:                                 "127.0.0.1",
		"http://[::ffff:127.0.0.1]:" + port:    "127.0.0.1",
		"http://2130706433:" + port + "/x":     "127.0.0.1",
		"http://localhost:" + port + "/x":      "", // 127.0.0.1 or ::1, whichever is dialled first
		"http://0.0.0.0:" + port + "/x":        "0.0.0.0",
		"http://[::1]:" + port + "/x":          "::1",
		"http://169.254.169.254:" + port + "/": "169.254.169.254",
	} {
		_, err := get(url)
		var r *egress.Refused
		require.ErrorAs(t, err, &r, url)
		if addr != "" {
			requireRefused(t, err, addr)
		} else {
			require.True(t, r.Addr.IsLoopback(), url)
		}
	}
	require.Zero(t, inside.Load(), "the internal server was reached")

	// The allowed loopback address is reached.
	res, err := get(out.URL + "/ok")
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, "hello from /ok", string(body))
	require.Equal(t, int32(1), outside.Load())
}

func TestClientRechecksRedirects(t *testing.T) {
	t.Parallel()
	var inside atomic.Int32
	in := insideServer(t, hit(&inside))
	var outside atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/to-inside", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, in.URL+"/secret", http.StatusFound)
	})
	mux.HandleFunc("/to-localhost", func(w http.ResponseWriter, r *http.Request) {
		_, port, _ := net.SplitHostPort(in.Listener.Addr().String())
		http.Redirect(w, r, "http://localhost:"+port+"/secret", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.Handle("/ok", hit(&outside))
	out := egresstest.NewServer(t, mux)
	g := egress.New(egresstest.AllowPrefixes())

	follow := g.Client(egress.Options{Field: "webhook_url", Timeout: 5 * time.Second, MaxRedirects: 3})
	for _, path := range []string{"/to-inside", "/to-localhost"} {
		res, err := follow.Get(out.URL + path)
		if err == nil {
			res.Body.Close()
		}
		var r *egress.Refused
		require.ErrorAs(t, err, &r, path)
		require.True(t, r.Addr.IsLoopback())
	}
	require.Zero(t, inside.Load(), "a redirect reached the internal server")
	res, err := follow.Get(out.URL + "/hop")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, int32(1), outside.Load(), "a redirect within the allowed address is followed")
	_, err = follow.Get(out.URL + "/loop")
	require.ErrorIs(t, err, egress.ErrTooManyRedirects)
	require.Equal(t, "too many redirects", egress.Describe(err))

	// Without redirects (webhooks), a 3xx is the answer.
	none := g.Client(egress.Options{Field: "webhook_url", Timeout: 5 * time.Second})
	res, err = none.Post(out.URL+"/hop", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusFound, res.StatusCode)
	require.Equal(t, int32(1), outside.Load(), "not followed")
}

func TestClientCapsBodyAndTimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(make([]byte, 1000)) })
	mux.HandleFunc("/fits", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(make([]byte, 100)) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	out := egresstest.NewServer(t, mux)
	t.Cleanup(func() { close(release) })
	c := egress.New(egresstest.AllowPrefixes()).Client(egress.Options{Field: "url", Timeout: 300 * time.Millisecond, MaxBody: 100})

	res, err := c.Get(out.URL + "/big")
	require.NoError(t, err)
	_, err = io.ReadAll(res.Body)
	res.Body.Close()
	var tl *egress.TooLarge
	require.ErrorAs(t, err, &tl)
	require.Equal(t, "response exceeds 100 bytes", egress.Describe(err))

	res, err = c.Get(out.URL + "/fits")
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Len(t, b, 100)

	_, err = c.Get(out.URL + "/slow")
	require.Error(t, err)
	require.Equal(t, "timed out", egress.Describe(err))
}

func TestDescribeHidesDialErrors(t *testing.T) {
	t.Parallel()
	// A closed port on the allowed address: the reason says no more than
	// that the connection failed, never the address or port.
	ln := egresstest.Listen(t)
	addr := ln.Addr().String()
	ln.Close()
	c := egress.New(egresstest.AllowPrefixes()).Client(egress.Options{Field: "webhook_url", Timeout: 5 * time.Second})
	_, err := c.Get("http://" + addr + "/x")
	require.Error(t, err)
	require.Equal(t, "could not connect", egress.Describe(err))
	require.Equal(t, "host name not found", egress.Describe(&net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}))
	require.Equal(t, "connection failed before an answer", egress.Describe(errors.New("EOF")))
	require.Empty(t, egress.Describe(nil))
}
