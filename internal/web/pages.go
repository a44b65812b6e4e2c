package web

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
)

// listLimit is how many rows a page lists; the lists say when there are
// more.
const listLimit = 100

// view is what layout.html renders around a page's content.
type view struct {
	Title string
	// Nav is the header link of the current page (apps, keys).
	Nav string
	// Email is the signed-in user's (empty on public pages: no header nav).
	Email   string
	Version string
	Data    any
}

// render writes a page, or a 500 page if the template fails (rendered to
// a buffer first, so that a failure never leaves half a page).
func (p *Pages) render(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	v.Version = p.version
	var buf bytes.Buffer
	if err := p.execute(&buf, name, "", v); err != nil {
		p.Log.Error("web: render", "page", name, "err", err, "path", r.URL.Path)
		http.Error(w, "Internal server error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fragment writes the template tmpl of page name alone: a part of a page
// its script fetches again to show what changed.
func (p *Pages) fragment(w http.ResponseWriter, r *http.Request, name, tmpl string, data any) {
	var buf bytes.Buffer
	if err := p.execute(&buf, name, tmpl, data); err != nil {
		p.Log.Error("web: render", "page", name, "template", tmpl, "err", err, "path", r.URL.Path)
		http.Error(w, "Internal server error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// execute runs page name's template tmpl ("": the whole page) into buf.
func (p *Pages) execute(buf *bytes.Buffer, name, tmpl string, data any) error {
	pg, ok := p.pages[name]
	if !ok {
		return fmt.Errorf("web: no page %s", name)
	}
	t, err := pg.template()
	if err != nil {
		return err
	}
	if tmpl == "" {
		return t.Execute(buf, data)
	}
	return t.ExecuteTemplate(buf, tmpl, data)
}

// fail answers a domain error: a page that does not exist for the caller
// is the 404 page; anything else is logged and a 500 page, which never
// shows the cause.
func (p *Pages) fail(w http.ResponseWriter, r *http.Request, c *auth.Caller, err error) {
	if apperr.Is(err, apperr.NotFound) {
		p.render(w, r, http.StatusNotFound, "error.html", view{Title: notFound.Heading, Email: c.Email, Data: notFound})
		return
	}
	p.Log.Error("web: page", "path", r.URL.Path, "err", err)
	p.render(w, r, http.StatusInternalServerError, "error.html", view{Title: "Error", Email: c.Email,
		Data: errorPage{Heading: "Something went wrong", Message: "The page could not be shown. Try again in a moment."}})
}

type errorPage struct{ Heading, Message string }

// notFound is the page of whatever does not exist for the caller: a path
// no route has, or another user's thing, alike.
var notFound = errorPage{Heading: "Not found", Message: "There is nothing here, or it is not yours."}

// ErrorPage answers a browser's request the router refused, or one for a
// path no route has, with the error page: the status's name as heading,
// detail (the API's safe text) below it. The email is shown when a session
// cookie identified the browser (not for refusals made before that).
func (p *Pages) ErrorPage(w http.ResponseWriter, r *http.Request, status int, detail string) {
	secure(w)
	w.Header().Set("Cache-Control", "no-store")
	var email string
	if c, err := auth.Check(auth.IdentityFrom(r.Context()), auth.Page, r.Method); err == nil {
		email = c.Email
	}
	page := errorPage{Heading: http.StatusText(status), Message: detail}
	if status == http.StatusNotFound {
		page = notFound
	}
	if page.Heading == "" {
		page.Heading = "Error"
	}
	p.render(w, r, status, "error.html", view{Title: page.Heading, Email: email, Data: page})
}

func (p *Pages) login(w http.ResponseWriter, r *http.Request) {
	to := next(r)
	p.render(w, r, http.StatusOK, "login.html", view{Title: "Log in", Data: struct {
		Registered bool
		// Next is where the login leads: the form posts it, and the
		// page's script goes there after a JSON login.
		Next string
		// Register is the link to the register page, which carries Next on.
		Register string
	}{r.URL.Query().Has("registered"), to, withNext("/register", to, nil)}})
}

// register is the register page: it carries its ?next= on to the login
// page (the form posts it; the script and the links go there with it), so
// that a browser sent to log in without an account still ends on the page
// that sent it.
func (p *Pages) register(w http.ResponseWriter, r *http.Request) {
	to := next(r)
	p.render(w, r, http.StatusOK, "register.html", view{Title: "Create an account", Data: struct {
		// Next is posted with the form (the API's redirect carries it).
		Next string
		// Registered is where the page's script goes after a JSON
		// registration; Login is the page's link to the login.
		Registered, Login string
	}{to, withNext("/login", to, url.Values{"registered": {"1"}}), withNext("/login", to, nil)}})
}

type appsData struct {
	Apps  []store.App
	Total int
	// Imported is the app just imported (?imported=), for the notice.
	Imported *store.App
	// Example is where an empty list's offer of the example app fetches
	// its manifest.
	Example string
}

func (p *Pages) appsPage(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	list, total, err := p.Apps.Apps(r.Context(), c, listLimit, 0)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	d := appsData{Apps: list, Total: total, Example: examplePath}
	if id := r.URL.Query().Get("imported"); id != "" {
		// Best effort: a stale or foreign id just shows no notice.
		d.Imported, _ = p.Apps.OwnedApp(r.Context(), c, id)
	}
	p.render(w, r, http.StatusOK, "apps.html", view{Title: "Apps", Nav: "apps", Email: c.Email, Data: d})
}

type keysData struct {
	Keys   []store.APIKey
	Total  int
	Apps   []store.App
	Scopes []auth.Scope
	// Names maps app ids to names, for keys bound to an app.
	Names map[string]string
}

func (p *Pages) keys(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	keys, total, err := p.Auth.APIKeys(r.Context(), c, listLimit, 0)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	list, _, err := p.Apps.Apps(r.Context(), c, listLimit, 0)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	d := keysData{Keys: keys, Total: total, Apps: list, Names: map[string]string{}}
	for _, a := range list {
		d.Names[a.ID] = a.Name
	}
	for _, s := range auth.Scopes {
		// Only an admin may hand out the admin scope (auth.CreateAPIKey).
		if s != auth.ScopeAdmin || c.IsAdmin {
			d.Scopes = append(d.Scopes, s)
		}
	}
	p.render(w, r, http.StatusOK, "keys.html", view{Title: "API keys", Nav: "keys", Email: c.Email, Data: d})
}
