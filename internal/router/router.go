// Package router is the process's one HTTP handler. The JSON API and the
// web pages register their routes side by side on one ServeMux (so Go's
// mux checks the whole route table for conflicts), and every request
// passes the same layers: the API's request layers (request id, logs,
// metrics, CORS, limits, CSRF for cookie requests, input checks), then
// one identity middleware that resolves the caller — API operation,
// WebSocket or page alike — and puts it in the context (auth.Identity),
// then the per-caller rate limit (api.Routes), before any routing: a path
// no route has pays like any other.
// What a route requires of that caller stays with the route: the API's
// rules (api.Register) and the pages' session check (internal/web).
package router

import (
	"net/http"

	"github.com/agentplatform/agentplatform/internal/api"
	"github.com/agentplatform/agentplatform/internal/auth"
)

// Pages is the web UI as the router sees it: routes to register.
type Pages interface {
	Register(mux *http.ServeMux)
}

// Deps are what the router puts together. API must have been built on Mux
// (api.Deps.Mux).
type Deps struct {
	Mux   *http.ServeMux
	Auth  *auth.Service
	API   *api.API
	Pages Pages
	// Production adds Strict-Transport-Security to every answer.
	Production bool
}

// New registers the pages beside the API's routes and returns the handler
// of every request.
func New(d Deps) http.Handler {
	if d.Pages != nil {
		d.Pages.Register(d.Mux)
	}
	h := d.API.Layers(identify(d.Auth, d.API.TakesQueryToken, d.API.Routes()))
	if d.Production {
		h = hsts(h)
	}
	return h
}

// identify resolves the request's credential once, before routing, for
// whichever route serves it. It refuses nothing: a failed credential is
// recorded (Identity.Err) and the route decides — a public operation
// ignores it, a protected one answers 401, a page redirects to /login.
func identify(a *auth.Service, queryToken func(*http.Request) bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := a.Identify(r, queryToken(r))
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
