package api

import (
	"net/http"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
)

// mcpEndpoint is POST /api/v1/apps/{app_id}/mcp (the app's tools) and POST
// /api/v1/mcp (every app's): a plain net/http route, since MCP's
// Streamable HTTP is JSON-RPC, not an operation huma can describe. The
// router's layers applied (auth, rate, body limits); listing tools is
// reading, so the route asks what a GET asks, and internal/mcpserver asks
// more of a tools/call.
func (a *API) mcpEndpoint(w http.ResponseWriter, r *http.Request) {
	caller, err := auth.Check(auth.IdentityFrom(r.Context()), auth.AppUse, http.MethodGet)
	if err != nil {
		if apperr.Is(err, apperr.Authentication) {
			// MCP clients look for the challenge to know a token is wanted.
			w.Header().Set("WWW-Authenticate", "Bearer")
		}
		writeError(w, r, err)
		return
	}
	a.mcp.Serve(w, r, caller, r.PathValue("app_id"))
}
