// Package web is the browser UI: server-rendered html/template pages and a
// little hand-written JavaScript and CSS, all embedded in the binary (no
// CDN, no build step). Pages read through the domain services, as the API
// handlers do; what changes data (forms, buttons) goes through the JSON
// API from the page, so it is checked and limited the same way (CSRF
// included: the API's cookie requests must be same-origin).
//
// A page is a handler in pages.go, a template in templates/ that defines
// "title" and "content" (layout.html wraps it), and a line in Register.
// Private pages go through private: without a session cookie they answer
// 303 to /login?next=<the page>, and they see the caller the router's identity middleware
// resolved; the login page sends them back after the login (?next=).
// Every answer carries the security headers of secure (CSP
// without inline script, no framing).
package web

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentplatform/agentplatform/examples"
	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/appdata"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/authenticator"
	"github.com/agentplatform/agentplatform/internal/credential"
	"github.com/agentplatform/agentplatform/internal/function"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/localpath"
	"github.com/agentplatform/agentplatform/internal/usage"
)

//go:embed templates static
var files embed.FS

// Deps are the domain services pages read from.
type Deps struct {
	Log  *slog.Logger
	Auth *auth.Service
	Apps *apps.Service
	// Data, Authenticators and Credentials serve an app's data explorer
	// and connections pages.
	Data           *appdata.Service
	Authenticators *authenticator.Service
	Credentials    *credential.Service
	// Activations and Functions feed the pages where agents and functions
	// run (live.go).
	Activations *activation.Service
	Functions   *function.Service
	// Usage feeds the usage page: reports and budgets.
	Usage *usage.Service
	// PublicURL is AP_PUBLIC_URL: the app page's Connect section gives
	// clients the app's MCP URL and the OpenAI base URL under it.
	PublicURL string
	// MCPTools lists an MCP server's tools for the app page's "Show
	// tools" (the LLM runtime's tool.Kit); nil: the page says it cannot.
	MCPTools MCPTools
}

// MCPTools lists the tools of app appID's MCP server named server as
// userID's runs see them: it connects to the server (through the egress
// guard), lists and closes. An error says why the server could not be
// listed.
type MCPTools interface {
	MCPServerTools(ctx context.Context, userID, appID, server string) ([]llm.Tool, error)
}

// Pages is the web UI.
type Pages struct {
	Deps
	pages  map[string]*page
	static http.Handler
	// version busts browser caches of the static files when they change.
	version string
}

// New lists the pages; each parses its template on its first render
// (page). An API-only server never renders one, and the parse trees were
// a megabyte of its idle heap. A broken template cannot reach a binary
// unseen: they are embedded, and TestTemplatesParseOnFirstUse parses them
// all.
func New(d Deps) (*Pages, error) {
	p := &Pages{Deps: d, pages: map[string]*page{}}
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if name == "templates/layout.html" {
			continue
		}
		p.pages[name[len("templates/"):]] = &page{file: name}
	}
	static, err := fs.Sub(files, "static")
	if err != nil {
		return nil, err
	}
	p.static = http.StripPrefix("/static/", http.FileServerFS(static))
	p.version, err = digest(static)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// page is one page's template, layout.html and the page's file, parsed
// once on first use.
type page struct {
	file string
	once sync.Once
	tmpl *template.Template
	err  error
}

// template is the page's parsed template, or why it does not parse.
func (pg *page) template() (*template.Template, error) {
	pg.once.Do(func() {
		pg.tmpl, pg.err = template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", pg.file)
		if pg.err != nil {
			pg.err = fmt.Errorf("web: %s: %w", pg.file, pg.err)
		}
	})
	return pg.tmpl, pg.err
}

// parsed reports whether the template was parsed already (tests).
func (pg *page) parsed() bool { return pg.tmpl != nil || pg.err != nil }

// Register lists every page. Add a page here, with its rule: public
// (login, register) or private (everything else).
func (p *Pages) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /login", p.public(p.login))
	mux.HandleFunc("GET /register", p.public(p.register))
	mux.HandleFunc("GET /{$}", p.private(p.appsPage))
	mux.HandleFunc("GET /keys", p.private(p.keys))
	mux.HandleFunc("GET /usage", p.private(p.usagePage))
	mux.HandleFunc("GET /apps/{app_id}", p.private(p.app))
	mux.HandleFunc("GET /apps/{app_id}/data", p.private(p.data))
	mux.HandleFunc("GET /apps/{app_id}/connections", p.private(p.connections))
	mux.HandleFunc("GET /apps/{app_id}/activations/{activation_id}", p.private(p.activationPage))
	mux.HandleFunc("GET /apps/{app_id}/activations/{activation_id}/run", p.private(p.runFragment))
	mux.HandleFunc("GET /apps/{app_id}/waiting", p.private(p.waitFragment))
	mux.HandleFunc("GET /apps/{app_id}/functions", p.private(p.functionsPage))
	mux.HandleFunc("POST /apps/{app_id}/mcp-servers/{server_id}/tools", p.private(p.mcpToolsFragment))
	mux.HandleFunc("GET /static/", p.assets)
	mux.HandleFunc("GET "+examplePath, p.example)
}

// contentSecurityPolicy lets a page load scripts, styles, images and
// connections (fetch, and the WebSocket: CSP 3 browsers match ws: and wss:
// of the own host with 'self') from its own origin only; no inline script
// or style, no plugins, no framing, and forms post to the own origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// secure sets the headers of every answer of the UI.
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
}

// private serves h to a session's browser, and sends anyone else to the
// login page: a page takes the session cookie only, never a Bearer header
// or an API key (auth.Page, checked by auth.Check as every route is).
func (p *Pages) private(h func(http.ResponseWriter, *http.Request, *auth.Caller)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		// A page shows the user's data: never from a shared cache, and
		// not from the back button after logout.
		w.Header().Set("Cache-Control", "no-store")
		c, err := auth.Check(auth.IdentityFrom(r.Context()), auth.Page, r.Method)
		if err != nil {
			http.Redirect(w, r, loginURL(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h(w, r, c)
	}
}

// loginURL is the login page for a browser without a session at uri: it
// returns there after the login (?next=, a path on this site only).
func loginURL(uri string) string { return withNext("/login", uri, nil) }

// withNext is path with query q and, unless it is the apps page (the
// default), next as its ?next=: how the login and register pages hand
// the page to return to on to each other.
func withNext(path, next string, q url.Values) string {
	if q == nil {
		q = url.Values{}
	}
	if next != "/" && localpath.Is(next) {
		q.Set("next", next)
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// next is where the login page sends the browser on: its ?next= when that
// is a path on this site (localpath), else the apps page.
func next(r *http.Request) string { return localpath.Or(r.URL.Query().Get("next"), "/") }

// public serves a page anyone may see; a signed-in browser goes on to its
// ?next= (the login page's) or its apps instead.
func (p *Pages) public(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		w.Header().Set("Cache-Control", "no-store")
		if _, err := auth.Check(auth.IdentityFrom(r.Context()), auth.Page, r.Method); err == nil {
			http.Redirect(w, r, next(r), http.StatusSeeOther)
			return
		}
		h(w, r)
	}
}

// assets serves the embedded CSS and JavaScript. Their URLs carry the
// files' digest (?v=), so a browser may keep them a while.
func (p *Pages) assets(w http.ResponseWriter, r *http.Request) {
	secure(w)
	if strings.HasSuffix(r.URL.Path, "/") {
		// Files only: no directory listings.
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	p.static.ServeHTTP(w, r)
}

// examplePath is where the empty apps page fetches the example manifest
// from, to import it through the API like any other.
const examplePath = "/examples/support-desk.json"

// example serves the README's example manifest from the binary: public,
// as the file is in the repository.
func (p *Pages) example(w http.ResponseWriter, r *http.Request) {
	secure(w)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(examples.SupportDesk)
}

// digest is a short hash of every static file.
func digest(fsys fs.FS) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	return hex.EncodeToString(h.Sum(nil))[:12], err
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	// tab is the argument of the "appnav" template: the app and which of
	// its pages is open.
	"tab": func(app any, current string) map[string]any { return map[string]any{"App": app, "Current": current} },
	// args names a shared template's arguments: args "Key" value "Key2"
	// value2 …, as a template takes one.
	"args": func(kv ...any) (map[string]any, error) {
		if len(kv)%2 != 0 {
			return nil, errors.New("args: a key without a value")
		}
		m := make(map[string]any, len(kv)/2)
		for i := 0; i < len(kv); i += 2 {
			k, ok := kv[i].(string)
			if !ok {
				return nil, fmt.Errorf("args: key %v is not a string", kv[i])
			}
			m[k] = kv[i+1]
		}
		return m, nil
	},
	// iso and utc render a timestamp: the machine-readable datetime of a
	// <time> element (app.js shows it in the reader's time zone) and the
	// text shown until then, or without JavaScript.
	"iso": func(t any) string {
		if tt, ok := timeOf(t); ok {
			return tt.UTC().Format(time.RFC3339)
		}
		return ""
	},
	"utc": func(t any) string {
		if tt, ok := timeOf(t); ok {
			return tt.UTC().Format("2006-01-02 15:04 UTC")
		}
		return ""
	},
	"hastime": func(t any) bool { _, ok := timeOf(t); return ok },
	// usd is an amount in micro-USD as dollars; sub places the usage
	// chart's labels.
	"usd":  func(micro int64) string { return fmt.Sprintf("$%.2f", usage.MicroToUSD(micro)) },
	"sub":  func(a, b float64) float64 { return a - b },
	"add":  func(a, b float64) float64 { return a + b },
	"half": func(a, b float64) float64 { return (a + b) / 2 },
}

func timeOf(t any) (time.Time, bool) {
	switch v := t.(type) {
	case time.Time:
		return v, !v.IsZero()
	case *time.Time:
		if v != nil && !v.IsZero() {
			return *v, true
		}
	}
	return time.Time{}, false
}
