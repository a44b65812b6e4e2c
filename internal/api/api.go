// Package api is the HTTP surface of the platform: huma operations on the
// standard ServeMux, one file per resource, every route listed in routes.go
// with the auth rule it requires. Handlers are thin: they decode, call a
// domain package and encode. Errors from the domain are apperr errors; the
// one hook in errors.go turns them into {detail, status_code, error_type}.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/appdata"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/authenticator"
	"github.com/agentplatform/agentplatform/internal/config"
	"github.com/agentplatform/agentplatform/internal/credential"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/function"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/mcpserver"
	"github.com/agentplatform/agentplatform/internal/metrics"
	"github.com/agentplatform/agentplatform/internal/pipeline"
	"github.com/agentplatform/agentplatform/internal/ratelimit"
	"github.com/agentplatform/agentplatform/internal/secret"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/usage"
	"github.com/agentplatform/agentplatform/internal/version"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

func init() {
	// huma's error constructors are package variables by design; ours make
	// every error, validation included, take the contract's shape.
	huma.NewErrorWithContext = humaError
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		return humaError(nil, status, msg, errs...)
	}
	// Arrays are never null in an answer (outputs build them non-nil), so
	// the document must not say they might be.
	huma.DefaultArrayNullable = false
}

// SessionCookie is the name of the session cookie.
const SessionCookie = auth.SessionCookie

// Deps are what the API is built on.
type Deps struct {
	Config      *config.Config
	Log         *slog.Logger
	Store       *store.Store
	Secrets     *secret.Box
	Auth        *auth.Service
	Activations *activation.Service
	Events      *events.Bus
	Metrics     *metrics.Metrics
	Apps        *apps.Service
	LLM         *llm.Service
	Data        *appdata.Service
	Functions   *function.Service
	Pipelines   *pipeline.Service
	Credentials *credential.Service
	// Authenticators are apps' OAuth client registrations.
	Authenticators *authenticator.Service

	Webhooks *webhook.Service
	// Usage reports the usage ledger and keeps budgets; nil: one over Store.
	Usage *usage.Service
	// WebSocket tunes event sockets (ping interval, buffer); zero: defaults.
	WebSocket events.WSOptions
	// Mux is the process's one ServeMux (internal/router), where the API
	// registers its routes beside the web pages'; nil: a mux of its own.
	Mux *http.ServeMux
}

// API is the JSON API: its routes on the process's mux and the huma API
// (for the OpenAPI document and for tests that add operations). The layers
// every request passes, and the rate spent before routing, are the front
// door's (internal/router).
type API struct {
	Deps
	log     *slog.Logger
	metrics *metrics.Metrics
	huma    huma.API
	mux     *http.ServeMux
	// queryToken matches the routes that take their credential from
	// ?token= (queryTokenRoutes).
	queryToken *http.ServeMux
	// unlimited are the patterns of the routes exempt from rate (unlimited).
	unlimited map[string]bool
	logins    *ratelimit.Window
	// mcp serves the MCP endpoints (mcp.go).
	mcp *mcpserver.Service
	// streams ends when the server shuts down, and the SSE streams with it
	// (stream.go).
	streamsCtx context.Context
	endStreams context.CancelFunc
}

// New builds the API with every route of routes.go.
func New(d Deps) (*API, error) {
	a := &API{Deps: d, log: d.Log, metrics: d.Metrics, mux: d.Mux, queryToken: http.NewServeMux(),
		unlimited: map[string]bool{}}
	if a.mux == nil {
		a.mux = http.NewServeMux()
	}
	if a.Usage == nil {
		a.Usage = usage.New(d.Store, d.Auth, d.Events)
	}
	for _, pattern := range queryTokenRoutes {
		a.queryToken.Handle(pattern, http.NotFoundHandler())
	}
	a.streamsCtx, a.endStreams = context.WithCancel(context.Background())
	a.logins = ratelimit.NewWindow(d.Config.LoginFailureLimit, time.Minute)
	a.mcp = mcpserver.New(mcpserver.Deps{Apps: d.Apps, Activations: d.Activations, Functions: d.Functions, Pipelines: d.Pipelines})

	cfg := huma.DefaultConfig("Agent Platform API", version.Version)
	cfg.Info.Description = docDescription
	cfg.Info.Contact = &huma.Contact{Name: "The operator of this instance", URL: d.Config.PublicURL}
	cfg.Servers = []*huma.Server{{URL: d.Config.PublicURL, Description: "This instance (AP_PUBLIC_URL)"}}
	cfg.Tags = docTags
	cfg.OpenAPIPath = "" // served by docs.go: the 3.0 variant needs a change huma's does not make
	cfg.DocsPath = ""    // served offline by docs.go
	cfg.SchemasPath = "" // no $schema links injected into bodies
	cfg.CreateHooks = nil
	cfg.AllowAdditionalPropertiesByDefault = true // unknown JSON fields are ignored
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer", Description: "An `ak_` API key, an `st_` session token, or the `agk_` agent key of a running custom agent's activation (its app's data and credential routes only)."},
		"cookie": {Type: "apiKey", In: "cookie", Name: SessionCookie, Description: "The session cookie set by login."},
	}
	a.huma = humago.New(a.mux, cfg)
	a.huma.UseMiddleware(a.authenticate)
	a.routes()
	if err := finishDocument(a.huma.OpenAPI()); err != nil {
		return nil, err
	}
	return a, nil
}

// Unlimited reports whether the route of pattern is exempt from the
// per-caller rate limit the router spends before routing (unlimited).
func (a *API) Unlimited(pattern string) bool { return a.unlimited[pattern] }

// queryTokenRoutes take their credential from ?token= too: EventSource and
// a browser's WebSocket cannot set headers. Nowhere else is a token read
// from the URL (URLs end up in logs and histories).
var queryTokenRoutes = []string{
	"GET /api/v1/ws",
	"GET /api/v1/activations/{activation_id}/stream",
}

// TakesQueryToken reports whether r's route takes ?token= (the router's
// identity middleware asks before routing).
func (a *API) TakesQueryToken(r *http.Request) bool {
	if !r.URL.Query().Has("token") {
		return false
	}
	_, pattern := a.queryToken.Handler(r)
	return pattern != ""
}

// Huma exposes the huma API (the OpenAPI document; tests add operations).
func (a *API) Huma() huma.API { return a.huma }

const (
	ruleKey      = "auth_rule"
	unlimitedKey = "no_rate_limit"
)

// unlimited exempts an operation from the per-caller rate limit: health
// probes of a load balancer come from one IP many times a minute.
func unlimited(op huma.Operation) huma.Operation {
	if op.Metadata == nil {
		op.Metadata = map[string]any{}
	}
	op.Metadata[unlimitedKey] = true
	return op
}

// register adds a huma operation with the auth rule its caller must meet.
func register[I, O any](a *API, op huma.Operation, rule auth.Rule, h func(context.Context, *I) (*O, error)) {
	if op.Metadata[unlimitedKey] == true {
		a.unlimited[strings.ToUpper(op.Method)+" "+op.Path] = true // the pattern humago registers
	}
	Register(a.huma, op, rule, h)
}

// Register is register for operations defined outside this package (tests).
func Register[I, O any](api huma.API, op huma.Operation, rule auth.Rule, h func(context.Context, *I) (*O, error)) {
	if op.Metadata == nil {
		op.Metadata = map[string]any{}
	}
	op.Metadata[ruleKey] = rule
	if !rule.Public {
		op.Security = []map[string][]string{{"bearer": {}}, {"cookie": {}}}
	}
	if op.MaxBodyBytes == 0 {
		op.MaxBodyBytes = MaxBodyBytes
	}
	// The body is read under the router's deadline, lifted once read;
	// huma's would stay and cut the operation (and the connection) at 5 s.
	op.BodyReadTimeout = -1
	huma.Register(api, op, h)
	if doc := operationOf(api.OpenAPI(), op.Method, op.Path); doc != nil {
		documentOperation(api.OpenAPI(), doc)
	}
}

// authenticate is the huma middleware every operation passes (the SSE
// stream included): it applies the route's rule (auth.Check) and a bound
// key's app, and puts the caller in the context.
func (a *API) authenticate(hctx huma.Context, next func(huma.Context)) {
	op := hctx.Operation()
	rule, _ := op.Metadata[ruleKey].(auth.Rule)
	ctx := hctx.Context()
	fail := func(err error) {
		body := errorBody(ctx, err)
		_ = huma.WriteErr(a.huma, hctx, body.StatusCode, body.Detail, body)
	}

	// The router resolved the credential (auth.Identify) and spent the
	// rate; the rule is this route's.
	caller, err := auth.Check(auth.IdentityFrom(ctx), rule, op.Method)
	if err != nil {
		fail(err)
		return
	}
	appID := hctx.Param("app_id")
	if appID == "" {
		appID = hctx.Param("appId") // the data explorer's paths
	}
	if err := auth.AllowApp(caller, appID); err != nil {
		fail(err)
		return
	}
	if caller != nil {
		caller.AdminReason = strings.TrimSpace(hctx.Header("X-Admin-Reason"))
		ctx = auth.WithCaller(ctx, caller)
		hctx = huma.WithContext(hctx, ctx)
	}
	next(hctx)
}

// mustCaller is the caller of an authenticated route (the middleware put it
// there; a route without one is a programming error caught by tests).
func mustCaller(ctx context.Context) *auth.Caller {
	c := auth.CallerFrom(ctx)
	if c == nil {
		panic("api: route without an authenticated caller")
	}
	return c
}
