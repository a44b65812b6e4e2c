package api_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/credential"
	"github.com/agentplatform/agentplatform/internal/oauthtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// oauthClient is the platform's client registration at the test provider.
const (
	oauthClientID     = "platform-client"
	oauthClientSecret = "cs-plaintext-7f3a9c"
)

// oauthApp imports an app whose authenticator "crm" is a custom provider:
// the real fosite server p, with PKCE and its user info endpoint. It
// answers the app's id.
func (e *env) oauthApp(session string, p *oauthtest.Server, slug string) string {
	e.t.Helper()
	p.AddClient(oauthClientID, oauthClientSecret, []string{e.srv.Config.PublicURL + "/api/v1/oauth/callback"}, []string{"read", "write"})
	m := map[string]any{"name": "CRM " + slug, "slug": slug, "version": "1.0.0", "authenticators": []any{map[string]any{
		"name": "crm", "authenticator_type": "custom", "client_id": oauthClientID, "scopes": []string{"read", "write"},
		"authorize_url": p.AuthorizeURL(), "token_url": p.TokenURL(), "revoke_url": p.RevokeURL(),
		"configuration": map[string]any{"pkce_enabled": true, "userinfo_url": p.UserinfoURL()},
	}}}
	appID := e.importManifest(session, m).expect(e.t, 201).str("app_id")
	e.setClientSecret(session, appID, "crm", oauthClientSecret)
	return appID
}

// crmApp is alice's app whose authenticator "crm" is a real provider
// (oauthApp), on a running platform: the setting of the credential tests.
type crmApp struct {
	p            *oauthtest.Server
	e            *env
	alice, appID string
	// base is the path of alice's connection's credential routes.
	base string
}

func newCRMApp(t testing.TB, d store.Dialect, opts oauthtest.Options, vars map[string]string) crmApp {
	t.Helper()
	p := oauthtest.New(t, opts)
	e := newEnv(t, d, vars)
	alice := e.signup("alice@example.com")
	appID := e.oauthApp(alice, p, "crm-app")
	return crmApp{p: p, e: e, alice: alice, appID: appID, base: "/api/v1/credentials/" + appID + "/crm"}
}

// setClientSecret supplies the secret a manifest cannot carry.
func (e *env) setClientSecret(session, appID, name, secret string) {
	e.t.Helper()
	for _, a := range list(e.do("GET", "/api/v1/oauth/authenticators?app_id="+appID, nil, bearer(session)).expect(e.t, 200), "authenticators") {
		if a["name"] == name {
			r := e.do("PATCH", "/api/v1/oauth/authenticators/"+a["id"].(string), map[string]any{"client_secret": secret}, bearer(session))
			require.Equal(e.t, true, r.expect(e.t, 200).JSON["has_client_secret"])
			return
		}
	}
	e.t.Fatalf("no authenticator %q", name)
}

// connect runs the authorization flow as user subject's browser would,
// logged in here with session: it answers the callback's redirect.
func (e *env) connect(session, appID string, p *oauthtest.Server, subject, returnTo string) *resp {
	e.t.Helper()
	r := e.do("GET", "/api/v1/credentials/"+appID+"/crm/authorize?return_to="+url.QueryEscape(returnTo), nil, cookie(session)).expect(e.t, 302)
	code, state := e.consent(r.Header.Get("Location"), subject)
	return e.do("GET", "/api/v1/oauth/callback?code="+url.QueryEscape(code)+"&state="+url.QueryEscape(state), nil, cookie(session))
}

// consent is the user granting access at the provider: its answer's code
// and state.
func (e *env) consent(authURL, subject string) (code, state string) {
	e.t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer client.CloseIdleConnections()
	res, err := client.Get(authURL + "&login_as=" + subject)
	require.NoError(e.t, err)
	res.Body.Close()
	require.Equal(e.t, http.StatusSeeOther, res.StatusCode)
	loc, err := url.Parse(res.Header.Get("Location"))
	require.NoError(e.t, err)
	require.NotEmpty(e.t, loc.Query().Get("code"), "provider answer: %s", loc)
	return loc.Query().Get("code"), loc.Query().Get("state")
}

// expireLocally makes the platform see the connection's access token as
// expired (the provider's is still valid: only a refresh tells them
// apart), so tests need not wait out a lifespan.
func (e *env) expireLocally(appID string) {
	e.t.Helper()
	past := time.Now().Add(-time.Minute).UTC()
	v := any(past)
	if e.srv.Store.Dialect() == store.SQLite {
		v = past.Format("2006-01-02T15:04:05.000000Z")
	}
	_, err := e.srv.Store.DB().Exec(`UPDATE connections SET expires_at = $1 WHERE app_id = $2`, v, appID)
	require.NoError(e.t, err)
}

func TestCredentialFlow(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		fx := newCRMApp(t, d, oauthtest.Options{}, nil)
		p, e, alice, appID, base := fx.p, fx.e, fx.alice, fx.appID, fx.base
		bob := e.signup("bob@example.com")

		// Not connected yet.
		e.do("GET", base, nil, bearer(alice)).expectError(t, 404, "CredentialNotFoundError", `No connection to "crm"`)
		e.do("GET", base+"/connected", nil, bearer(alice)).expect(t, 200)
		e.do("GET", "/api/v1/credentials/"+appID+"/nope", nil, bearer(alice)).expectError(t, 400, "ProviderNotSupportedError", "no authenticator named")

		// The authorization URL: state and a PKCE S256 challenge.
		u := e.do("GET", base+"/auth-url?return_to=/apps/"+appID+"/connections", nil, bearer(alice)).expect(t, 200).str("url")
		require.True(t, strings.HasPrefix(u, p.AuthorizeURL()+"?"), u)
		q, err := url.Parse(u)
		require.NoError(t, err)
		require.Equal(t, "S256", q.Query().Get("code_challenge_method"))
		require.NotEmpty(t, q.Query().Get("code_challenge"))
		require.GreaterOrEqual(t, len(q.Query().Get("state")), 26)
		require.Equal(t, "read write", q.Query().Get("scope"))
		code, state := e.consent(u, "alice")
		callback := "/api/v1/oauth/callback?code=" + url.QueryEscape(code) + "&state=" + url.QueryEscape(state)

		// Only alice's browser may complete it: not a key, not bob.
		e.do("GET", callback, nil).expectError(t, 403, "PermissionError", "browser logged in as the user who started it")
		e.do("GET", callback, nil, cookie(bob)).expectError(t, 403, "PermissionError", "browser logged in")
		e.do("GET", callback, nil, bearer(e.keyWith(alice, "admin"))).expect(t, 403)
		r := e.do("GET", callback, nil, cookie(alice)).expect(t, 303)
		require.Equal(t, "/apps/"+appID+"/connections?connected=crm", r.Header.Get("Location"))
		require.EqualValues(t, 1, p.CodeExchanges())
		// Single use: a replay stores nothing more.
		e.do("GET", callback, nil, cookie(alice)).expectError(t, 400, "ValidationError", "already used state")
		require.EqualValues(t, 1, p.CodeExchanges())

		// Health and the connection's shape.
		conns := list(e.do("GET", "/api/v1/credentials?app_id="+appID, nil, bearer(alice)).expect(t, 200), "connections")
		require.Len(t, conns, 1)
		require.Equal(t, "crm", conns[0]["name"])
		require.Equal(t, "connected", conns[0]["status"])
		require.Equal(t, true, conns[0]["is_connected"])
		require.Equal(t, []any{"read", "write"}, conns[0]["scopes"])
		require.NotEmpty(t, conns[0]["next_refresh_at"])
		require.Empty(t, list(e.do("GET", "/api/v1/credentials", nil, bearer(bob)).expect(t, 200), "connections"))
		require.Equal(t, true, e.do("GET", base+"/connected", nil, bearer(alice)).expect(t, 200).JSON["is_connected"])

		// Tokens reach admin and app:access keys only, never a session
		// or a read/write key.
		for _, who := range []string{alice, e.keyWith(alice, "read:all"), e.keyWith(alice, "write:all")} {
			c := e.do("GET", base, nil, bearer(who)).expect(t, 200)
			require.NotContains(t, c.JSON, "access_token")
			require.NotContains(t, c.JSON, "refresh_token")
			require.Equal(t, "Bearer", c.str("token_type"))
			require.Equal(t, "crm", c.str("provider"))
		}
		appKey := e.keyWith(alice, "app:access")
		c := e.do("GET", base, nil, bearer(appKey)).expect(t, 200)
		require.NotEmpty(t, c.str("access_token"))
		require.NotEmpty(t, c.str("refresh_token"))
		adminToken := e.do("GET", base, nil, bearer(e.keyWith(alice, "admin"))).expect(t, 200).str("access_token")
		require.Equal(t, c.str("access_token"), adminToken)
		e.do("GET", base+"?required_scopes=read,admin", nil, bearer(appKey)).expectError(t, 403, "InvalidScopeError", "[admin]")

		v := e.do("POST", base+"/validate-scopes", map[string]any{"required_scopes": []string{"read", "admin"}}, bearer(appKey)).expect(t, 200)
		require.Equal(t, false, v.JSON["valid"])
		require.Equal(t, []any{"admin"}, v.JSON["missing"])
		info := e.do("GET", base+"/token-info", nil, bearer(alice)).expect(t, 200)
		require.Equal(t, false, info.JSON["is_expired"])
		require.Equal(t, false, info.JSON["needs_refresh"])
		require.NotContains(t, string(info.Body), c.str("access_token"))
		ui := e.do("GET", base+"/user-info", nil, bearer(alice)).expect(t, 200)
		require.Equal(t, "alice@example.test", ui.str("email"))
		require.Equal(t, "alice", ui.str("provider_user_id"))
		require.Equal(t, true, ui.JSON["verified"])

		// Another user, another user's app: absent.
		e.do("GET", base, nil, bearer(bob)).expectError(t, 404, "NotFoundError", "App not found")
		e.do("GET", base+"/auth-url", nil, bearer(bob)).expect(t, 404)
		e.do("DELETE", base, nil, bearer(bob)).expect(t, 404)

		// A forced refresh rotates the tokens at the provider.
		require.Equal(t, true, e.do("POST", base+"/refresh", nil, bearer(appKey)).expect(t, 200).JSON["refreshed"])
		require.EqualValues(t, 1, p.Refreshes())
		c2 := e.do("GET", base, nil, bearer(appKey)).expect(t, 200)
		require.NotEqual(t, c.str("access_token"), c2.str("access_token"))
		require.NotEqual(t, c.str("refresh_token"), c2.str("refresh_token"))

		// Revoke: the provider is told, the connection is gone.
		require.Equal(t, true, e.do("DELETE", base, nil, bearer(alice)).expect(t, 200).JSON["revoked"])
		require.EqualValues(t, 1, p.Revocations())
		require.Equal(t, false, e.do("DELETE", base, nil, bearer(alice)).expect(t, 200).JSON["revoked"])
		require.Equal(t, false, e.do("GET", base+"/connected", nil, bearer(alice)).expect(t, 200).JSON["is_connected"])
		e.do("GET", base, nil, bearer(appKey)).expectError(t, 404, "CredentialNotFoundError", "connect an account first")

		// Deleting the authenticator revokes its connections first.
		e.connect(alice, appID, p, "alice", "/").expect(t, 303)
		authID := list(e.do("GET", "/api/v1/oauth/authenticators?app_id="+appID, nil, bearer(alice)).expect(t, 200), "authenticators")[0]["id"].(string)
		e.do("DELETE", "/api/v1/oauth/authenticators/"+authID, nil, bearer(alice)).expect(t, 204)
		require.EqualValues(t, 2, p.Revocations())
		require.Empty(t, list(e.do("GET", "/api/v1/credentials", nil, bearer(alice)).expect(t, 200), "connections"))

		// Nothing secret in plaintext: not in the database, not in the logs,
		// and neither is an LLM provider's API key.
		const providerKey = "sk-plaintext-5e1d0c"
		e.do("POST", "/api/v1/llm-providers", map[string]any{"name": "mine", "provider_type": "openai",
			"base_url": "https://llm.example.com/v1", "api_key": providerKey}, bearer(alice)).expect(t, 201)
		secrets := []string{c.str("access_token"), c.str("refresh_token"), c2.str("access_token"), c2.str("refresh_token"),
			oauthClientSecret, providerKey}
		for _, s := range secrets {
			require.NotContains(t, e.logs.String(), s)
		}
		requireNoPlaintext(t, e, secrets)
	})
}

// requireNoPlaintext checks the database holds none of secrets as such:
// the SQLite files (database, WAL) byte for byte, PostgreSQL's tables as text.
func requireNoPlaintext(t *testing.T, e *env, secrets []string) {
	t.Helper()
	if e.srv.Store.Dialect() == store.SQLite {
		files, err := filepath.Glob(strings.TrimPrefix(e.srv.Config.DatabaseDSN(), "sqlite:") + "*")
		require.NoError(t, err)
		require.NotEmpty(t, files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, s := range secrets {
				require.NotContains(t, string(b), s, "%s holds a secret in plaintext", filepath.Base(f))
			}
		}
		return
	}
	for _, table := range []string{"authenticators", "connections", "oauth_states", "events", "llm_providers"} {
		rows, err := e.srv.Store.DB().Query(`SELECT row_to_json(t)::text FROM ` + table + ` t`)
		require.NoError(t, err)
		for rows.Next() {
			var row string
			require.NoError(t, rows.Scan(&row))
			for _, s := range secrets {
				require.NotContains(t, row, s, "%s holds a secret in plaintext", table)
			}
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
}

func TestCredentialFlowRefusals(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		fx := newCRMApp(t, d, oauthtest.Options{}, nil)
		p, e, alice, appID, base := fx.p, fx.e, fx.alice, fx.appID, fx.base
		connections := func() int {
			return len(list(e.do("GET", "/api/v1/credentials", nil, bearer(alice)).expect(t, 200), "connections"))
		}

		// Open redirects are refused when the flow starts.
		for _, bad := range []string{"https://evil.example/x", "//evil.example/x", "/\\evil.example", "http://127.0.0.1:9/x", "javascript:alert(1)"} {
			e.do("GET", base+"/authorize?return_to="+url.QueryEscape(bad), nil, cookie(alice)).expectError(t, 400, "ValidationError", "return_to")
		}
		e.do("GET", base+"/auth-url?return_to="+url.QueryEscape(e.srv.Config.PublicURL+"/apps"), nil, cookie(alice)).expect(t, 200)

		// A tampered state, an unknown one, none.
		u := e.do("GET", base+"/auth-url", nil, cookie(alice)).expect(t, 200).str("url")
		code, state := e.consent(u, "alice")
		e.do("GET", "/api/v1/oauth/callback?code="+code+"&state="+state+"x", nil, cookie(alice)).expectError(t, 400, "ValidationError", "state")
		e.do("GET", "/api/v1/oauth/callback?code="+code, nil, cookie(alice)).expectError(t, 400, "ValidationError", "state")
		require.Zero(t, connections())

		// An expired state.
		_, err := e.srv.Store.DB().Exec(`UPDATE oauth_states SET expires_at = created_at`)
		require.NoError(t, err)
		e.do("GET", "/api/v1/oauth/callback?code="+code+"&state="+state, nil, cookie(alice)).expectError(t, 400, "ValidationError", "expired")
		require.Zero(t, connections())
		require.Zero(t, p.CodeExchanges())

		// The provider's refusal goes back to return_to as ?error=.
		u = e.do("GET", base+"/auth-url?return_to=/back", nil, cookie(alice)).expect(t, 200).str("url")
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		defer client.CloseIdleConnections()
		res, err := client.Get(u + "&deny=1")
		require.NoError(t, err)
		res.Body.Close()
		loc, err := url.Parse(res.Header.Get("Location"))
		require.NoError(t, err)
		r := e.do("GET", "/api/v1/oauth/callback?"+loc.RawQuery, nil, cookie(alice)).expect(t, 303)
		require.Equal(t, "/back?error=access_denied&provider=crm", r.Header.Get("Location"))
		require.Zero(t, connections())

		// A code exchanged with a wrong PKCE verifier fails: the state's
		// verifier is the one the challenge was made from.
		u = e.do("GET", base+"/auth-url", nil, cookie(alice)).expect(t, 200).str("url")
		code, state = e.consent(u, "alice")
		_, err = e.srv.Store.DB().Exec(`UPDATE oauth_states SET verifier_enc = (SELECT verifier_enc FROM oauth_states ORDER BY created_at LIMIT 1)`)
		require.NoError(t, err)
		r = e.do("GET", "/api/v1/oauth/callback?code="+code+"&state="+state, nil, cookie(alice)).expect(t, 303)
		require.Contains(t, r.Header.Get("Location"), "error=token_exchange_failed")
		require.Zero(t, connections())

		// And the honest flow still works.
		e.connect(alice, appID, p, "alice", "/done").expect(t, 303)
		require.Equal(t, 1, connections())
	})
}

// sameToken makes n concurrent get_credentials calls (get(i) makes call
// i) while the provider answers slowly, and answers the one token they
// all got.
func sameToken(t *testing.T, p *oauthtest.Server, n int, get func(i int) string) string {
	t.Helper()
	p.SetTokenDelay(250 * time.Millisecond)
	defer p.SetTokenDelay(0)
	var wg sync.WaitGroup
	tokens := make([]string, n)
	for i := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tokens[i] = get(i)
		}()
	}
	wg.Wait()
	for _, tok := range tokens {
		require.Equal(t, tokens[0], tok)
	}
	return tokens[0]
}

func TestCredentialRefreshSingleFlight(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		fx := newCRMApp(t, d, oauthtest.Options{}, nil)
		p, e, alice, appID, base := fx.p, fx.e, fx.alice, fx.appID, fx.base
		e.connect(alice, appID, p, "alice", "/").expect(t, 303)
		key := e.keyWith(alice, "app:access")
		old := e.do("GET", base, nil, bearer(key)).expect(t, 200).str("access_token")

		// 50 concurrent calls find the token expired: one refresh reaches
		// the provider (a second would reuse a rotated refresh token,
		// which kills the grant), and all get its new token.
		e.expireLocally(appID)
		token := sameToken(t, p, 50, func(int) string { return e.do("GET", base, nil, bearer(key)).expect(t, 200).str("access_token") })
		require.EqualValues(t, 1, p.Refreshes())
		require.NotEqual(t, old, token)
		// The new token works at the provider.
		e.do("GET", base+"/user-info", nil, bearer(key)).expect(t, 200)
	})
}

func TestCredentialRefreshFailures(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		fx := newCRMApp(t, d, oauthtest.Options{}, nil)
		p, e, alice, appID, base := fx.p, fx.e, fx.alice, fx.appID, fx.base
		socket, _ := e.socket("app_id="+appID, http.Header{"Authorization": {"Bearer " + alice}})
		e.connect(alice, appID, p, "alice", "/").expect(t, 303)
		ev := readEvent(t, socket)
		require.Equal(t, "credential_status_changed", ev["type"])
		require.Equal(t, "connected", ev["status"])
		require.Equal(t, "crm", ev["context"].(map[string]any)["provider"])
		key := e.keyWith(alice, "app:access")
		health := func() map[string]any {
			return list(e.do("GET", "/api/v1/credentials?app_id="+appID, nil, bearer(alice)).expect(t, 200), "connections")[0]
		}

		// The provider is down: the expired token cannot be had, and the
		// connection shows why and when it is tried again.
		p.SetDown(true)
		e.expireLocally(appID)
		e.do("GET", base, nil, bearer(key)).expectError(t, 401, "TokenExpiredError", "could not be refreshed")
		h := health()
		require.Equal(t, "refresh_failing", h["status"])
		require.Contains(t, h["last_error"], "503")
		next, err := time.Parse(time.RFC3339Nano, h["next_refresh_at"].(string))
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(time.Minute), next, 10*time.Second, "the first retry is a minute later")
		ev = readEvent(t, socket)
		require.Equal(t, "credential_status_changed", ev["type"])
		require.Equal(t, "refresh_failing", ev["status"])
		e.do("POST", base+"/refresh", nil, bearer(key)).expectError(t, 502, "AuthenticationFailedError", "503")
		h = health()
		next2, err := time.Parse(time.RFC3339Nano, h["next_refresh_at"].(string))
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(2*time.Minute), next2, 10*time.Second, "then two minutes")

		// It recovers.
		p.SetDown(false)
		require.Equal(t, true, e.do("POST", base+"/refresh", nil, bearer(key)).expect(t, 200).JSON["refreshed"])
		h = health()
		require.Equal(t, "connected", h["status"])
		require.Empty(t, h["last_error"])
		ev = readEvent(t, socket)
		require.Equal(t, "connected", ev["status"])
		e.do("GET", base, nil, bearer(key)).expect(t, 200)

		// invalid_grant: the connection is lost, and says so.
		p.RevokeAllFor("alice")
		e.expireLocally(appID)
		e.do("GET", base, nil, bearer(key)).expectError(t, 401, "TokenExpiredError", "must connect again")
		h = health()
		require.Equal(t, "disconnected", h["status"])
		require.Equal(t, false, h["is_connected"])
		require.Contains(t, h["last_error"], "invalid_grant")
		require.Nil(t, h["next_refresh_at"])
		ev = readEvent(t, socket)
		require.Equal(t, "credential_status_changed", ev["type"])
		require.Equal(t, "disconnected", ev["status"])
		ev = readEvent(t, socket)
		require.Equal(t, "credential_disconnected", ev["type"])
		require.Contains(t, ev["error"], "invalid_grant")

		// Connecting again heals it.
		e.connect(alice, appID, p, "alice", "/").expect(t, 303)
		require.Equal(t, "connected", health()["status"])
		e.do("GET", base, nil, bearer(key)).expect(t, 200)
	})
}

func TestCredentialBackgroundRefresh(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		fx := newCRMApp(t, d, oauthtest.Options{AccessTokenLifespan: 4 * time.Second}, map[string]string{"AP_CREDENTIAL_SCAN_INTERVAL": "200ms"})
		p, e, alice, appID := fx.p, fx.e, fx.alice, fx.appID
		e.connect(alice, appID, p, "alice", "/").expect(t, 303)
		key := e.keyWith(alice, "app:access")
		first := e.do("GET", "/api/v1/credentials/"+appID+"/crm", nil, bearer(key)).expect(t, 200).str("access_token")

		// Tokens that live 4 s are renewed halfway, by the refresher alone.
		deadline := time.Now().Add(20 * time.Second)
		for p.Refreshes() < 2 {
			require.True(t, time.Now().Before(deadline), "the refresher did not renew the tokens twice")
			time.Sleep(50 * time.Millisecond)
		}
		c := e.do("GET", "/api/v1/credentials/"+appID+"/crm", nil, bearer(key)).expect(t, 200)
		require.NotEqual(t, first, c.str("access_token"))
		h := list(e.do("GET", "/api/v1/credentials?app_id="+appID, nil, bearer(alice)).expect(t, 200), "connections")[0]
		require.Equal(t, "connected", h["status"])
		require.NotNil(t, h["last_refreshed"])
		e.do("GET", "/api/v1/credentials/"+appID+"/crm/user-info", nil, bearer(key)).expect(t, 200)
	})
}

// TestExampleUsesTheConnectedAccount: the example's custom agent reads the
// helpdesk account the user connected through ctx.credentials, says when
// there is none or it needs reconnecting; a webhook agent's key reaches
// the same credentials over HTTP.
func TestExampleUsesTheConnectedAccount(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		p := oauthtest.New(t, oauthtest.Options{})
		e := newEnv(t, d, nil)
		p.AddClient("support-desk-client", oauthClientSecret, []string{e.srv.Config.PublicURL + "/api/v1/oauth/callback"},
			[]string{"tickets.read", "tickets.write"})
		alice := e.signup("alice@example.com")
		appID := e.importManifest(alice, exampleManifest(t)).expect(t, 201).str("app_id")
		helpdesk := list(e.do("GET", "/api/v1/apps/"+appID+"/service-providers", nil, bearer(alice)).expect(t, 200), "authenticators")[0]
		// The example's provider is helpdesk.example.com; here it is the
		// test's own.
		e.do("PATCH", "/api/v1/oauth/authenticators/"+helpdesk["id"].(string), map[string]any{"client_secret": oauthClientSecret,
			"authorize_url": p.AuthorizeURL(), "token_url": p.TokenURL(), "revoke_url": p.RevokeURL(),
			"configuration": map[string]any{"userinfo_url": p.UserinfoURL(), "pkce_enabled": true}}, bearer(alice)).expect(t, 200)
		var router string
		for _, a := range list(e.do("GET", "/api/v1/apps/"+appID+"/agents", nil, bearer(alice)).expect(t, 200), "agents") {
			if a["name"] == "escalation-router" {
				router = a["agent_id"].(string)
			}
		}
		route := func() map[string]any {
			id := e.do("POST", "/api/v1/agents/"+router+"/activate", map[string]any{"input_data": map[string]any{
				"subject": "Login broken", "body": "An error on login.", "customer_email": "grace@example.com"}}, bearer(alice)).expect(t, 201).str("activation_id")
			done := e.await(alice, id)
			require.Equal(t, "completed", done.str("status"), done.str("error"))
			return done.JSON["output_data"].(map[string]any)["helpdesk"].(map[string]any)
		}
		require.Equal(t, map[string]any{"status": "not connected"}, route())

		r := e.do("GET", "/api/v1/credentials/"+appID+"/helpdesk/authorize?return_to=/apps/"+appID, nil, cookie(alice)).expect(t, 302)
		code, state := e.consent(r.Header.Get("Location"), "alice")
		e.do("GET", "/api/v1/oauth/callback?code="+url.QueryEscape(code)+"&state="+url.QueryEscape(state), nil, cookie(alice)).expect(t, 303)
		got := route()
		require.Equal(t, "connected", got["status"])
		require.Equal(t, "alice@example.test", got["account"])
		require.NotEmpty(t, got["token_expires_at"])

		// A webhook agent's key reaches the credentials of its app.
		rc := newAgentReceiver(t, e)
		hook := rc.webhookAgent(t, alice, appID, "hook", "run", 30)
		calls := []string{"/api/v1/credentials/" + appID + "/helpdesk", "/api/v1/credentials/" + appID + "/helpdesk/token-info"}
		id := e.do("POST", "/api/v1/agents/"+hook+"/activate", map[string]any{"input_data": map[string]any{"calls": calls}},
			bearer(alice)).expect(t, 201).str("activation_id")
		done := e.await(alice, id)
		require.Equal(t, []any{200.0, 200.0}, done.JSON["output_data"].(map[string]any)["statuses"])

		// The provider revokes the grant: the next refresh fails for
		// good, and the agent asks for a reconnection.
		p.RevokeAllFor("alice")
		e.expireLocally(appID)
		got = route()
		require.Equal(t, "reconnect needed", got["status"])
		require.Contains(t, got["reason"], "must connect again")
	})
}

// TestCredentialScanKeepsOneJobPerConnection: paced refresh jobs may wait
// longer than a scan's claim lasts; a connection claimed again meanwhile
// gets no second job.
func TestCredentialScanKeepsOneJobPerConnection(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		fx := newCRMApp(t, d, oauthtest.Options{}, map[string]string{"AP_CREDENTIAL_SCAN_INTERVAL": "1m"})
		p, e, alice, appID := fx.p, fx.e, fx.alice, fx.appID
		e.connect(alice, appID, p, "alice", "/").expect(t, 303)
		ctx := t.Context()
		require.NoError(t, e.srv.Queue.Client().QueuePause(ctx, credential.Queue, nil))
		past := time.Now().Add(-time.Minute).UTC()
		v := any(past)
		if d == store.SQLite {
			v = past.Format("2006-01-02T15:04:05.000000Z")
		}
		for range 2 {
			_, err := e.srv.Store.DB().Exec(`UPDATE connections SET next_refresh_at = $1`, v)
			require.NoError(t, err)
			n, err := e.srv.Credentials.Scan(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, n, "the scan claims the connection")
		}
		var jobs int
		require.NoError(t, e.srv.Store.DB().QueryRow(`SELECT count(*) FROM river_job WHERE kind = 'credential_refresh'`).Scan(&jobs))
		require.Equal(t, 1, jobs)
	})
}

// TestConnectNeedsClientSecret: while an authenticator has no client
// secret, the flow does not start (no redirect to the provider, no state
// issued): 409 naming client_secret, from the API as from the web page;
// once the secret is set, it starts.
func TestConnectNeedsClientSecret(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		p := oauthtest.New(t, oauthtest.Options{})
		e := newEnv(t, d, nil)
		alice := e.signup("alice@example.com")
		p.AddClient(oauthClientID, oauthClientSecret, []string{e.srv.Config.PublicURL + "/api/v1/oauth/callback"}, []string{"read"})
		m := map[string]any{"name": "CRM", "slug": "crm-nosecret", "version": "1.0.0", "authenticators": []any{map[string]any{
			"name": "crm", "authenticator_type": "custom", "client_id": oauthClientID, "scopes": []string{"read"},
			"authorize_url": p.AuthorizeURL(), "token_url": p.TokenURL(),
		}}}
		appID := e.importManifest(alice, m).expect(t, 201).str("app_id")
		base := "/api/v1/credentials/" + appID + "/crm"

		for _, route := range []string{"/authorize?return_to=/apps", "/auth-url"} {
			r := e.do("GET", base+route, nil, cookie(alice)).expectError(t, http.StatusConflict, "ConflictError", "client_secret")
			require.Empty(t, r.Header.Get("Location"), route)
		}
		var states int
		require.NoError(t, e.srv.Store.DB().QueryRow(`SELECT COUNT(*) FROM oauth_states`).Scan(&states))
		require.Zero(t, states, "no flow was started")

		e.setClientSecret(alice, appID, "crm", oauthClientSecret)
		e.do("GET", base+"/authorize?return_to=/apps", nil, cookie(alice)).expect(t, http.StatusFound)
	})
}
