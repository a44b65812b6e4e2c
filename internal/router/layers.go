package router

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/httperr"
	"github.com/agentplatform/agentplatform/internal/limits"
	"github.com/agentplatform/agentplatform/internal/request"
)

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

// observe is the outermost layer: request id, scoped logger and client
// address (request.Info), panic recovery, metrics and the error-level log
// of server failures.
func (rt *Router) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := newRequestID()
		w.Header().Set("X-Request-ID", id)
		// Every answer, errors and failed handshakes included, is what
		// its Content-Type says and nothing a browser should guess at.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// The mux sets r.Pattern on the request it is given, which a layer
		// below may have copied (the identity middleware does): route
		// reports the route in info instead.
		info := &request.Info{Log: rt.log.With("request_id", id), ClientIP: clientAddr(r, rt.cfg.TrustedProxies)}
		ctx := request.With(r.Context(), info)
		r = r.WithContext(ctx)
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				info.Log.Error("panic", "panic", p, "method", r.Method, "path", r.URL.Path, "stack", string(debug.Stack()))
				if rec.status == 0 {
					rt.refuse(rec, r, apperr.New(apperr.Internal, httperr.DetailInternal))
				}
			}
			d := time.Since(start)
			rt.metrics.ObserveRequest(info.Route, r.Method, rec.status, d)
			level := slog.LevelDebug
			if rec.status >= 500 {
				level = slog.LevelError
			}
			info.Log.Log(ctx, level, "request", "method", r.Method, "route", info.Route, "path", r.URL.Path,
				"status", rec.status, "duration_ms", float64(d.Microseconds())/1000, "ip", info.ClientIP)
		}()
		next.ServeHTTP(rec, r)
	})
}

// limitHeaders refuses a request whose head exceeds limits.HeaderBytes.
func (rt *Router) limitHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headSize(r) > limits.HeaderBytes {
			// The client may still be sending; do not keep reading it.
			w.Header().Set("Connection", "close")
			rt.refuse(w, r, &httperr.ErrorBody{Detail: "Request headers too large: the limit is 64 KiB",
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
// deadline it never lifts, so api.Register turns it off.
const BodyReadTimeout = 30 * time.Second

// limitBody caps every body at limits.BodyBytes (huma answers 413 for its
// routes, and plain handlers see http.MaxBytesError) and reads it under
// BodyReadTimeout.
func (rt *Router) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limits.BodyBytes {
			rt.refuse(w, r, apperr.New(apperr.PayloadTooLarge, httperr.DetailTooLarge))
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &deadlineBody{ReadCloser: http.MaxBytesReader(w, r.Body, limits.BodyBytes+1), rc: http.NewResponseController(w)}
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
func (rt *Router) csrf(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			if err := rt.cop.Check(r); err != nil {
				rt.refuse(w, r, apperr.New(apperr.Permission, "Cross-origin request refused"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// identify resolves the request's credential once, before routing, for
// whichever route serves it. It refuses nothing: a failed credential is
// recorded (Identity.Err) and the route decides (auth.Check) — a public
// operation ignores it, a protected one answers 401, a page redirects to
// /login.
func (rt *Router) identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := rt.auth.Identify(r, rt.api.TakesQueryToken(r))
		next.ServeHTTP(w, r.WithContext(auth.WithIdentity(r.Context(), id)))
	})
}

// hsts tells browsers to use HTTPS only (production serves behind TLS).
func hsts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
		next.ServeHTTP(w, r)
	})
}
