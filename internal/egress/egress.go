// Package egress is the one way the platform calls an address a user
// supplied (webhook deliveries, users' LLM providers, and later
// ctx.http.fetch, webhook agents and OAuth endpoints): an HTTP client that
// refuses loopback, private, link-local, carrier-grade NAT, multicast,
// unspecified and reserved addresses unless AP_EGRESS_ALLOW lists them.
//
// The check runs on the address actually dialled (net.Dialer's control
// hook), after DNS and on every redirect, so neither a name that resolves
// to 127.0.0.1 nor a redirect to one gets through; spelling the address
// differently (::ffff:127.0.0.1, 2130706433) changes nothing either. No
// proxy is taken from the environment: it would be dialled instead of the
// target and so bypass the check. CheckURL is the same rule at create time,
// for literal addresses, so a user hears of the mistake at once.
package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/agentplatform/agentplatform/internal/telemetry"
)

// Variable is the setting that allows private addresses; every refusal
// names it.
const Variable = "AP_EGRESS_ALLOW"

// Guard decides which addresses outbound calls may reach and builds the
// clients that make them.
type Guard struct {
	allow []netip.Prefix
	// IdleConns is how many idle connections each client built after it
	// is set keeps, per host and in all (0: Go's defaults, 2 per host and
	// 100 in all). Set it to the calls one process has in flight
	// (AP_MAX_INFLIGHT): thousands of runs waiting on one LLM provider or
	// webhook agent then reuse their connections instead of opening and
	// closing one per call.
	IdleConns int
}

// New returns a guard allowing, besides public addresses, those in allow
// (AP_EGRESS_ALLOW).
func New(allow []netip.Prefix) *Guard {
	g := &Guard{}
	for _, p := range allow {
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		g.allow = append(g.allow, p.Masked())
	}
	return g
}

// Refused is the error of a call to an address the guard does not allow.
type Refused struct {
	Field string // where the address came from, e.g. webhook_url
	Addr  netip.Addr
	Kind  string // e.g. "a private address"
}

func (e *Refused) Error() string {
	return fmt.Sprintf("%s resolves to %s, %s (allow it with %s)", e.Field, e.Addr, e.Kind, Variable)
}

// check refuses a unless it is public or allowed.
func (g *Guard) check(field string, a netip.Addr) error {
	a = canonical(a)
	kind := kindOf(a)
	if kind == "" || g.allowed(a) {
		return nil
	}
	return &Refused{Field: field, Addr: a, Kind: kind}
}

func (g *Guard) allowed(a netip.Addr) bool {
	for _, p := range g.allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Options shape a client.
type Options struct {
	// Field names the setting the addresses come from in refusals
	// ("webhook_url resolves to …").
	Field string
	// Timeout bounds a whole call, reading the body included; 0 is none
	// (the caller's context bounds it).
	Timeout time.Duration
	// MaxBody caps a response body: reading past it fails with
	// *TooLarge. 0 is no cap.
	MaxBody int64
	// MaxRedirects is how many redirects are followed, each to an address
	// checked again. 0 follows none: a 3xx is the answer.
	MaxRedirects int
}

// dialTimeout bounds connecting, whatever the call's own timeout.
const dialTimeout = 10 * time.Second

// Client returns a client whose every connection is checked. Build one per
// purpose and keep it: its transport pools connections.
func (g *Guard) Client(o Options) *http.Client {
	field := o.Field
	if field == "" {
		field = "URL"
	}
	d := &net.Dialer{
		Timeout:   dialTimeout,
		KeepAlive: 30 * time.Second,
		// Called with the resolved address of every connection attempt
		// (each of a name's addresses, each redirect).
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%s: cannot check the address %q", field, address)
			}
			return g.check(field, ap.Addr())
		},
	}
	var rt http.RoundTripper = &http.Transport{
		Proxy:                 nil, // a proxy would be dialled instead of the target
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   g.IdleConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if g.IdleConns > 0 {
		rt.(*http.Transport).MaxIdleConns = g.IdleConns
	}
	rt = literal{rt, g, field}
	if o.MaxBody > 0 {
		rt = capped{rt, o.MaxBody}
	}
	// With tracing on, every outbound call is a client span and carries
	// the caller's traceparent (the guard stays inside: it still checks
	// every connection); off, the transport is left as it is.
	rt = telemetry.Transport(rt)
	c := &http.Client{Transport: rt, Timeout: o.Timeout}
	maxRedirects := o.MaxRedirects
	c.CheckRedirect = func(_ *http.Request, via []*http.Request) error {
		if maxRedirects <= 0 {
			return http.ErrUseLastResponse
		}
		if len(via) > maxRedirects {
			return fmt.Errorf("%w (%d)", ErrTooManyRedirects, maxRedirects)
		}
		return nil
	}
	return c
}

// literal refuses a URL whose host spells a forbidden address in a form
// the resolver may not read as one (2130706433, 0x7f.1): whatever the
// resolver would do with it, the answer is the same refusal as at create.
type literal struct {
	rt    http.RoundTripper
	g     *Guard
	field string
}

func (l literal) RoundTrip(r *http.Request) (*http.Response, error) {
	if a, ok := hostAddr(r.URL.Hostname()); ok {
		if err := l.g.check(l.field, a); err != nil {
			if r.Body != nil {
				r.Body.Close()
			}
			return nil, err
		}
	}
	return l.rt.RoundTrip(r)
}

// ErrTooManyRedirects ends a call that redirects more than
// Options.MaxRedirects times.
var ErrTooManyRedirects = errors.New("too many redirects")

// TooLarge is the error of reading a response body past Options.MaxBody.
type TooLarge struct{ Max int64 }

func (e *TooLarge) Error() string { return fmt.Sprintf("response exceeds %s", size(e.Max)) }

func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

type capped struct {
	rt  http.RoundTripper
	max int64
}

func (c capped) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := c.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	res.Body = &cappedBody{ReadCloser: res.Body, left: c.max, max: c.max}
	return res, nil
}

// cappedBody fails, rather than silently stopping, past the cap: a cut
// answer must not pass for a whole one.
type cappedBody struct {
	io.ReadCloser
	left, max int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.left = 0
		return n, &TooLarge{Max: b.max}
	}
	b.left -= int64(n)
	return n, err
}

// Describe is a short reason for a failed call, fit to show the user who
// supplied the URL and to record: a refusal as such, otherwise the class
// of failure without the raw dial error (which would name addresses and
// ports, and make delivery records a port scanner).
func Describe(err error) string {
	var refused *Refused
	var tooLarge *TooLarge
	var dnsErr *net.DNSError
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &refused):
		return refused.Error()
	case errors.As(err, &tooLarge):
		return tooLarge.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "host name not found"
		}
		return "host name lookup failed"
	case isDial(err):
		return "could not connect"
	case errors.As(err, &certErr), errors.As(err, &recordErr), errors.As(err, &alert):
		return "TLS handshake failed"
	case errors.Is(err, ErrTooManyRedirects):
		return ErrTooManyRedirects.Error()
	}
	return "connection failed before an answer"
}

func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
