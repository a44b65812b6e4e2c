// Package router is the front door: the process's one HTTP handler and the
// http.Server that serves it (NewServer). The JSON API (internal/api) and
// the web pages (internal/web) register their routes side by side on one
// ServeMux (so Go's mux checks the whole route table for conflicts), and
// every request passes the same layers, whichever serves it: request id,
// scoped logger and client address (internal/request), logs, metrics and
// panic recovery, nosniff (and HSTS in production), CORS, head and body
// limits, CSRF for cookie requests, the input checks, then one identity
// middleware that resolves the caller and puts it in the context
// (auth.Identity), then the per-caller rate limit, before any routing: a
// path no route has pays like any other.
//
// What a route requires of that caller stays with the route, checked by
// auth.Check: the API's rules (api.Register, the WebSocket) and the pages'
// session by cookie (internal/web).
//
// The front door's own refusals (and paths no route has) answer in the
// asker's language (refuse): the API's JSON error body under /api/ and for
// clients that accept JSON, an HTML page for a browser anywhere else.
package router

import (
	"log/slog"
	"net/http"
	"net/url"

	"github.com/agentplatform/agentplatform/internal/api"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/config"
	"github.com/agentplatform/agentplatform/internal/metrics"
	"github.com/agentplatform/agentplatform/internal/ratelimit"
	"github.com/agentplatform/agentplatform/internal/telemetry"
)

// Pages is the web UI as the router sees it: routes to register, and the
// page that tells a browser why its request was refused.
type Pages interface {
	Register(mux *http.ServeMux)
	// ErrorPage answers r with an HTML page saying status and detail.
	ErrorPage(w http.ResponseWriter, r *http.Request, status int, detail string)
}

// Deps are what the router puts together. API must have been built on Mux
// (api.Deps.Mux).
type Deps struct {
	Config  *config.Config
	Log     *slog.Logger
	Metrics *metrics.Metrics
	Mux     *http.ServeMux
	Auth    *auth.Service
	API     *api.API
	// Pages may be nil (no web UI): every refusal is then JSON.
	Pages Pages
}

// Router is the handler of every request.
type Router struct {
	cfg     *config.Config
	log     *slog.Logger
	metrics *metrics.Metrics
	mux     *http.ServeMux
	auth    *auth.Service
	api     *api.API
	pages   Pages
	cop     *http.CrossOriginProtection
	rate    *ratelimit.Limiter
	handler http.Handler
}

// New registers the pages beside the API's routes and builds the layers
// around them.
func New(d Deps) (*Router, error) {
	rt := &Router{cfg: d.Config, log: d.Log, metrics: d.Metrics, mux: d.Mux, auth: d.Auth, api: d.API, pages: d.Pages,
		cop:  http.NewCrossOriginProtection(),
		rate: ratelimit.PerMinute(d.Config.RateLimit, min(100, d.Config.RateLimit))}
	if u, err := url.Parse(d.Config.PublicURL); err == nil && u.Host != "" {
		// Behind a proxy the Host header may differ from the public origin.
		if err := rt.cop.AddTrustedOrigin(u.Scheme + "://" + u.Host); err != nil {
			return nil, err
		}
	}
	if d.Pages != nil {
		d.Pages.Register(d.Mux)
	}
	h := rt.observe(rt.cors(rt.limitHeaders(rt.limitBody(rt.csrf(rt.cleanInput(rt.identify(http.HandlerFunc(rt.route))))))))
	if d.Config.Production() {
		h = hsts(h)
	}
	// Outermost, so that the span covers every layer and the logs run
	// inside it (no-op unless tracing is on).
	rt.handler = telemetry.Handler(h)
	return rt, nil
}

// ServeHTTP serves a request through the layers.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) { rt.handler.ServeHTTP(w, r) }
