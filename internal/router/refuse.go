package router

import (
	"net/http"

	"github.com/agentplatform/agentplatform/internal/httperr"
)

// refuse answers a request the front door turns away — too large, cross-
// origin, malformed, over its rate, or for a path no route has — with the
// API's JSON error body.
func (rt *Router) refuse(w http.ResponseWriter, r *http.Request, err error) {
	httperr.Write(w, r, err)
}
