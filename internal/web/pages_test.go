package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/webtest"
)

// exampleManifest is the README's example app.
func exampleManifest(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "support-desk.json"))
	require.NoError(t, err)
	return string(b)
}

// answer is an HTTP answer with its body.
type answer = webtest.Answer

// call sends a request to env; header pairs follow the body.
func call(t testing.TB, env *webtest.Env, method, path, contentType, body string, header ...string) answer {
	t.Helper()
	return env.Call(t, method, path, contentType, body, header...)
}

func cookie(token string) []string { return []string{"Cookie", "ap_session=" + token} }

// loginFor is where a private page sends a browser without a session: the
// login page, which returns to the page after the login.
func loginFor(path string) string {
	if path == "/" {
		return "/login"
	}
	return "/login?" + url.Values{"next": {path}}.Encode()
}

// signup registers email and logs in through the API; the session token.
func signup(t testing.TB, env *webtest.Env, email string) string {
	t.Helper()
	form := url.Values{"email": {email}, "password": {"password1"}, "confirm_password": {"password1"}}.Encode()
	r := call(t, env, "POST", "/api/v1/auth/register", "application/x-www-form-urlencoded", form, "Accept", "application/json")
	require.Equal(t, 201, r.StatusCode, r.Body)
	return logInOverAPI(t, env, email)
}

// logInOverAPI logs email in with signup's password through the API; the
// session token.
func logInOverAPI(t testing.TB, env *webtest.Env, email string) string {
	t.Helper()
	form := url.Values{"email": {email}, "password": {"password1"}}.Encode()
	r := call(t, env, "POST", "/api/v1/auth/login", "application/x-www-form-urlencoded", form, "Accept", "application/json")
	require.Equal(t, 200, r.StatusCode, r.Body)
	var out struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Body), &out))
	return out.AccessToken
}

// importApp imports the example manifest for session; the app's id and its
// entry_point_url.
func importApp(t testing.TB, env *webtest.Env, session string) (string, string) {
	t.Helper()
	r := call(t, env, "POST", "/api/v1/apps/import-manifest", "application/json", exampleManifest(t), "Authorization", "Bearer "+session)
	require.Equal(t, 201, r.StatusCode, r.Body)
	var out struct {
		AppID string `json:"app_id"`
		Entry string `json:"entry_point_url"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Body), &out))
	return out.AppID, out.Entry
}

const wantCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

var (
	scriptTag = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	// Event handler attributes and style attributes are inline code the
	// CSP would block: there must be none.
	inlineAttr = regexp.MustCompile(`(?i)<[^>]+\s(on[a-z]+|style)\s*=`)
	// offsite is an attribute that loads or links something from another
	// origin; a URL shown as text (the app's MCP URL, to copy) is none.
	offsite = regexp.MustCompile(`(?i)<[^>]+\s(src|href|action|formaction|srcset|poster|data)\s*=\s*["']?\s*(https?:)?//`)
)

// expectPage asserts an HTML page with the UI's security headers and no
// inline script or style.
func expectPage(t *testing.T, r answer, status int) {
	t.Helper()
	require.Equal(t, status, r.StatusCode, r.Body)
	require.Equal(t, "text/html; charset=utf-8", r.Header.Get("Content-Type"))
	require.Equal(t, wantCSP, r.Header.Get("Content-Security-Policy"))
	require.Equal(t, "DENY", r.Header.Get("X-Frame-Options"))
	require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"))
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	scripts := scriptTag.FindAllStringSubmatch(r.Body, -1)
	require.NotEmpty(t, scripts)
	for _, s := range scripts {
		require.Contains(t, s[1], `src="/static/`, "a script from the own origin: %s", s[0])
		require.Empty(t, strings.TrimSpace(s[2]), "no inline script: %s", s[0])
	}
	require.Nil(t, inlineAttr.FindStringIndex(r.Body), "inline handler or style: %v", inlineAttr.FindString(r.Body))
	require.Nil(t, offsite.FindStringIndex(r.Body), "nothing loaded from or linked to elsewhere: %v", offsite.FindString(r.Body))
}

// TestPagesWithoutSessionRedirect: every private page sends a browser
// without a session to /login, with the page to return to — an API key or a Bearer session token is
// not a page's credential.
func TestPagesWithoutSessionRedirect(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, nil)
	session := signup(t, env, "ann@example.com")
	appID, _ := importApp(t, env, session)
	for _, path := range []string{"/", "/keys", "/apps/" + appID, "/?imported=" + appID, "/apps/" + appID + "/waiting"} {
		for _, h := range [][]string{nil, {"Authorization", "Bearer " + session}, cookie("st_forged"), cookie("ak_notasession")} {
			r := call(t, env, "GET", path, "", "", h...)
			require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s %v", path, h)
			require.Equal(t, loginFor(path), r.Header.Get("Location"), "%s %v", path, h)
			require.Equal(t, wantCSP, r.Header.Get("Content-Security-Policy"))
		}
	}
	// A signed-in browser skips the login and registration pages.
	for _, path := range []string{"/login", "/register"} {
		r := call(t, env, "GET", path, "", "", cookie(session)...)
		require.Equal(t, http.StatusSeeOther, r.StatusCode)
		require.Equal(t, "/", r.Header.Get("Location"))
	}
}

// TestRegisterCarriesNext: a browser sent to log in that has no account
// yet registers, logs in and lands on the page that sent it, through the
// register page's form and links; only a path on this site is carried.
func TestRegisterCarriesNext(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, nil)
	session := signup(t, env, "ann@example.com")
	appID, _ := importApp(t, env, session)
	page := "/apps/" + appID
	enc := url.QueryEscape(page)

	login := call(t, env, "GET", "/login?next="+enc, "", "")
	expectPage(t, login, http.StatusOK)
	require.Contains(t, login.Body, `href="/register?next=`+enc+`"`, "the login page's register link carries next")
	form := call(t, env, "GET", "/register?next="+enc, "", "")
	expectPage(t, form, http.StatusOK)
	require.Contains(t, form.Body, `<input type="hidden" name="next" value="`+page+`">`)
	require.Contains(t, form.Body, `data-next="/login?next=`+enc+`&amp;registered=1"`, "the JSON registration goes on to the login with next")
	require.Contains(t, form.Body, `href="/login?next=`+enc+`"`, "the register page's login link carries next")

	register := func(email, next string) answer {
		t.Helper()
		body := url.Values{"email": {email}, "password": {"password1"}, "confirm_password": {"password1"}, "next": {next}}.Encode()
		return call(t, env, "POST", "/api/v1/auth/register", "application/x-www-form-urlencoded", body)
	}
	r := register("bob@example.com", page)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	require.Equal(t, "/login?next="+enc, r.Header.Get("Location"))
	login = call(t, env, "GET", r.Header.Get("Location"), "", "")
	require.Contains(t, login.Body, `<input type="hidden" name="next" value="`+page+`">`)
	body := url.Values{"email": {"bob@example.com"}, "password": {"password1"}, "next": {page}}.Encode()
	r = call(t, env, "POST", "/api/v1/auth/login", "application/x-www-form-urlencoded", body)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	require.Equal(t, page, r.Header.Get("Location"), "back where the browser was sent to log in")

	for i, bad := range []string{"//evil.example", "/\\evil.example", "https://evil.example/", "javascript:alert(1)", "/%2F%2Fevil.example"} {
		form := call(t, env, "GET", "/register?"+url.Values{"next": {bad}}.Encode(), "", "")
		expectPage(t, form, http.StatusOK)
		require.Contains(t, form.Body, `data-next="/login?registered=1"`, "%q", bad)
		require.NotContains(t, form.Body, "evil", "%q", bad)
		if i < 2 { // each registration costs a password hash
			r := register(fmt.Sprintf("eve%d@example.com", i), bad)
			require.Equal(t, http.StatusSeeOther, r.StatusCode, "%q: %s", bad, r.Body)
			require.Equal(t, "/login", r.Header.Get("Location"), "%q", bad)
		}
	}
}

// TestLoginReturnsToThePage: the login page returns a browser to the page
// that sent it there, and only ever to a path on this site (an open
// redirect would make a link here land on someone else's site); the JSON
// login is the same as ever.
func TestLoginReturnsToThePage(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, nil)
	session := signup(t, env, "ann@example.com")
	appID, _ := importApp(t, env, session)
	page := "/apps/" + appID + "/data?model=tickets"

	r := call(t, env, "GET", page, "", "")
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	login := r.Header.Get("Location")
	require.Equal(t, "/login?next=%2Fapps%2F"+appID+"%2Fdata%3Fmodel%3Dtickets", login)
	form := call(t, env, "GET", login, "", "")
	expectPage(t, form, http.StatusOK)
	require.Contains(t, form.Body, `<input type="hidden" name="next" value="/apps/`+appID+`/data?model=tickets">`)
	require.Contains(t, form.Body, `data-next="/apps/`+appID+`/data?model=tickets"`)

	logIn := func(next string, header ...string) answer {
		t.Helper()
		body := url.Values{"email": {"ann@example.com"}, "password": {"password1"}, "next": {next}}.Encode()
		return call(t, env, "POST", "/api/v1/auth/login", "application/x-www-form-urlencoded", body, header...)
	}
	r = logIn("/apps/" + appID + "/data?model=tickets")
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	require.Equal(t, page, r.Header.Get("Location"))
	require.Contains(t, r.Header.Get("Set-Cookie"), "ap_session=st_")

	for _, bad := range []string{"//evil.example", "/\\evil.example", "https://evil.example/", "javascript:alert(1)",
		"/%2F%2Fevil.example", "/\t/evil.example", "evil.example", "/x\r\nSet-Cookie: a=b", ""} {
		r := logIn(bad)
		require.Equal(t, http.StatusSeeOther, r.StatusCode, "%q: %s", bad, r.Body)
		require.Equal(t, "/", r.Header.Get("Location"), "%q", bad)
		form := call(t, env, "GET", "/login?"+url.Values{"next": {bad}}.Encode(), "", "")
		expectPage(t, form, http.StatusOK)
		require.Contains(t, form.Body, `data-next="/"`, "%q", bad)
		require.NotContains(t, form.Body, "evil", "%q", bad)
		// A signed-in browser sent to the login page goes on at once.
		r = call(t, env, "GET", "/login?"+url.Values{"next": {bad}}.Encode(), "", "", cookie(session)...)
		require.Equal(t, "/", r.Header.Get("Location"), "%q", bad)
	}
	r = call(t, env, "GET", "/login?next=%2Fkeys", "", "", cookie(session)...)
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.Equal(t, "/keys", r.Header.Get("Location"))

	// Programs get the token, never a redirect.
	r = logIn("/keys", "Accept", "application/json")
	require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
	require.Empty(t, r.Header.Get("Location"))
	require.Contains(t, r.Body, `"access_token":"st_`)
}

// TestEmptyAppsPageOffersTheExample: an account without apps is offered
// the example app, served from the binary, which imports with the
// session cookie from the page's origin; once there are apps the offer
// is gone.
func TestEmptyAppsPageOffersTheExample(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, nil)
	session := signup(t, env, "ann@example.com")
	empty := call(t, env, "GET", "/", "", "", cookie(session)...)
	expectPage(t, empty, http.StatusOK)
	require.Contains(t, empty.Body, `<form class="example" data-example-form data-manifest="/examples/support-desk.json"`)
	require.Contains(t, empty.Body, "Import the example app")

	example := call(t, env, "GET", "/examples/support-desk.json", "", "")
	require.Equal(t, http.StatusOK, example.StatusCode)
	require.Equal(t, "application/json", example.Header.Get("Content-Type"))
	require.Equal(t, "nosniff", example.Header.Get("X-Content-Type-Options"))
	require.Equal(t, exampleManifest(t), example.Body, "the file in examples/, from the binary")

	same := append(cookie(session), "Sec-Fetch-Site", "same-origin", "Origin", env.URL, "Accept", "application/json")
	r := call(t, env, "POST", "/api/v1/apps/import-manifest", "application/json", example.Body, same...)
	require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
	home := call(t, env, "GET", "/", "", "", cookie(session)...)
	require.Contains(t, home.Body, "Support Desk")
	require.NotContains(t, home.Body, "data-example-form")
}

// TestPagesHeadersAndIsolation serves every page with its security headers
// and without inline script, on both databases; another user's app page
// is a 404 page.
func TestPagesHeadersAndIsolation(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		env := webtest.Start(t, d, nil)
		ann := signup(t, env, "ann@example.com")
		bob := signup(t, env, "bob@example.com")
		appID, entry := importApp(t, env, ann)
		require.True(t, strings.HasSuffix(entry, "/apps/"+appID), "entry_point_url %s leads to the app's page", entry)

		for _, path := range []string{"/login", "/register", "/login?registered=1"} {
			expectPage(t, call(t, env, "GET", path, "", ""), http.StatusOK)
		}
		home := call(t, env, "GET", "/", "", "", cookie(ann)...)
		expectPage(t, home, http.StatusOK)
		require.Contains(t, home.Body, "Support Desk")
		require.Contains(t, home.Body, `href="/apps/`+appID+`"`)
		require.Contains(t, home.Body, "ann@example.com")
		page := call(t, env, "GET", "/apps/"+appID, "", "", cookie(ann)...)
		expectPage(t, page, http.StatusOK)
		require.Contains(t, page.Body, "triage")
		require.Contains(t, page.Body, "escalation-router")
		expectPage(t, call(t, env, "GET", "/keys", "", "", cookie(ann)...), http.StatusOK)
		empty := call(t, env, "GET", "/", "", "", cookie(bob)...)
		expectPage(t, empty, http.StatusOK)
		require.Contains(t, empty.Body, "No apps yet")

		// Bob sees no trace of Ann's app: the same page as for an app
		// that does not exist, not the API's JSON.
		for _, path := range []string{"/apps/" + appID, "/apps/0190aaaa-0000-7000-8000-000000000000", "/apps/not-an-id"} {
			r := call(t, env, "GET", path, "", "", cookie(bob)...)
			expectPage(t, r, http.StatusNotFound)
			require.Contains(t, r.Body, "Not found")
			require.NotContains(t, r.Body, "Support Desk")
		}
		// Ann's list does not leak to Bob's ?imported= notice either.
		require.NotContains(t, call(t, env, "GET", "/?imported="+appID, "", "", cookie(bob)...).Body, "Support Desk")
	})
}

// TestPagesFormsAreCSRFProtected: a form on another site cannot use the
// session cookie to change anything; the same form from the UI's origin
// can.
func TestPagesFormsAreCSRFProtected(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, nil)
	session := signup(t, env, "ann@example.com")
	cross := append(cookie(session), "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	r := call(t, env, "POST", "/api/v1/apps/import-manifest", "application/json", exampleManifest(t), cross...)
	require.Equal(t, http.StatusForbidden, r.StatusCode, r.Body)
	r = call(t, env, "POST", "/api/v1/auth/logout", "application/x-www-form-urlencoded", "", cross...)
	require.Equal(t, http.StatusForbidden, r.StatusCode, r.Body)
	require.Equal(t, http.StatusOK, call(t, env, "GET", "/", "", "", cookie(session)...).StatusCode, "the session survived")

	same := append(cookie(session), "Sec-Fetch-Site", "same-origin", "Origin", env.URL)
	r = call(t, env, "POST", "/api/v1/auth/logout", "application/x-www-form-urlencoded", "", same...)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	require.Equal(t, "/login", r.Header.Get("Location"))
	require.Equal(t, http.StatusSeeOther, call(t, env, "GET", "/", "", "", cookie(session)...).StatusCode, "logged out")
}

// TestStaticFiles are served from the binary, with the headers of pages.
func TestStaticFiles(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, nil)
	for path, ctype := range map[string]string{"/static/app.js": "text/javascript; charset=utf-8", "/static/app.css": "text/css; charset=utf-8"} {
		r := call(t, env, "GET", path, "", "")
		require.Equal(t, 200, r.StatusCode)
		require.Equal(t, ctype, r.Header.Get("Content-Type"))
		require.Equal(t, wantCSP, r.Header.Get("Content-Security-Policy"))
		require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"))
		require.NotContains(t, r.Body, "http://", "nothing from elsewhere")
	}
	require.Equal(t, 404, call(t, env, "GET", "/static/missing.js", "", "").StatusCode)
	require.Equal(t, 404, call(t, env, "GET", "/static/", "", "").StatusCode, "no directory listing")
}
