package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/oauthtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/webtest"
)

// The platform's client at the in-test provider, as the example's
// authenticator helpdesk names it.
const (
	helpdeskClientID     = "support-desk-client"
	helpdeskClientSecret = "cs-plaintext-5b1e0d"
)

// startWithProvider runs a platform that may reach the in-test OAuth
// provider (egresstest's address), and the provider.
func startWithProvider(t testing.TB, d store.Dialect) (*webtest.Env, *oauthtest.Server) {
	t.Helper()
	p := oauthtest.New(t, oauthtest.Options{})
	env := webtest.Start(t, d, map[string]string{"AP_EGRESS_ALLOW": egresstest.Allow})
	p.AddClient(helpdeskClientID, helpdeskClientSecret, []string{env.URL + "/api/v1/oauth/callback"}, []string{"tickets.read", "tickets.write"})
	return env, p
}

// helpdeskManifest is the example manifest with its authenticator
// helpdesk pointed at the provider p.
func helpdeskManifest(t testing.TB, p *oauthtest.Server) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(exampleManifest(t)), &m))
	a := m["authenticators"].([]any)[0].(map[string]any)
	require.Equal(t, "helpdesk", a["name"])
	a["authorize_url"], a["token_url"], a["revoke_url"] = p.AuthorizeURL(), p.TokenURL(), p.RevokeURL()
	a["configuration"] = map[string]any{"pkce_enabled": true, "userinfo_url": p.UserinfoURL()}
	manifest, err := json.Marshal(m)
	require.NoError(t, err)
	return string(manifest)
}

// helpdeskApp imports helpdeskManifest for session and gives its
// authenticator its client secret. The app's id.
func helpdeskApp(t testing.TB, env *webtest.Env, session string, p *oauthtest.Server) string {
	t.Helper()
	r := call(t, env, "POST", "/api/v1/apps/import-manifest", "application/json", helpdeskManifest(t, p), "Authorization", "Bearer "+session)
	require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
	appID := decoded(t, r)["app_id"].(string)
	setHelpdeskSecret(t, env, session, appID)
	return appID
}

// setHelpdeskSecret gives the app's authenticator helpdesk the client
// secret a manifest cannot carry.
func setHelpdeskSecret(t testing.TB, env *webtest.Env, session, appID string) {
	t.Helper()
	bearer := []string{"Authorization", "Bearer " + session}
	list := decoded(t, call(t, env, "GET", "/api/v1/oauth/authenticators?app_id="+appID, "", "", bearer...))
	id := list["authenticators"].([]any)[0].(map[string]any)["id"].(string)
	r := call(t, env, "PATCH", "/api/v1/oauth/authenticators/"+id, "application/json", `{"client_secret": "`+helpdeskClientSecret+`"}`, bearer...)
	require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
}

// connectInBrowser clicks Connect for the account named name on the
// connections page, signs in at the provider p as subject (it has no
// login page: login_as), and waits for the way back to page.
func connectInBrowser(b *webtest.Browser, p *oauthtest.Server, page, name, subject string) {
	b.T.Helper()
	b.Click(`a[data-connect="` + name + `"]`)
	b.Until(`location.origin === "`+p.URL+`"`, "the provider's authorize page")
	authorize := webtest.Run(b, chromedp.Location())
	require.Contains(b.T, authorize, "code_challenge_method=S256")
	b.Do(chromedp.Navigate(authorize + "&login_as=" + subject))
	b.WaitPath(page + "?connected=" + name)
}

// TestBrowserConnections: in a real browser, on both databases, a user
// connects the example's helpdesk account at a real OAuth server (fosite):
// Connect leads to the provider, where the user signs in, and back to
// the page, which shows the account connected with its health and a
// notice; Disconnect revokes it at the provider and the page shows it not
// connected without a reload; a refusal at the provider comes back as an
// error notice naming the account.
func TestBrowserConnections(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		env, p := startWithProvider(t, d)
		session := signup(t, env, "alice@example.com")
		r := call(t, env, "POST", "/api/v1/apps/import-manifest", "application/json", helpdeskManifest(t, p), "Authorization", "Bearer "+session)
		require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
		appID := decoded(t, r)["app_id"].(string)
		page := "/apps/" + appID + "/connections"

		b := webtest.NewBrowser(t, env.URL, webtest.Options{Hosts: []string{egresstest.Addr}})
		logIn(b, "alice@example.com")
		b.Open("/apps/" + appID)
		b.Click(`nav.tabs a[href$="/connections"]`)
		b.WaitPath(page)
		card := b.WaitText(`[data-account="helpdesk"]`, "not connected")
		require.Contains(t, card, "custom")
		require.Contains(t, card, "tickets.read, tickets.write")
		// The manifest's authenticator has no client secret: Connect is
		// disabled, with the reason, until the card's form sets it.
		require.Contains(t, card, "client secret not set")
		require.Contains(t, card, "Set the client secret first")
		require.True(t, webtest.Eval[bool](b, `document.querySelector('[data-account="helpdesk"] button[data-connect-disabled]').disabled`))
		b.Fill(`[data-account="helpdesk"] input[name="client_secret"]`, helpdeskClientSecret)
		b.Click(`[data-account="helpdesk"] form[data-secret-form] button[type="submit"]`)
		b.WaitText("#connections-status", "Client secret of helpdesk set")
		card = b.WaitText(`[data-account="helpdesk"]`, "client secret set")
		require.NotContains(t, card, "Set the client secret first")
		require.Empty(t, webtest.Eval[string](b, `document.querySelector('[data-account="helpdesk"] input[name="client_secret"]').value`), "not kept in the page")
		require.False(t, webtest.Eval[bool](b, `!!document.querySelector("button[data-connect-disabled]")`))
		require.Equal(t, "none", webtest.Eval[string](b, `document.querySelector('[data-account="helpdesk"] [data-status]').dataset.status`))
		b.Shot("connections")

		// Connect: the platform sends the browser to the provider. It has
		// no login page: the user signs in by adding login_as.
		connectInBrowser(b, p, page, "helpdesk", "alice")
		b.WaitText(".notice", "Connected helpdesk")
		b.WaitText(`[data-account="helpdesk"] [data-status]`, "connected")
		require.Equal(t, "connected", webtest.Eval[string](b, `document.querySelector('[data-account="helpdesk"] [data-status]').dataset.status`))
		health := b.Text(`[data-account="helpdesk"] [data-health]`)
		for _, label := range []string{"Connected", "Last refreshed", "Next refresh", "Token expires", "Granted scopes"} {
			require.Contains(t, health, label)
		}
		require.Contains(t, health, "tickets.write")
		// The expiry is a <time> in the browser's time zone.
		b.Until(`(() => { const t = document.querySelector('[data-health] time'); return !!t && !t.innerText.includes("UTC"); })()`, "local times")
		require.Equal(t, int64(1), p.CodeExchanges())
		b.Shot("connections-connected")

		// Disconnect (two clicks): revoked at the provider, the card
		// updates in place.
		b.Click(`button[data-disconnect]`)
		b.WaitText(`button[data-disconnect]`, "Click again")
		b.Click(`button[data-disconnect]`)
		b.WaitText("#connections-status", "Disconnected helpdesk")
		b.WaitText(`[data-account="helpdesk"] [data-status]`, "not connected")
		require.False(t, webtest.Eval[bool](b, `!!document.querySelector("[data-health], button[data-disconnect]")`))
		require.False(t, webtest.Eval[bool](b, `document.querySelector(".notice[data-return-notice]").offsetParent !== null`), "the stale notice is gone")
		require.Equal(t, int64(1), p.Revocations())
		b.Shot("connections-disconnected")
		b.Open(page)
		b.WaitText(`[data-account="helpdesk"] [data-status]`, "not connected")

		// Refused at the provider: back with an error naming the account.
		b.Click(`a[data-connect="helpdesk"]`)
		b.Until(`location.origin === "`+p.URL+`"`, "the provider's authorize page")
		authorize := webtest.Run(b, chromedp.Location())
		b.Do(chromedp.Navigate(authorize + "&deny=1"))
		b.WaitPath(page + "?error=access_denied&provider=helpdesk")
		b.WaitText(".alert", "Could not connect helpdesk: access was declined")
		b.WaitText(`[data-account="helpdesk"] [data-status]`, "not connected")
		b.Shot("connections-refused")
	})
}

// connectOverHTTP runs the authorization flow as session's browser would,
// without one: the authorize route, the provider's consent as subject,
// the callback. The callback's redirect.
func connectOverHTTP(t testing.TB, env *webtest.Env, session, appID, subject string) string {
	t.Helper()
	back := "/apps/" + appID + "/connections"
	r := call(t, env, "GET", "/api/v1/credentials/"+appID+"/helpdesk/authorize?return_to="+url.QueryEscape(back), "", "", cookie(session)...)
	require.Equal(t, http.StatusFound, r.StatusCode, r.Body)
	client := webtest.Client()
	defer client.CloseIdleConnections()
	res, err := client.Get(r.Header.Get("Location") + "&login_as=" + subject)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	callback, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	r = call(t, env, "GET", callback.RequestURI(), "", "", cookie(session)...)
	require.Contains(t, []int{http.StatusFound, http.StatusSeeOther}, r.StatusCode, r.Body)
	return r.Header.Get("Location")
}

// TestConnectionsPage: the connections page's headers and isolation, its
// notices (only true ones), and no token in it: neither the access nor
// the refresh token of a live connection appears in the HTML.
func TestConnectionsPage(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		env, p := startWithProvider(t, d)
		ann := signup(t, env, "ann@example.com")
		bob := signup(t, env, "bob@example.com")
		appID := helpdeskApp(t, env, ann, p)
		page := "/apps/" + appID + "/connections"

		r := call(t, env, "GET", page, "", "", cookie(ann)...)
		expectPage(t, r, http.StatusOK)
		require.Contains(t, r.Body, "not connected")
		require.Contains(t, r.Body, `src="/static/connections.js?v=`)
		require.Contains(t, r.Body, `href="/api/v1/credentials/`+appID+`/helpdesk/authorize?return_to=%2Fapps%2F`+appID+`%2Fconnections"`)
		// A crafted link cannot make the page claim a connection, nor
		// put its words in the page.
		r = call(t, env, "GET", page+"?connected=helpdesk", "", "", cookie(ann)...)
		require.NotContains(t, r.Body, "Connected <strong>")
		r = call(t, env, "GET", page+"?error="+url.QueryEscape("<b>call-us-now</b>")+"&provider=evil", "", "", cookie(ann)...)
		expectPage(t, r, http.StatusOK)
		require.Contains(t, r.Body, "Could not connect the account")
		require.Contains(t, r.Body, "provider_error")
		require.NotContains(t, r.Body, "call-us-now")
		require.NotContains(t, r.Body, "evil")

		for _, path := range []string{page, page + "?connected=helpdesk"} {
			r := call(t, env, "GET", path, "", "", cookie(bob)...)
			expectPage(t, r, http.StatusNotFound)
			require.NotContains(t, r.Body, "Support Desk")
			require.NotContains(t, r.Body, "helpdesk")
			r = call(t, env, "GET", path, "", "")
			require.Equal(t, http.StatusSeeOther, r.StatusCode)
			require.Equal(t, loginFor(path), r.Header.Get("Location"))
		}

		require.Equal(t, page+"?connected=helpdesk", connectOverHTTP(t, env, ann, appID, "ann"))
		r = call(t, env, "GET", page+"?connected=helpdesk", "", "", cookie(ann)...)
		expectPage(t, r, http.StatusOK)
		require.Contains(t, r.Body, "Connected <strong>helpdesk</strong>")
		require.Contains(t, r.Body, `data-status="connected"`)
		require.Contains(t, r.Body, "Disconnect")

		// The tokens, as a key that may hold them sees them: not in the page.
		kr := call(t, env, "POST", "/api/v1/user/api-keys", "application/json", `{"name": "agent", "scopes": ["app:access"]}`,
			"Authorization", "Bearer "+ann)
		require.Equal(t, http.StatusCreated, kr.StatusCode, kr.Body)
		key := decoded(t, kr)["key"].(string)
		creds := decoded(t, call(t, env, "GET", "/api/v1/credentials/"+appID+"/helpdesk", "", "", "Authorization", "Bearer "+key))
		access, _ := creds["access_token"].(string)
		refresh, _ := creds["refresh_token"].(string)
		require.NotEmpty(t, access)
		require.NotEmpty(t, refresh)
		for _, secret := range []string{access, refresh, helpdeskClientSecret} {
			require.NotContains(t, r.Body, secret)
			// Nor a part of one (a prefix shown "for recognition").
			require.NotContains(t, r.Body, secret[:len(secret)/2])
		}
		require.False(t, strings.Contains(strings.ToLower(r.Body), "access_token"), "no token field either")

		// The provider down during a refresh: failing, with the error and
		// the retry, still usable.
		refreshPath := "/api/v1/credentials/" + appID + "/helpdesk/refresh"
		p.SetDown(true)
		rr := call(t, env, "POST", refreshPath, "", "", "Authorization", "Bearer "+ann)
		require.Equal(t, http.StatusBadGateway, rr.StatusCode, rr.Body)
		r = call(t, env, "GET", page, "", "", cookie(ann)...)
		expectPage(t, r, http.StatusOK)
		require.Contains(t, r.Body, `data-status="refresh_failing">refresh failing</span>`)
		require.Contains(t, r.Body, "The last refresh failed; it is tried again at <time")
		require.Contains(t, r.Body, "data-last-error>")
		// The grant revoked at the provider: disconnected, to connect again.
		p.SetDown(false)
		p.RevokeAllFor("ann")
		rr = call(t, env, "POST", refreshPath, "", "", "Authorization", "Bearer "+ann)
		require.Equal(t, http.StatusUnauthorized, rr.StatusCode, rr.Body)
		r = call(t, env, "GET", page, "", "", cookie(ann)...)
		expectPage(t, r, http.StatusOK)
		require.Contains(t, r.Body, `data-status="disconnected">disconnected</span>`)
		require.Contains(t, r.Body, "connect again")
		require.Contains(t, r.Body, "<span data-label>Reconnect</span>")
	})
}

// TestConnectionsClientSecret: on both databases, an authenticator
// without a client secret (a manifest's, until one is set) cannot be
// connected: its Connect is disabled with the reason, and no authorize
// link is on the page. The page's form sets the secret through the API
// with the session cookie (same origin; another site cannot); then
// Connect is a link, and the secret is never shown back.
func TestConnectionsClientSecret(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		env, p := startWithProvider(t, d)
		ann := signup(t, env, "ann@example.com")
		r := call(t, env, "POST", "/api/v1/apps/import-manifest", "application/json", helpdeskManifest(t, p), "Authorization", "Bearer "+ann)
		require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
		appID := decoded(t, r)["app_id"].(string)
		list := decoded(t, call(t, env, "GET", "/api/v1/oauth/authenticators?app_id="+appID, "", "", "Authorization", "Bearer "+ann))
		authID := list["authenticators"].([]any)[0].(map[string]any)["id"].(string)
		page := "/apps/" + appID + "/connections"
		authorize := `href="/api/v1/credentials/` + appID + `/helpdesk/authorize`

		r = call(t, env, "GET", page, "", "", cookie(ann)...)
		expectPage(t, r, http.StatusOK)
		require.Contains(t, r.Body, "client secret <strong data-secret-state>not set</strong>")
		require.NotContains(t, r.Body, authorize, "no way to connect")
		require.Contains(t, r.Body, `<button type="button" disabled aria-describedby="secret-reason-`+authID+`" data-connect-disabled="helpdesk" data-connect-url=`)
		require.Contains(t, r.Body, `id="secret-reason-`+authID+`"`)
		require.Contains(t, r.Body, "Set the client secret first")
		require.Contains(t, r.Body, `<form class="secret" data-secret-form data-url="/api/v1/oauth/authenticators/`+authID+`"`)
		require.Contains(t, r.Body, `<input id="secret-`+authID+`" name="client_secret" type="password" autocomplete="off"`)

		// The form's call: PATCH with the cookie, as the page's script
		// sends it. From another site it is refused.
		body := `{"client_secret": "` + helpdeskClientSecret + `"}`
		cross := append(cookie(ann), "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
		r = call(t, env, "PATCH", "/api/v1/oauth/authenticators/"+authID, "application/json", body, cross...)
		require.Equal(t, http.StatusForbidden, r.StatusCode, r.Body)
		same := append(cookie(ann), "Sec-Fetch-Site", "same-origin", "Origin", env.URL, "Accept", "application/json")
		r = call(t, env, "PATCH", "/api/v1/oauth/authenticators/"+authID, "application/json", body, same...)
		require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
		require.Equal(t, true, decoded(t, r)["has_client_secret"])
		require.NotContains(t, r.Body, helpdeskClientSecret)

		r = call(t, env, "GET", page, "", "", cookie(ann)...)
		expectPage(t, r, http.StatusOK)
		require.Contains(t, r.Body, "client secret <strong data-secret-state>set</strong>")
		require.Contains(t, r.Body, authorize)
		require.NotContains(t, r.Body, "data-connect-disabled")
		require.NotContains(t, r.Body, "Set the client secret first")
		require.Contains(t, r.Body, "Replace the client secret", "the secret can be changed")
		require.NotContains(t, r.Body, helpdeskClientSecret)
		require.NotContains(t, r.Body, helpdeskClientSecret[:len(helpdeskClientSecret)/2])
		// And the account connects.
		require.Equal(t, page+"?connected=helpdesk", connectOverHTTP(t, env, ann, appID, "ann"))
	})
}
