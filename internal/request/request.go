// Package request holds what the front door (internal/router) learns about
// a request before any route serves it — its scoped logger (with the
// request id), the client's address, the route the mux chose — so that
// the routes behind it (internal/api, internal/web) can read them without
// importing the router.
package request

import (
	"context"
	"log/slog"
)

// Info is what the front door knows about one request. It travels as one
// context value, set once per request: the layers behind read it, and the
// router fills Route in once the mux has chosen.
type Info struct {
	// Log is the request-scoped logger: it carries the request id.
	Log *slog.Logger
	// ClientIP is the client's address as limits and logs know it (the
	// TCP peer, or what trusted proxies say).
	ClientIP string
	// Route is the pattern of the route serving the request ("" for a
	// path no route has).
	Route string
}

type infoKey struct{}

// With returns ctx carrying info.
func With(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// From returns the request's Info, or nil outside the front door (a test
// calling a handler directly).
func From(ctx context.Context) *Info {
	info, _ := ctx.Value(infoKey{}).(*Info)
	return info
}

// Logger is the request-scoped logger, or the default one outside a
// request.
func Logger(ctx context.Context) *slog.Logger {
	if info := From(ctx); info != nil && info.Log != nil {
		return info.Log
	}
	return slog.Default()
}

// ClientIP is the client's address, the key of per-address limits ("" outside a request).
func ClientIP(ctx context.Context) string {
	if info := From(ctx); info != nil {
		return info.ClientIP
	}
	return ""
}
