package auth

import (
	"context"
	"net/http"
	"strings"
)

// SessionCookie is the name of the session cookie; its value is the
// session token.
const SessionCookie = "ap_session"

// Source is where a request's credential came from.
type Source int

// The places a credential is read from.
const (
	// FromNothing: the request carries no credential.
	FromNothing Source = iota
	// FromHeader: Authorization: Bearer.
	FromHeader
	// FromCookie: the session cookie, which a browser sends by itself.
	FromCookie
	// FromQuery: ?token=, on the few routes that take it (clients that
	// cannot set headers: EventSource, a browser's WebSocket).
	FromQuery
)

// Identity is a request's credential, resolved once for every route (API
// operation, WebSocket or page) by the router's middleware. Caller is nil
// when there is no credential or it failed; Err then says why
// (ErrAuthRequired without one). What the route requires of the caller
// (its Rule, session only, cookie only) is the route's business.
type Identity struct {
	Caller *Caller
	Err    error
	Source Source
}

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity the middleware resolved; a request it
// did not see has no credential.
func IdentityFrom(ctx context.Context) Identity {
	if id, ok := ctx.Value(identityKey{}).(Identity); ok {
		return id
	}
	return Identity{Err: ErrAuthRequired}
}

// Identify resolves the credential of r: ?token= when queryToken (the
// route takes one and it is there), else the Authorization header, else
// the session cookie. A malformed Authorization header is no credential at
// all, and does not fall back to the cookie.
func (s *Service) Identify(r *http.Request, queryToken bool) Identity {
	ctx := r.Context()
	if queryToken {
		if token := r.URL.Query().Get("token"); token != "" {
			c, err := s.Authenticate(ctx, token)
			return Identity{Caller: c, Err: err, Source: FromQuery}
		}
	}
	if h := r.Header.Get("Authorization"); h != "" {
		token, ok := BearerToken(h)
		if !ok {
			return Identity{Err: ErrAuthRequired, Source: FromHeader}
		}
		c, err := s.Authenticate(ctx, token)
		return Identity{Caller: c, Err: err, Source: FromHeader}
	}
	if token := CookieToken(r.Header.Get("Cookie")); token != "" {
		c, err := s.Authenticate(ctx, token)
		return Identity{Caller: c, Err: err, Source: FromCookie}
	}
	return Identity{Err: ErrAuthRequired}
}

// CookieToken finds the session token in a Cookie header ("" when absent:
// a cookie of that name that is not a session token is someone else's).
func CookieToken(header string) string {
	if header == "" {
		return ""
	}
	cookies, err := http.ParseCookie(header)
	if err != nil {
		return ""
	}
	for _, c := range cookies {
		if c.Name == SessionCookie && strings.HasPrefix(c.Value, PrefixSession) {
			return c.Value
		}
	}
	return ""
}
