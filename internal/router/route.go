package router

import (
	"net/http"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/httperr"
	"github.com/agentplatform/agentplatform/internal/request"
	"github.com/agentplatform/agentplatform/internal/telemetry"
)

// route serves every request after the identity middleware: it spends the
// caller's rate (limit) before anything is routed, then serves the mux,
// answering unknown routes and wrong methods itself (refuse) instead of
// with the mux's plain text.
func (rt *Router) route(w http.ResponseWriter, r *http.Request) {
	h, pattern := rt.mux.Handler(r)
	if info := request.From(r.Context()); info != nil {
		info.Route = pattern
	}
	telemetry.RouteName(r, pattern)
	if !rt.limit(r, pattern) {
		rt.refuse(w, r, apperr.New(apperr.RateLimit, httperr.DetailRateLimited))
		return
	}
	if pattern != "" {
		rt.mux.ServeHTTP(w, r)
		return
	}
	// The mux knows whether the path exists under another method: let it
	// answer into a probe, then keep only its status and Allow header.
	probe := &headerProbe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	switch probe.status {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", probe.header.Get("Allow"))
		rt.refuse(w, r, &httperr.ErrorBody{Detail: "Method not allowed", StatusCode: http.StatusMethodNotAllowed, ErrorType: string(apperr.Validation)})
	case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		rt.mux.ServeHTTP(w, r)
	default:
		rt.refuse(w, r, apperr.NotFoundf("Not found"))
	}
}

// limit spends one request of the caller's rate, before routing, so that
// every request pays — API operations, the WebSocket handshake, pages,
// and paths no route has — and each pays once. An authenticated caller
// spends their user's budget; without a valid credential the client
// address pays (refusals cost like answers, so guessing tokens or probing
// routes is limited too). Routes the API registered unlimited (health
// probes, metrics) are exempt.
func (rt *Router) limit(r *http.Request, pattern string) bool {
	if rt.api.Unlimited(pattern) {
		return true
	}
	id := auth.IdentityFrom(r.Context())
	caller := id.Caller
	if id.Err != nil {
		caller = nil
	}
	return rt.rate.Allow(rateKey(caller, request.ClientIP(r.Context())))
}

// rateKey is whose budget a request spends: the user's, whichever of
// their keys or sessions they use (more keys must not mean more rate), or
// the client address's when nobody is authenticated.
func rateKey(caller *auth.Caller, ip string) string {
	if caller == nil {
		return "ip:" + ip
	}
	return "user:" + caller.UserID
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
