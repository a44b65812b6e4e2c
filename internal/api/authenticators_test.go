package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// customAuthenticator is a valid create body that cases change.
func customAuthenticator(name string) map[string]any {
	return map[string]any{"name": name, "authenticator_type": "custom", "client_id": "crm-client", "client_secret": "cs-" + name,
		"scopes": []any{"contacts.read", "contacts.write"}, "authorize_url": "https://crm.example.com/oauth/authorize",
		"token_url": "https://crm.example.com/oauth/token"}
}

func authenticatorsPath(appID string) string { return "/api/v1/oauth/authenticators/" + appID }

// requireNoSecret: an answer never carries a client secret, sealed or not
// (has_client_secret aside).
func requireNoSecret(t *testing.T, r *resp, secrets ...string) {
	t.Helper()
	require.NotContains(t, string(r.Body), `"client_secret"`)
	require.NotContains(t, string(r.Body), "client_secret_enc")
	require.NotContains(t, string(r.Body), `"v1:`, "no sealed value")
	for _, s := range secrets {
		require.NotContains(t, string(r.Body), s)
	}
}

// TestAuthenticatorValidation: every rule of the spec and DESIGN, each
// failure a 400 naming the field; the egress guard's outside world is
// allowed.
func TestAuthenticatorValidation(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("authn@example.com")
		app := e.newApp(tok, "crm")
		scopes := func(n int) []any {
			out := make([]any, n)
			for i := range out {
				out[i] = "s" + itoa(int64(i))
			}
			return out
		}
		callback := e.srv.Config.PublicURL + "/api/v1/oauth/callback"
		for _, tc := range []struct {
			name   string
			change map[string]any // nil values delete the key
			field  string
			detail string
		}{
			{"empty name", map[string]any{"name": ""}, "name", "Missing required field: name"},
			{"long name", map[string]any{"name": strings.Repeat("n", 101)}, "name", "at most 100 characters"},
			{"unknown type", map[string]any{"authenticator_type": "github"}, "authenticator_type", "custom, google, microsoft, slack, yahoo"},
			{"no scopes", map[string]any{"scopes": []any{}}, "scopes", "between 1 and 50"},
			{"51 scopes", map[string]any{"scopes": scopes(51)}, "scopes", "between 1 and 50"},
			{"scope with a space", map[string]any{"scopes": []any{"a", "b c"}}, "scopes[1]", "no whitespace"},
			{"scopes not strings", map[string]any{"scopes": []any{1}}, "scopes[0]", "expected a string"},
			{"google client id", map[string]any{"authenticator_type": "google", "client_id": "1234-abc"}, "client_id", ".apps.googleusercontent.com"},
			{"microsoft client id", map[string]any{"authenticator_type": "microsoft", "client_id": "crm-client"}, "client_id", "GUID"},
			{"slack client id", map[string]any{"authenticator_type": "slack", "client_id": "12ab.34"}, "client_id", "two numbers joined by a dot"},
			{"yahoo client id", map[string]any{"authenticator_type": "yahoo", "client_id": "has space"}, "client_id", "letters, digits"},
			{"no client id", map[string]any{"client_id": nil}, "client_id", "Missing required field: client_id"},
			{"no client secret", map[string]any{"client_secret": nil}, "client_secret", "Missing required field: client_secret"},
			{"client secret a number", map[string]any{"client_secret": 7}, "client_secret", "expected a string"},
			{"custom without token_url", map[string]any{"token_url": nil}, "token_url", "Missing required field: token_url"},
			{"custom without authorize_url", map[string]any{"authorize_url": nil}, "authorize_url", "Missing required field: authorize_url"},
			{"relative token_url", map[string]any{"token_url": "/token"}, "token_url", "absolute http or https URL"},
			{"redirect on another origin", map[string]any{"redirect_uri": "https://evil.example.com/api/v1/oauth/callback"}, "redirect_uri", "origin"},
			{"redirect on another path", map[string]any{"redirect_uri": strings.TrimSuffix(callback, "/callback") + "/elsewhere"}, "redirect_uri", "callback"},
			{"token_url on loopback", map[string]any{"token_url": "http://127.0.0.1:9/token"}, "token_url", "AP_EGRESS_ALLOW"},
			{"token_url on cloud metadata", map[string]any{"token_url": "http://169.254.169.254/latest"}, "token_url", "AP_EGRESS_ALLOW"},
			{"token_url on IPv6 loopback", map[string]any{"token_url": "http://[::1]/token"}, "token_url", "AP_EGRESS_ALLOW"},
			{"token_url on RFC 1918", map[string]any{"token_url": "https://10.0.0.1/token"}, "token_url", "AP_EGRESS_ALLOW"},
			{"refresh_url on localhost", map[string]any{"refresh_url": "http://localhost/refresh"}, "refresh_url", "AP_EGRESS_ALLOW"},
			{"revoke_url private", map[string]any{"revoke_url": "http://192.168.1.1/revoke"}, "revoke_url", "AP_EGRESS_ALLOW"},
			{"userinfo_url private", map[string]any{"configuration": map[string]any{"userinfo_url": "http://10.1.2.3/me"}}, "configuration.userinfo_url", "AP_EGRESS_ALLOW"},
			{"pkce_enabled a string", map[string]any{"configuration": map[string]any{"pkce_enabled": "yes"}}, "configuration.pkce_enabled", "expected a boolean"},
			{"prompt a number", map[string]any{"configuration": map[string]any{"prompt": 1}}, "configuration.prompt", "expected a string"},
			{"include_granted_scopes a string", map[string]any{"configuration": map[string]any{"include_granted_scopes": "true"}}, "configuration.include_granted_scopes", "expected a boolean"},
			{"implicit flow", map[string]any{"configuration": map[string]any{"response_type": "token"}}, "configuration.response_type", "only code"},
			{"client credentials", map[string]any{"configuration": map[string]any{"grant_type": "client_credentials"}}, "configuration.grant_type", "only authorization_code"},
			{"auth method", map[string]any{"configuration": map[string]any{"token_endpoint_auth_method": "none"}}, "configuration.token_endpoint_auth_method", "client_secret_basic"},
			{"long separator", map[string]any{"configuration": map[string]any{"scope_separator": "::"}}, "configuration.scope_separator", "one character"},
			{"microsoft tenant", map[string]any{"authenticator_type": "microsoft", "client_id": uuid.NewString(), "configuration": map[string]any{"tenant": "a/b"}}, "configuration.tenant", "domain name"},
			{"userinfo_url of google", map[string]any{"authenticator_type": "google", "client_id": "1-a.apps.googleusercontent.com",
				"configuration": map[string]any{"userinfo_url": "https://id.example.com/me"}}, "configuration.userinfo_url", "only a custom"},
			{"configuration not an object", map[string]any{"configuration": []any{}}, "configuration", "expected an object"},
			{"is_active a string", map[string]any{"is_active": "yes"}, "is_active", "expected a boolean"},
		} {
			body := customAuthenticator("crm")
			for k, v := range tc.change {
				if v == nil {
					delete(body, k)
				} else {
					body[k] = v
				}
			}
			r := e.do("POST", authenticatorsPath(app), body, bearer(tok)).expectError(t, 400, "ValidationError", tc.detail)
			require.Contains(t, r.str("detail"), tc.field, "%s: the detail names the field", tc.name)
			require.True(t, strings.HasPrefix(r.str("detail"), "Invalid value for field "+tc.field+":") ||
				r.str("detail") == "Missing required field: "+tc.field, "%s: %s", tc.name, r.str("detail"))
		}
		e.do("POST", authenticatorsPath(app), []byte(`[1]`), bearer(tok)).expectError(t, 400, "ValidationError", "expected a JSON object")

		// The outside world of the tests, allowed by AP_EGRESS_ALLOW; the
		// callback itself; known types with the provider's endpoints.
		ok := customAuthenticator("outside")
		ok["token_url"], ok["refresh_url"], ok["redirect_uri"] = "http://127.0.0.2:8080/token", "http://127.0.0.2:8080/refresh", callback
		ok["configuration"] = map[string]any{"userinfo_url": "http://127.0.0.2:8080/me", "pkce_enabled": true, "vendor_extra": map[string]any{"x": 1}}
		r := e.do("POST", authenticatorsPath(app), ok, bearer(tok)).expect(t, 201)
		require.Equal(t, map[string]any{"userinfo_url": "http://127.0.0.2:8080/me", "pkce_enabled": true, "vendor_extra": map[string]any{"x": 1.0}},
			r.JSON["configuration"], "unknown keys are kept")
		for typ, id := range map[string]string{"google": "1234-abc.apps.googleusercontent.com", "microsoft": uuid.NewString(),
			"slack": "1234567890.0987654321", "yahoo": "dj0yJmk9YWJj--"} {
			r := e.do("POST", authenticatorsPath(app), map[string]any{"name": typ, "authenticator_type": typ, "client_id": id,
				"client_secret": "s", "scopes": []any{"openid"}}, bearer(tok)).expect(t, 201)
			require.True(t, strings.HasPrefix(r.str("authorize_url"), "https://"), "%s: %s", typ, r.Body)
			require.True(t, strings.HasPrefix(r.str("token_url"), "https://"), typ)
			require.Equal(t, callback, r.str("redirect_uri"), typ)
		}

		// Duplicates are conflicts; another user's app is absent.
		e.do("POST", authenticatorsPath(app), customAuthenticator("outside"), bearer(tok)).
			expectError(t, 409, "ConflictError", `The app already has an authenticator named "outside"`)
		other := e.signup("authn-other@example.com")
		e.do("POST", authenticatorsPath(app), customAuthenticator("mine"), bearer(other)).expectError(t, 404, "NotFoundError", "App not found")
		e.do("POST", authenticatorsPath("not-an-id"), customAuthenticator("mine"), bearer(tok)).expectError(t, 404, "NotFoundError", "App not found")
	})
}

// TestAuthenticatorLifecycle: create, read, list in pages, patch (fields,
// is_active, a new secret), delete; the client secret is sealed and never
// answered; the service-provider routes are the same things.
func TestAuthenticatorLifecycle(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("authn-life@example.com")
		app := e.importManifest(tok, exampleManifest(t)).expect(t, 201).str("app_id")
		const plaintext = "cs-plaintext-6f1c2b7e9d"
		var answers []*resp
		answered := func(r *resp) *resp { answers = append(answers, r); return r }

		body := customAuthenticator("crm")
		body["client_secret"] = plaintext
		created := answered(e.do("POST", authenticatorsPath(app), body, bearer(tok)).expect(t, 201))
		id := created.str("id")
		require.Equal(t, true, created.JSON["has_client_secret"])
		require.Equal(t, true, created.JSON["is_active"])
		require.Equal(t, map[string]any{}, created.JSON["configuration"])
		require.Equal(t, e.srv.Config.PublicURL+"/api/v1/oauth/callback", created.str("redirect_uri"))
		require.Equal(t, app, created.str("app_id"))
		require.Equal(t, "", created.str("refresh_url"))
		require.Equal(t, []any{"contacts.read", "contacts.write"}, created.JSON["scopes"])

		// The secret is sealed at rest.
		row, err := e.srv.Store.AuthenticatorGet(context.Background(), id)
		require.NoError(t, err)
		require.NotContains(t, row.ClientSecretEnc, plaintext)
		opened, err := e.srv.Secrets.Open(row.ClientSecretEnc)
		require.NoError(t, err)
		require.Equal(t, plaintext, opened)

		// The manifest's authenticator has no secret until one is set.
		r := answered(e.do("GET", "/api/v1/oauth/authenticators?app_id="+app, nil, bearer(tok)).expect(t, 200))
		items := list(r, "authenticators")
		require.Equal(t, []string{"helpdesk", "crm"}, names(items))
		require.Equal(t, 2.0, r.JSON["total_count"])
		require.Equal(t, false, r.JSON["has_more"])
		helpdesk := items[0]
		require.Equal(t, false, helpdesk["has_client_secret"])
		require.Equal(t, map[string]any{"userinfo_url": "https://helpdesk.example.com/api/me", "pkce_enabled": true}, helpdesk["configuration"])
		p := answered(e.do("PATCH", "/api/v1/oauth/authenticators/"+helpdesk["id"].(string), map[string]any{"client_secret": plaintext + "-2"}, bearer(tok)).expect(t, 200))
		require.Equal(t, true, p.JSON["has_client_secret"])
		require.Equal(t, helpdesk["token_url"], p.str("token_url"), "the rest stays")

		// Pages, on both routes.
		for _, n := range []string{"a", "b"} {
			answered(e.do("POST", "/api/v1/apps/"+app+"/service-providers", customAuthenticator(n), bearer(tok)).expect(t, 201))
		}
		for _, path := range []string{"/api/v1/oauth/authenticators?app_id=" + app + "&", "/api/v1/apps/" + app + "/service-providers?"} {
			r = answered(e.do("GET", path+"limit=3", nil, bearer(tok)).expect(t, 200))
			require.Equal(t, []string{"helpdesk", "crm", "a"}, names(list(r, "authenticators")), path)
			require.Equal(t, 4.0, r.JSON["total_count"])
			require.Equal(t, true, r.JSON["has_more"])
			r = answered(e.do("GET", path+"limit=3&offset=3", nil, bearer(tok)).expect(t, 200))
			require.Equal(t, []string{"b"}, names(list(r, "authenticators")), path)
			require.Equal(t, false, r.JSON["has_more"])
			e.do("GET", path+"limit=0", nil, bearer(tok)).expect(t, 400)
		}
		e.do("GET", "/api/v1/oauth/authenticators", nil, bearer(tok)).expectError(t, 400, "ValidationError", "app_id")

		// PATCH: any subset, validated whole; is_active; a new secret.
		p = answered(e.do("PATCH", "/api/v1/oauth/authenticators/"+id, map[string]any{"is_active": false, "scopes": []any{"contacts.read"}}, bearer(tok)).expect(t, 200))
		require.Equal(t, false, p.JSON["is_active"])
		require.Equal(t, []any{"contacts.read"}, p.JSON["scopes"])
		require.Equal(t, "crm", p.str("name"))
		require.Equal(t, false, answered(e.do("GET", "/api/v1/oauth/authenticators/"+id, nil, bearer(tok)).expect(t, 200)).JSON["is_active"])
		e.do("PATCH", "/api/v1/oauth/authenticators/"+id, map[string]any{"name": "a"}, bearer(tok)).expect(t, 409)
		e.do("PATCH", "/api/v1/oauth/authenticators/"+id, map[string]any{"scopes": []any{"a b"}}, bearer(tok)).expectError(t, 400, "ValidationError", "scopes[0]")
		e.do("PATCH", "/api/v1/oauth/authenticators/"+id, map[string]any{"authenticator_type": "google"}, bearer(tok)).
			expectError(t, 400, "ValidationError", "Invalid value for field client_id")
		e.do("PATCH", "/api/v1/oauth/authenticators/"+id, map[string]any{"token_url": "http://169.254.169.254/"}, bearer(tok)).
			expectError(t, 400, "ValidationError", "token_url")
		e.do("PATCH", "/api/v1/oauth/authenticators/"+id, map[string]any{"client_secret": ""}, bearer(tok)).
			expectError(t, 400, "ValidationError", "client_secret")
		p = answered(e.do("PATCH", "/api/v1/oauth/authenticators/"+id, map[string]any{"client_secret": plaintext + "-3"}, bearer(tok)).expect(t, 200))
		require.Equal(t, true, p.JSON["has_client_secret"])
		row, err = e.srv.Store.AuthenticatorGet(context.Background(), id)
		require.NoError(t, err)
		opened, err = e.srv.Secrets.Open(row.ClientSecretEnc)
		require.NoError(t, err)
		require.Equal(t, plaintext+"-3", opened)

		// A Microsoft tenant moves the endpoints it filled in.
		ms := answered(e.do("POST", authenticatorsPath(app), map[string]any{"name": "ms", "authenticator_type": "microsoft", "client_id": uuid.NewString(),
			"client_secret": "s", "scopes": []any{"User.Read"}}, bearer(tok)).expect(t, 201))
		require.Equal(t, "https://login.microsoftonline.com/common/oauth2/v2.0/authorize", ms.str("authorize_url"))
		require.Equal(t, "", ms.str("revoke_url"), "Microsoft has no revocation endpoint")
		ms = answered(e.do("PATCH", "/api/v1/oauth/authenticators/"+ms.str("id"), map[string]any{"configuration": map[string]any{"tenant": "contoso.onmicrosoft.com"}},
			bearer(tok)).expect(t, 200))
		require.Equal(t, "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token", ms.str("token_url"))

		// Delete: 204, then absent.
		e.do("DELETE", "/api/v1/oauth/authenticators/"+id, nil, bearer(tok)).expect(t, 204)
		e.do("GET", "/api/v1/oauth/authenticators/"+id, nil, bearer(tok)).expectError(t, 404, "NotFoundError", "Authenticator not found")
		e.do("PATCH", "/api/v1/oauth/authenticators/"+id, map[string]any{"is_active": true}, bearer(tok)).expect(t, 404)
		e.do("DELETE", "/api/v1/oauth/authenticators/"+id, nil, bearer(tok)).expect(t, 404)
		e.do("GET", "/api/v1/oauth/authenticators/not-an-id", nil, bearer(tok)).expect(t, 404)

		// No answer carried a secret, and neither does the manifest.
		answers = append(answers, e.do("GET", "/api/v1/apps/"+app+"/manifest", nil, bearer(tok)).expect(t, 200))
		for _, r := range answers {
			requireNoSecret(t, r, plaintext)
		}
		// Nor the database.
		requireNoPlaintext(t, e, []string{plaintext})
	})
}

// TestAuthenticatorIsolation: another user's authenticators, and another
// app's for a bound key, are absent; app:access keys read them but do not
// manage them.
func TestAuthenticatorIsolation(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		owner, other := e.signup("authn-owner@example.com"), e.signup("authn-stranger@example.com")
		app := e.newApp(owner, "crm")
		id := e.do("POST", authenticatorsPath(app), customAuthenticator("crm"), bearer(owner)).expect(t, 201).str("id")
		second := e.newApp(owner, "second")
		bound, _ := e.key(owner, map[string]any{"name": "bound", "scopes": []string{"write:all"}, "app_id": second})
		for _, tok := range []string{other, bound} {
			e.do("GET", "/api/v1/oauth/authenticators/"+id, nil, bearer(tok)).expectError(t, 404, "NotFoundError", "Authenticator not found")
			e.do("PATCH", "/api/v1/oauth/authenticators/"+id, map[string]any{"is_active": false}, bearer(tok)).expect(t, 404)
			e.do("DELETE", "/api/v1/oauth/authenticators/"+id, nil, bearer(tok)).expect(t, 404)
			e.do("GET", "/api/v1/oauth/authenticators?app_id="+app, nil, bearer(tok)).expectError(t, 404, "NotFoundError", "App not found")
			e.do("GET", "/api/v1/apps/"+app+"/service-providers", nil, bearer(tok)).expect(t, 404)
			e.do("POST", authenticatorsPath(app), customAuthenticator("theirs"), bearer(tok)).expect(t, 404)
			e.do("POST", "/api/v1/apps/"+app+"/service-providers", customAuthenticator("theirs"), bearer(tok)).expect(t, 404)
		}
		// The bound key manages its own app's.
		e.do("POST", authenticatorsPath(second), customAuthenticator("own"), bearer(bound)).expect(t, 201)

		access := e.keyWith(owner, "app:access")
		requireNoSecret(t, e.do("GET", "/api/v1/oauth/authenticators/"+id, nil, bearer(access)).expect(t, 200), "cs-crm")
		require.Len(t, list(e.do("GET", "/api/v1/oauth/authenticators?app_id="+app, nil, bearer(access)).expect(t, 200), "authenticators"), 1)
		require.Len(t, list(e.do("GET", "/api/v1/apps/"+app+"/service-providers", nil, bearer(access)).expect(t, 200), "authenticators"), 1)
		e.do("POST", authenticatorsPath(app), customAuthenticator("x"), bearer(access)).expectError(t, 403, "PermissionError", "")
		e.do("POST", "/api/v1/apps/"+app+"/service-providers", customAuthenticator("x"), bearer(access)).expect(t, 403)
		e.do("PATCH", "/api/v1/oauth/authenticators/"+id, map[string]any{"is_active": false}, bearer(access)).expect(t, 403)
		e.do("DELETE", "/api/v1/oauth/authenticators/"+id, nil, bearer(access)).expect(t, 403)
		e.do("GET", "/api/v1/oauth/authenticators/"+id, nil, bearer(owner)).expect(t, 200)
	})
}

// TestManifestAuthenticators: a manifest's authenticators pass the same
// rules, named by their path, the instance's included.
func TestManifestAuthenticators(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("authn-manifest@example.com")
		for _, tc := range []struct {
			change map[string]any
			field  string
		}{
			{map[string]any{"client_secret": "hunter2"}, "authenticators[0].client_secret"},
			{map[string]any{"token_url": "http://10.0.0.1/token"}, "authenticators[0].token_url"},
			{map[string]any{"revoke_url": "http://[::1]/revoke"}, "authenticators[0].revoke_url"},
			{map[string]any{"configuration": map[string]any{"userinfo_url": "http://169.254.169.254/"}}, "authenticators[0].configuration.userinfo_url"},
			{map[string]any{"configuration": map[string]any{"pkce_enabled": 1}}, "authenticators[0].configuration.pkce_enabled"},
			{map[string]any{"redirect_uri": "https://elsewhere.example.com/api/v1/oauth/callback"}, "authenticators[0].redirect_uri"},
			{map[string]any{"authenticator_type": "google", "client_id": "x"}, "authenticators[0].client_id"},
		} {
			m := exampleManifest(t)
			a := m["authenticators"].([]any)[0].(map[string]any)
			for k, v := range tc.change {
				a[k] = v
			}
			e.importManifest(tok, m).expectError(t, 400, "ValidationError", "Invalid value for field "+tc.field)
		}
		// With manifest_data of POST /apps, the path says so.
		m := exampleManifest(t)
		m["authenticators"].([]any)[0].(map[string]any)["token_url"] = "http://127.0.0.1/token"
		e.do("POST", "/api/v1/apps", map[string]any{"manifest_data": m}, bearer(tok)).
			expectError(t, 400, "ValidationError", "manifest_data.authenticators[0].token_url")

		// A known type without endpoints gets its provider's; the export
		// leaves them (and the default callback) out, as written.
		m = exampleManifest(t)
		m["authenticators"] = append(m["authenticators"].([]any), map[string]any{"name": "google", "authenticator_type": "google",
			"client_id": "1-a.apps.googleusercontent.com", "scopes": []any{"openid"}})
		app := e.importManifest(tok, m).expect(t, 201).str("app_id")
		items := list(e.do("GET", "/api/v1/apps/"+app+"/service-providers", nil, bearer(tok)).expect(t, 200), "authenticators")
		require.Equal(t, "https://oauth2.googleapis.com/token", items[1]["token_url"])
		require.Equal(t, false, items[1]["has_client_secret"])
		exported := e.do("GET", "/api/v1/apps/"+app+"/manifest", nil, bearer(tok)).expect(t, 200)
		require.Equal(t, m["authenticators"].([]any)[1], list(exported, "authenticators")[1])
	})
}

// TestAuthenticatorsInProduction: authorize_url is HTTPS, and redirect_uri
// the callback on the public URL.
func TestAuthenticatorsInProduction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, map[string]string{"AP_ENV": "production", "AP_PUBLIC_URL": "https://ap.example.org"})
	tok := e.signup("authn-prod@example.com")
	app := e.newApp(tok, "crm")
	body := customAuthenticator("crm")
	body["authorize_url"] = "http://crm.example.com/oauth/authorize"
	e.do("POST", authenticatorsPath(app), body, bearer(tok)).
		expectError(t, 400, "ValidationError", "Invalid value for field authorize_url: must be an https URL in production")
	m := exampleManifest(t)
	m["authenticators"].([]any)[0].(map[string]any)["authorize_url"] = "http://helpdesk.example.com/oauth/authorize"
	e.importManifest(tok, m).expectError(t, 400, "ValidationError", "authenticators[0].authorize_url")

	body["authorize_url"] = "https://crm.example.com/oauth/authorize"
	body["redirect_uri"] = "http://ap.example.org/api/v1/oauth/callback"
	e.do("POST", authenticatorsPath(app), body, bearer(tok)).expectError(t, 400, "ValidationError", "https://ap.example.org")
	delete(body, "redirect_uri")
	r := e.do("POST", authenticatorsPath(app), body, bearer(tok)).expect(t, 201)
	require.Equal(t, "https://ap.example.org/api/v1/oauth/callback", r.str("redirect_uri"))
	body["name"], body["redirect_uri"] = "explicit", "https://AP.example.org:443/api/v1/oauth/callback"
	e.do("POST", authenticatorsPath(app), body, bearer(tok)).expect(t, 201)
}
