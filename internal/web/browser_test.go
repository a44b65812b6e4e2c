package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/webtest"
)

// badManifest is the example without agents[0].agent_config.model.
func badManifest(t testing.TB) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(exampleManifest(t)), &m))
	delete(m["agents"].([]any)[0].(map[string]any)["agent_config"].(map[string]any), "model")
	b, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	return string(b)
}

// TestBrowserFlow is a person's first visit, in a real browser, on both
// databases: register (an error beside its field first), log in, paste
// a bad manifest (its error at the bad path), import the example app the
// empty list offers, open the app, create an API key
// (shown once) and revoke it, log out, and log in again from a private
// page, which the login returns to.
func TestBrowserFlow(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		env := webtest.Start(t, d, nil)
		b := webtest.NewBrowser(t, env.URL, webtest.Options{})

		// Without a session, the apps page is the login page.
		b.Open("/")
		require.Equal(t, "/login", b.Path())
		b.WaitText("h1", "Log in")
		b.Shot("login")

		b.Click(`a[href="/register"]`)
		b.WaitPath("/register")
		b.Fill("#email", "ann@example.com")
		b.Fill("#first_name", "Ann")
		b.Fill("#password", "password1")
		b.Fill("#confirm_password", "password2")
		b.Click(`button[type=submit]`)
		b.WaitText("#confirm_password-error", "Passwords do not match")
		require.Equal(t, "true", webtest.Eval[string](b, `document.querySelector("#confirm_password").getAttribute("aria-invalid")`))
		b.Shot("register-error")
		b.Fill("#confirm_password", "password1")
		b.Click(`button[type=submit]`)
		b.WaitPath("/login?registered=1")
		b.WaitText(".notice", "Account created")

		b.Fill("#email", "ann@example.com")
		b.Fill("#password", "wrong-password")
		b.Click(`button[type=submit]`)
		b.WaitText(".form-error", "Invalid")
		b.Fill("#password", "password1")
		b.Click(`button[type=submit]`)
		b.WaitPath("/")
		b.WaitText("h1", "Your apps")
		b.WaitText("[data-empty=apps]", "No apps yet")
		b.WaitText("header .email", "ann@example.com")
		b.Shot("apps-empty")

		// A manifest with a mistake: the error names the bad path, beside
		// the manifest.
		b.SetValue("#manifest", badManifest(t))
		b.Click(`#import-form button[type=submit]`)
		b.WaitText("#manifest-error", "agent_config.model")
		require.Equal(t, "agents[0].agent_config.model", b.Text("#manifest-error code.path"))
		b.Shot("import-error")

		// The empty list offers the example app: one click imports it.
		b.Click(`form[data-example-form] button[type=submit]`)
		b.WaitText(".notice", "Imported Support Desk")
		list := b.WaitText("[data-list=apps]", "Support Desk")
		require.Contains(t, list, "support-desk")
		require.Contains(t, list, "active")
		b.Shot("apps")

		b.Click(`[data-list=apps] a[href^="/apps/"]`)
		b.WaitText("h1", "Support Desk")
		agents := b.WaitText("[data-list=agents]", "triage")
		require.Contains(t, agents, "escalation-router")
		appPath := b.Path()
		require.True(t, strings.HasPrefix(appPath, "/apps/"), appPath)
		b.Shot("app")

		b.Click(`nav a[href="/keys"]`)
		b.WaitPath("/keys")
		b.WaitText("[data-empty=keys]", "No API keys")
		b.Fill("#key-name", "ci")
		b.Click(`input[value="app:access"]`)
		b.SetValue("#key-app", strings.TrimPrefix(appPath, "/apps/"))
		b.Click(`#key-form button[type=submit]`)
		key := b.WaitText("#new-key [data-new-key]", "ak_")
		require.Contains(t, b.Text("#new-key"), "shown this once")
		row := b.WaitText("[data-list=keys] tbody tr", "ci")
		require.Contains(t, row, "app:access")
		require.Contains(t, row, "Support Desk")
		b.Shot("key-created")

		// The key works, and is never shown again.
		require.Equal(t, http.StatusOK, call(t, env, "GET", "/api/v1/apps", "", "", "Authorization", "Bearer "+key).StatusCode)
		b.Open("/keys")
		require.NotContains(t, b.Text("body"), key)
		row = b.WaitText("[data-list=keys] tbody tr", "ci")
		require.Contains(t, row, key[:len("ak_")+4], "the prefix identifies it")
		require.Contains(t, row, "never", "not used yet… or shown in local time once used")

		b.Click(`button[data-revoke]`)
		b.WaitText(`button[data-revoke]`, "Click again")
		b.Click(`button[data-revoke]`)
		b.WaitText("#keys-status", "Revoked")
		b.WaitText("[data-empty=keys]", "No API keys")
		require.Equal(t, http.StatusUnauthorized, call(t, env, "GET", "/api/v1/apps", "", "", "Authorization", "Bearer "+key).StatusCode)
		b.Shot("key-revoked")

		b.Click(`header form button[type=submit]`)
		b.WaitPath("/login")
		b.Open("/keys")
		require.Equal(t, loginFor("/keys"), b.Path())
		b.Shot("logged-out")
		// The login returns to the page that sent the browser there.
		b.Fill("#email", "ann@example.com")
		b.Fill("#password", "password1")
		b.Click(`button[type=submit]`)
		b.WaitPath("/keys")
	})
}

// TestBrowserPhoneWidth: at a phone's width every page fits: nothing
// needs sideways scrolling.
func TestBrowserPhoneWidth(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, nil)
	session := signup(t, env, "a-rather-long-address.for-testing@subdomain.example.com")
	appID, _ := importApp(t, env, session)
	body := `{"name": "a key with a long name to wrap on a small screen", "scopes": ["read:all", "app:access"], "app_id": "` + appID + `"}`
	r := call(t, env, "POST", "/api/v1/user/api-keys", "application/json", body, "Authorization", "Bearer "+session)
	require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)

	b := webtest.NewBrowser(t, env.URL, webtest.Options{Width: 390, Height: 844})
	for _, path := range []string{"/register", "/login"} {
		b.Open(path)
		b.NoHorizontalOverflow()
		b.Shot("phone" + path)
	}
	b.Fill("#email", "a-rather-long-address.for-testing@subdomain.example.com")
	b.Fill("#password", "password1")
	b.Click(`button[type=submit]`)
	b.WaitPath("/")
	for _, path := range []string{"/", "/apps/" + appID, "/keys"} {
		b.Open(path)
		b.WaitText("main", "")
		b.NoHorizontalOverflow()
		b.Shot("phone" + path)
	}
	// Keyboard focus is visible: the first link after a Tab has an outline.
	b.Open("/keys")
	require.NotEqual(t, "none", webtest.Eval[string](b, `(() => { const a = document.querySelector("nav a"); a.focus({focusVisible: true}); return getComputedStyle(a).outlineStyle; })()`))
}
