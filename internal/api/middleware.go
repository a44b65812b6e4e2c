package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/limits"
)

// MaxBodyBytes is the largest request body accepted (413 beyond); a
// record written from JavaScript obeys the same limit.
const MaxBodyBytes = limits.BodyBytes

// MaxHeaderBytes is the largest request head (request line and headers)
// accepted: 431 with the error body beyond. The http.Server reads up to
// ServerMaxHeaderBytes before any handler runs and answers larger heads
// itself, in plain text; between the two the API answers.
const (
	MaxHeaderBytes       = 64 << 10
	ServerMaxHeaderBytes = 1 << 20
)

type ctxKey int

const (
	loggerKey ctxKey = iota
	clientIPKey
	routeKey
)

// logger is the request-scoped logger (it carries the request id).
func logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// clientIP is the client address of the request (clientAddr), the key of
// per-address limits.
func clientIP(ctx context.Context) string {
	ip, _ := ctx.Value(clientIPKey).(string)
	return ip
}

// statusRecorder remembers the status for logs and metrics.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and Hijack (SSE,
// WebSocket).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// observe is the outermost layer: request id, scoped logger, panic recovery,
// metrics and the error-level log of server failures.
func (a *API) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := newRequestID()
		w.Header().Set("X-Request-ID", id)
		// Every answer, errors and failed handshakes included, is what
		// its Content-Type says and nothing a browser should guess at.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		log := a.log.With("request_id", id)
		ip := clientAddr(r, a.Config.TrustedProxies)
		ctx := context.WithValue(r.Context(), loggerKey, log)
		ctx = context.WithValue(ctx, clientIPKey, ip)
		// The mux sets r.Pattern on the request it is given, which a layer
		// below may have copied (the identity middleware does): route
		// reports the route here instead.
		route := new(string)
		ctx = context.WithValue(ctx, routeKey, route)
		r = r.WithContext(ctx)
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.Error("panic", "panic", p, "method", r.Method, "path", r.URL.Path, "stack", string(debug.Stack()))
				if rec.status == 0 {
					writeError(rec, r, apperr.New(apperr.Internal, detailInternal))
				}
			}
			d := time.Since(start)
			a.metrics.ObserveRequest(*route, r.Method, rec.status, d)
			level := slog.LevelDebug
			if rec.status >= 500 {
				level = slog.LevelError
			}
			log.Log(ctx, level, "request", "method", r.Method, "route", *route, "path", r.URL.Path,
				"status", rec.status, "duration_ms", float64(d.Microseconds())/1000, "ip", ip)
		}()
		next.ServeHTTP(rec, r)
	})
}

// limitHeaders refuses a request whose head exceeds MaxHeaderBytes, with
// the error body.
func limitHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headSize(r) > MaxHeaderBytes {
			// The client may still be sending; do not keep reading it.
			w.Header().Set("Connection", "close")
			writeError(w, r, &ErrorBody{Detail: "Request headers too large: the limit is 64 KiB",
				StatusCode: http.StatusRequestHeaderFieldsTooLarge, ErrorType: string(apperr.PayloadTooLarge)})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// headSize is about the bytes of the request line and headers as sent.
func headSize(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4 + len("Host: ") + len(r.Host) + 2
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// BodyReadTimeout bounds the reading of a request body, from its first
// read to its end: a client that trickles a body (slowloris) is cut off.
// The deadline is lifted once the body is read, so the operation may then
// take as long as it allows (a function's timeout, Prefer: wait) and the
// keep-alive connection stays usable. huma's own BodyReadTimeout sets a
// deadline it never lifts, so Register turns it off.
const BodyReadTimeout = 30 * time.Second

// limitBody caps every body at MaxBodyBytes (huma answers 413 for its
// routes, and plain handlers see http.MaxBytesError) and reads it under
// BodyReadTimeout.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBodyBytes {
			writeError(w, r, apperr.New(apperr.PayloadTooLarge, detailTooLarge))
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &deadlineBody{ReadCloser: http.MaxBytesReader(w, r.Body, MaxBodyBytes+1), rc: http.NewResponseController(w)}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody sets the connection's read deadline at the body's first
// read and lifts it when the body ends (EOF, error or Close). The deadline
// starts at the first read, not before the handler: huma lifts any
// deadline just before it reads (BodyReadTimeout < 0).
type deadlineBody struct {
	io.ReadCloser
	rc             *http.ResponseController
	started, ended bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if !b.started {
		b.started = true
		// An HTTP/2 stream or a test recorder may not support deadlines:
		// the body is then bounded by the server's own limits.
		_ = b.rc.SetReadDeadline(time.Now().Add(BodyReadTimeout))
	}
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.end()
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	b.end()
	return b.ReadCloser.Close()
}

func (b *deadlineBody) end() {
	if b.started && !b.ended {
		b.ended = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

// csrf refuses cross-origin unsafe requests that would ride on the session
// cookie. Requests with an Authorization header carry their own credential
// and are not affected.
func (a *API) csrf(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			if err := a.cop.Check(r); err != nil {
				writeError(w, r, apperr.New(apperr.Permission, "Cross-origin request refused"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// route serves every request after the router's identity middleware: it
// spends the caller's rate (limit) before anything is routed, then serves
// the mux, answering unknown routes and wrong methods with the error body
// instead of the mux's plain text.
func (a *API) route(w http.ResponseWriter, r *http.Request) {
	h, pattern := a.mux.Handler(r)
	if route, ok := r.Context().Value(routeKey).(*string); ok {
		*route = pattern
	}
	if !a.limit(r, pattern) {
		writeError(w, r, apperr.New(apperr.RateLimit, DetailRateLimited))
		return
	}
	if pattern != "" {
		a.mux.ServeHTTP(w, r)
		return
	}
	// The mux knows whether the path exists under another method: let it
	// answer into a probe, then keep only its status and Allow header.
	probe := &headerProbe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	switch probe.status {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", probe.header.Get("Allow"))
		writeError(w, r, &ErrorBody{Detail: "Method not allowed", StatusCode: http.StatusMethodNotAllowed, ErrorType: string(apperr.Validation)})
	case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		a.mux.ServeHTTP(w, r)
	default:
		writeError(w, r, apperr.NotFoundf("Not found"))
	}
}

// limit spends one request of the caller's rate, before routing, so that
// every request pays — API operations, the WebSocket handshake, pages,
// and paths no route has — and each pays once. An authenticated caller
// spends their user's budget; without a valid credential the client
// address pays (refusals cost like answers, so guessing tokens or probing
// routes is limited too). Routes registered unlimited (health probes) are
// exempt.
func (a *API) limit(r *http.Request, pattern string) bool {
	if a.unlimited[pattern] {
		return true
	}
	id := auth.IdentityFrom(r.Context())
	caller := id.Caller
	if id.Err != nil {
		caller = nil
	}
	return a.rate.Allow(rateKey(caller, clientIP(r.Context())))
}

type headerProbe struct {
	header http.Header
	status int
}

func (p *headerProbe) Header() http.Header { return p.header }
func (p *headerProbe) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.status = http.StatusOK
	}
	return len(b), nil
}
func (p *headerProbe) WriteHeader(code int) {
	if p.status == 0 {
		p.status = code
	}
}

// wantsJSON reports whether the client asked for JSON rather than a redirect.
func wantsJSON(accept string) bool {
	return strings.Contains(accept, "application/json")
}
