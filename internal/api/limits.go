package api

import (
	"context"
	"log/slog"
	"strings"

	"github.com/agentplatform/agentplatform/internal/limits"
	"github.com/agentplatform/agentplatform/internal/request"
)

// MaxBodyBytes is the largest request body accepted (413 beyond); a
// record written from JavaScript obeys the same limit.
const MaxBodyBytes = limits.BodyBytes

// MaxHeaderBytes is the largest request head (request line and headers)
// the router accepts (431 beyond), as the API documents it.
const MaxHeaderBytes = limits.HeaderBytes

// logger is the request-scoped logger (it carries the request id).
func logger(ctx context.Context) *slog.Logger { return request.Logger(ctx) }

// clientIP is the client address of the request, the key of per-address
// limits (the router's client address).
func clientIP(ctx context.Context) string { return request.ClientIP(ctx) }

// wantsJSON reports whether the client asked for JSON rather than a redirect.
func wantsJSON(accept string) bool {
	return strings.Contains(accept, "application/json")
}
