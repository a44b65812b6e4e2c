package router

import (
	"net/http"
	"net/url"
	"strings"
)

// CORS headers: what a script on a listed origin may send and read.
const (
	corsAllowMethods  = "GET, HEAD, POST, PUT, PATCH, DELETE"
	corsAllowHeaders  = "Authorization, Content-Type, Accept, Prefer, Idempotency-Key, X-Admin-Reason, Last-Event-ID"
	corsExposeHeaders = "X-Request-ID, Location, Retry-After, Preference-Applied, Idempotent-Replayed"
)

// cors answers browsers on the origins of AP_CORS_ORIGINS, preflights
// included, and nobody else: an unlisted origin gets no CORS header, so its
// scripts can read nothing. It is for Bearer tokens only: the answers never
// carry Access-Control-Allow-Credentials, and a request from a listed
// origin other than the platform's own loses its cookie before anything
// reads it, so a session cookie is never accepted cross-origin.
func (rt *Router) cors(next http.Handler) http.Handler {
	if len(rt.cfg.CORSOrigins) == 0 {
		return next
	}
	var own string
	if u, err := url.Parse(rt.cfg.PublicURL); err == nil {
		own = strings.ToLower(u.Scheme + "://" + u.Host)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		lower := strings.ToLower(origin)
		if !rt.cfg.CORSOrigins.Has(lower) {
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", corsAllowMethods)
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		if lower != own && lower != "http://"+strings.ToLower(r.Host) && lower != "https://"+strings.ToLower(r.Host) {
			r.Header.Del("Cookie")
		}
		next.ServeHTTP(w, r)
	})
}
