package auth

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/agentplatform/agentplatform/internal/apperr"
)

// Scope is an API key permission.
type Scope string

// The scopes of DESIGN §4 Auth.
const (
	ScopeRead      Scope = "read:all"   // GET and HEAD
	ScopeWrite     Scope = "write:all"  // every method
	ScopeAdmin     Scope = "admin"      // everything, admin endpoints included
	ScopeAppAccess Scope = "app:access" // using apps, not managing them
)

// Scopes lists every valid scope.
var Scopes = []Scope{ScopeRead, ScopeWrite, ScopeAdmin, ScopeAppAccess}

// Kind is how a caller authenticated.
type Kind string

// The kinds of credential.
const (
	KindSession  Kind = "session"
	KindAPIKey   Kind = "api_key"
	KindAgentKey Kind = "agent_key"
)

// Caller is the authenticated principal of a request.
type Caller struct {
	UserID  string
	Email   string
	IsAdmin bool
	Kind    Kind
	// SessionID is set for sessions, KeyID for API keys, ActivationID for
	// agent keys (the run the key belongs to).
	SessionID    string
	KeyID        int64
	ActivationID string
	Scopes       []Scope
	// AppID binds a key to one app; empty means every app of the user. An
	// agent key is always bound to its activation's app.
	AppID string
	// AdminReason is the X-Admin-Reason header: an admin's stated reason to
	// reach another user's resource.
	AdminReason string

	// gen is the count of credential changes when the caller was
	// authenticated, expires its credential's expiry (zero: none); Hold
	// uses them.
	gen     uint64
	expires time.Time
}

// HasScope reports whether a key caller holds s. Sessions hold no scopes:
// they carry all of their user's rights.
func (c *Caller) HasScope(s Scope) bool { return slices.Contains(c.Scopes, s) }

// CanAdmin reports whether the caller may use admin rights: an admin's
// session, or a key with the admin scope of an admin that is not bound to
// one app (a bound key reaches nothing beyond its app).
func (c *Caller) CanAdmin() bool {
	return c.IsAdmin && c.AppID == "" && (c.Kind == KindSession || c.HasScope(ScopeAdmin))
}

// SeesApp reports whether things of app appID exist for c; "" stands for
// things outside every app (system agents, an activation without an app).
// A key bound to one app sees that app only; every other caller sees
// every app (user isolation is Reach's business).
//
// It is the one test of the binding: the middleware applies it to a
// route's {app_id}, Reach to every resource it is given, and the domain
// lists filter on Caller.AppID.
func (c *Caller) SeesApp(appID string) bool { return c.AppID == "" || c.AppID == appID }

// Rule is what a route requires of its caller. Every route declares one.
type Rule struct {
	// Public routes need no credentials.
	Public bool
	// SessionOnly routes refuse API and agent keys (key management).
	SessionOnly bool
	// Admin routes need CanAdmin.
	Admin bool
	// AppAccess routes are open to app:access keys (using an app, not
	// managing it).
	AppAccess bool
	// Account routes act on the account rather than inside one app (the
	// profile, LLM providers, new apps, the marketplace): a key bound to
	// one app gets 403. Admin and SessionOnly routes are refused to bound
	// keys anyway.
	Account bool
	// AgentKeyOK routes are open to agent keys (agk_): an app's data and
	// credential endpoints, which a custom agent's run uses. Every other
	// route refuses them (403); the key's binding to its app makes other
	// apps' things absent (404) as for any bound key.
	AgentKeyOK bool
	// Browser routes (the web pages) take a session by its cookie only:
	// never a Bearer header or a key, which a browser does not send by
	// itself.
	Browser bool
}

// The rules routes use.
var (
	Public      = Rule{Public: true}
	User        = Rule{}
	AppUse      = Rule{AppAccess: true}
	SessionOnly = Rule{SessionOnly: true}
	AdminOnly   = Rule{Admin: true}
	Account     = Rule{Account: true}
	// AccountRead is Account that app:access keys may read.
	AccountRead = Rule{Account: true, AppAccess: true}
	// AppData is AppUse that a running custom agent's key may use too:
	// the app data and credential routes.
	AppData = Rule{AppAccess: true, AgentKeyOK: true}
	// Page is the pages' rule: a session, by its cookie.
	Page = Rule{Browser: true}
)

// ErrOtherApp answers a key bound to one app that names another: the app
// does not exist for it.
var ErrOtherApp = apperr.NotFoundf("App not found")

// Check is the one access check of every route, API operation, WebSocket,
// SSE stream or page alike: it applies rule to the identity the router
// resolved (id) for an HTTP method, and returns the caller the route
// serves (nil on a public route without a valid credential) or the error
// to answer (ErrAuthRequired, the credential's own error, ErrForbidden).
// A public route ignores a failed credential; any other answers its error.
func Check(id Identity, rule Rule, method string) (*Caller, error) {
	caller := id.Caller
	if id.Err != nil {
		if !rule.Public {
			return nil, id.Err
		}
		caller = nil
	}
	if rule.Browser && caller != nil && (id.Source != FromCookie || caller.Kind != KindSession) {
		return nil, ErrAuthRequired
	}
	if err := Allow(caller, rule, method); err != nil {
		return nil, err
	}
	return caller, nil
}

// Allow checks c (nil when unauthenticated) against rule for an HTTP method.
func Allow(c *Caller, rule Rule, method string) error {
	if rule.Public {
		return nil
	}
	if c == nil {
		return ErrAuthRequired
	}
	if c.Kind == KindAgentKey {
		// An agent key carries no scopes: what it may do is the route's
		// say alone.
		if !rule.AgentKeyOK {
			return ErrForbidden
		}
		return nil
	}
	if rule.SessionOnly && c.Kind != KindSession {
		return ErrForbidden
	}
	if rule.Account && c.AppID != "" {
		return ErrForbidden
	}
	if rule.Admin {
		if !c.CanAdmin() {
			return ErrForbidden
		}
		return nil
	}
	if c.Kind == KindSession {
		return nil
	}
	switch {
	case c.HasScope(ScopeAdmin), c.HasScope(ScopeWrite):
		return nil
	case c.HasScope(ScopeRead) && (method == http.MethodGet || method == http.MethodHead):
		return nil
	case c.HasScope(ScopeAppAccess) && rule.AppAccess:
		return nil
	}
	return ErrForbidden
}

// AllowApp checks an app a request names (a route's {app_id}, a filter):
// for a key bound to another app it is absent (ErrOtherApp, 404).
func AllowApp(c *Caller, appID string) error {
	if c != nil && appID != "" && !c.SeesApp(appID) {
		return ErrOtherApp
	}
	return nil
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller of ctx, or nil.
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}
