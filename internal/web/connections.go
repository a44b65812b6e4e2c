package web

import (
	"net/http"
	"net/url"

	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/credential"
	"github.com/agentplatform/agentplatform/internal/store"
)

// The connections page (/apps/{id}/connections): the app's authenticators
// and the user's account at each, with its health. Connecting is a link to
// the API's authorize route, which sends the browser to the provider; the
// callback sends it back here with ?connected=<name> or ?error=<code>
// &provider=<name>. Disconnecting is the API's DELETE, from connections.js.
// The page reads connections through the credential service's
// list_connections, which has no token field: a token cannot reach the
// page by mistake.

// account is an authenticator of the app and the user's connection to it.
// Only what a person needs of the authenticator is copied here, never its
// sealed client secret: only whether there is one (without it Connect is
// disabled, with the reason, and the card offers to set it).
type account struct {
	// ID is the authenticator's, for the form that sets its secret.
	ID, Name, Type string
	Scopes         []string
	HasSecret      bool
	Active         bool
	// Conn is the connection; nil when there is none.
	Conn *credential.Connection
	// Status is the connection's (connected, refresh_failing,
	// disconnected) or "none"; StatusText says it in words.
	Status, StatusText        string
	ConnectURL, DisconnectURL string
}

// connectionsData is the connections page.
type connectionsData struct {
	App      *store.App
	Accounts []account
	Total    int
	// Connected is the account a return from the provider connected (its
	// name, when it is one of this app's and connected now).
	Connected string
	// Failed is set when the provider's answer was an error: the
	// account's name ("" when ?provider= names none of this app's), the
	// error code and what it means.
	Failed                            bool
	FailedName, FailedCode, FailedWhy string
}

// statusText is a connection status in words.
var statusText = map[string]string{
	store.ConnConnected:      "connected",
	store.ConnRefreshFailing: "refresh failing",
	store.ConnDisconnected:   "disconnected",
	"none":                   "not connected",
}

// providerErrors explain the error codes the callback passes on.
var providerErrors = map[string]string{
	"access_denied":           "access was declined at the provider.",
	"token_exchange_failed":   "the provider did not accept the sign-in when the platform redeemed it. Check the authenticator's client secret and token URL.",
	"invalid_scope":           "the provider does not grant the scopes the authenticator asks for.",
	"server_error":            "the provider failed; try again later.",
	"temporarily_unavailable": "the provider is unavailable for now; try again later.",
}

func (p *Pages) connections(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	ctx := r.Context()
	app, err := p.Apps.OwnedApp(ctx, c, r.PathValue("app_id"))
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	auths, total, err := p.Authenticators.List(ctx, c, app.ID, listLimit, 0)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	conns, _, err := p.Credentials.List(ctx, c, app.ID, listLimit, 0)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	byAuth := map[string]*credential.Connection{}
	for i := range conns {
		byAuth[conns[i].AuthenticatorID] = &conns[i]
	}
	back := "/apps/" + app.ID + "/connections"
	d := connectionsData{App: app, Total: total}
	q := r.URL.Query()
	for _, a := range auths {
		base := "/api/v1/credentials/" + url.PathEscape(app.ID) + "/" + url.PathEscape(a.Name)
		acc := account{ID: a.ID, Name: a.Name, Type: a.AuthenticatorType, Scopes: a.Scopes, HasSecret: a.ClientSecretEnc != "",
			Active: a.IsActive, Conn: byAuth[a.ID], Status: "none",
			ConnectURL: base + "/authorize?return_to=" + url.QueryEscape(back), DisconnectURL: base}
		if acc.Conn != nil {
			acc.Status = acc.Conn.Status
		}
		acc.StatusText = statusText[acc.Status]
		if acc.StatusText == "" {
			acc.StatusText = acc.Status
		}
		// A notice only for what is true: ?connected= naming an account
		// of this app that is connected now (a crafted link shows none).
		if q.Get("connected") == a.Name && acc.Conn != nil && acc.Conn.IsConnected {
			d.Connected = a.Name
		}
		if q.Get("provider") == a.Name {
			d.FailedName = a.Name
		}
		d.Accounts = append(d.Accounts, acc)
	}
	if code := q.Get("error"); code != "" {
		// The callback passes on an error code only (letters and
		// underscores); anything else is shown as a provider error.
		d.Failed, d.FailedCode = true, code
		if !isErrorCode(code) {
			d.FailedCode = "provider_error"
		}
		d.FailedWhy = providerErrors[d.FailedCode]
		if d.FailedWhy == "" {
			d.FailedWhy = "the provider answered with an error."
		}
	}
	p.render(w, r, http.StatusOK, "connections.html", view{Title: "Connections · " + app.Name, Nav: "apps", Email: c.Email, Data: d})
}

func isErrorCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && r != '_' {
			return false
		}
	}
	return true
}
