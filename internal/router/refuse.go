package router

import (
	"net/http"
	"strings"

	"github.com/agentplatform/agentplatform/internal/httperr"
	"github.com/agentplatform/agentplatform/internal/openaicompat"
)

// refuse answers a request the front door turns away — too large, cross-
// origin, malformed, over its rate, or for a path no route has — in the
// language of whoever asked: the API's JSON error body for the API (a
// path under /api/, or a client that accepts JSON), an HTML page for a
// browser anywhere else (Pages.ErrorPage, with the pages' layout and
// security headers).
func (rt *Router) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if openaicompat.Owns(r.URL.Path) {
		// OpenAI's SDKs read only OpenAI's error shape.
		openaicompat.WriteError(w, r, err)
		return
	}
	body := httperr.Body(r.Context(), err)
	if rt.pages == nil || wantsJSON(r) {
		httperr.WriteBody(w, body)
		return
	}
	if body.StatusCode == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "60")
	}
	rt.pages.ErrorPage(w, r, body.StatusCode, body.Detail)
}

// wantsJSON reports whether a refusal is the API's: its paths, and any
// client that says it reads JSON.
func wantsJSON(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/api/") || strings.Contains(r.Header.Get("Accept"), "application/json")
}
