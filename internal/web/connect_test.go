package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/tool/mcptest"
	"github.com/agentplatform/agentplatform/internal/webtest"
)

// goneURL is an MCP URL in the outside world where nothing listens.
func goneURL(t testing.TB) string {
	t.Helper()
	ln := egresstest.Listen(t)
	url := "http://" + ln.Addr().String() + "/mcp"
	require.NoError(t, ln.Close())
	return url
}

// addMCPServer declares an MCP server in the app through the API; its id.
func addMCPServer(t testing.TB, env *webtest.Env, session, appID, name, url string) string {
	t.Helper()
	body, err := json.Marshal(map[string]string{"name": name, "url": url})
	require.NoError(t, err)
	r := call(t, env, "POST", "/api/v1/apps/"+appID+"/mcp-servers", "application/json", string(body), "Authorization", "Bearer "+session)
	require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
	var out struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Body), &out))
	return out.ID
}

// hostile is what a remote MCP server might say of a tool to break into
// the page that lists it.
const hostile = `<img src=x data-pwned onerror="window.pwned=1"><script>window.pwned=1</script>`

// hostileServer is an MCP server in the outside world whose one tool,
// peek, is described by hostile; its MCP URL.
func hostileServer(t testing.TB) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "peek", Description: hostile, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	hs := egresstest.NewServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return hs.URL + "/mcp"
}

// mcpEnv is a platform that may reach the outside world (egresstest),
// with Ann's example app declaring two MCP servers: docs, a real go-sdk
// server, and gone, where nothing listens.
type mcpEnv struct {
	env             *webtest.Env
	srv             *mcptest.Server
	session, appID  string
	docsID, goneID  string
	mcpURL, openAIs string
}

func startMCPEnv(t testing.TB, d store.Dialect) mcpEnv {
	t.Helper()
	e := mcpEnv{srv: mcptest.New(t, mcptest.Options{})}
	e.env = webtest.Start(t, d, map[string]string{"AP_EGRESS_ALLOW": egresstest.Allow})
	e.session = signup(t, e.env, "ann@example.com")
	e.appID, _ = importApp(t, e.env, e.session)
	e.docsID = addMCPServer(t, e.env, e.session, e.appID, "docs", e.srv.URL)
	e.goneID = addMCPServer(t, e.env, e.session, e.appID, "gone", goneURL(t))
	// AP_PUBLIC_URL is the test server's URL (webtest.Start).
	e.mcpURL = e.env.URL + "/api/v1/apps/" + e.appID + "/mcp"
	e.openAIs = e.env.URL + "/api/v1/openai"
	return e
}

// TestBrowserAppConnect is the app page's Connect and MCP servers
// sections in a real browser, on both databases: the app's MCP URL, the
// OpenAI base URL and its LLM agents' model names, the client
// configurations filled in; the MCP servers, whose tools are listed only
// when asked (not while the page renders), from the real remote server;
// a server that is down shows why, and the page goes on working.
func TestBrowserAppConnect(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := startMCPEnv(t, d)
		b := webtest.NewBrowser(t, e.env.URL, webtest.Options{})
		logIn(b, "ann@example.com")
		b.Open("/apps/" + e.appID)
		b.WaitText("h1", "Support Desk")

		require.Equal(t, e.mcpURL, b.Text("[data-connect=mcp-url]"))
		require.Equal(t, e.openAIs, b.Text("[data-connect=openai-base-url]"))
		models := webtest.Eval[[]string](b, `Array.from(document.querySelectorAll("[data-connect=models] li"), li => li.innerText)`)
		slices.Sort(models)
		require.Equal(t, []string{"support-desk/front-desk", "support-desk/triage"}, models, "the LLM agents only")

		// The snippets are the README's, with this app's URL.
		b.Click(`details.snippet:nth-of-type(1) summary`)
		b.Click(`details.snippet:nth-of-type(2) summary`)
		var cursor, claude map[string]any
		require.NoError(t, json.Unmarshal([]byte(b.Text("[data-snippet=cursor]")), &cursor))
		require.Equal(t, map[string]any{"mcpServers": map[string]any{"support-desk": map[string]any{
			"url": e.mcpURL, "headers": map[string]any{"Authorization": "Bearer ak_…"}}}}, cursor)
		require.NoError(t, json.Unmarshal([]byte(b.Text("[data-snippet=claude]")), &claude))
		require.Equal(t, map[string]any{"mcpServers": map[string]any{"support-desk": map[string]any{
			"command": "npx", "args": []any{"mcp-remote", e.mcpURL, "--header", "Authorization: Bearer ak_…"}}}}, claude)

		docs := `[data-mcp-server="docs"]`
		gone := `[data-mcp-server="gone"]`
		require.Contains(t, b.Text(docs), e.srv.URL)
		require.Contains(t, b.Text(docs), "none", "no authenticator")
		require.Zero(t, e.srv.Lists(), "the page lists no tools while it renders")

		b.Click(docs + " button[data-show-tools]")
		tools := b.WaitText(docs+" [data-mcp-tools]", "docs_echo")
		for _, want := range []string{"docs_fail", "docs_slow", "docs_look_up", "Echoes its arguments"} {
			require.Contains(t, tools, want)
		}
		require.EqualValues(t, 1, e.srv.Lists())
		require.Equal(t, "true", webtest.Eval[string](b, `document.querySelector('`+docs+` button[data-show-tools]').getAttribute("aria-expanded")`))
		b.Click(docs + " [data-mcp-tools] details.schema summary")
		b.WaitText(docs+" [data-mcp-tools] pre", `"text"`)

		b.Click(gone + " button[data-show-tools]")
		failed := b.WaitText(gone+" [data-mcp-error]", "Could not list the tools")
		require.Contains(t, failed, "MCP server gone: connecting to")
		require.Contains(t, b.Text(docs+" [data-mcp-tools]"), "docs_echo", "the other server's tools stay")
		b.Shot("app-connect")

		// Hide, then show again: listed anew.
		b.Click(docs + " button[data-show-tools]")
		b.Until(`document.querySelector('`+docs+` [data-mcp-tools]').hidden`, "the tools hidden")
		b.Click(docs + " button[data-show-tools]")
		b.WaitText(docs+" [data-mcp-tools]", "docs_echo")
		require.EqualValues(t, 2, e.srv.Lists())

		// At a phone's width, with the snippets and tools open, nothing
		// needs sideways scrolling (a snippet's long lines scroll inside).
		b.Do(chromedp.EmulateViewport(390, 844))
		b.NoHorizontalOverflow()
		b.Shot("app-connect-phone")

		// What a remote server says is text, never markup.
		addMCPServer(t, e.env, e.session, e.appID, "odd", hostileServer(t))
		b.Open("/apps/" + e.appID)
		odd := `[data-mcp-server="odd"]`
		b.Click(odd + " button[data-show-tools]")
		b.WaitText(odd+" [data-mcp-tools]", hostile)
		require.Zero(t, webtest.Eval[int](b, `document.querySelectorAll("[data-pwned], [data-mcp-tools] script").length`))
		require.True(t, webtest.Eval[bool](b, `window.pwned === undefined`))
	})
}

// TestMCPToolsFragment: the tools route is the app owner's, for a
// session, from the UI's own origin only; the app page shows its
// sections without listing anything.
func TestMCPToolsFragment(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := startMCPEnv(t, d)
		env := e.env
		path := "/apps/" + e.appID + "/mcp-servers/" + e.docsID + "/tools"
		same := func(session string) []string {
			return append(cookie(session), "Sec-Fetch-Site", "same-origin", "Origin", env.URL)
		}

		page := call(t, env, "GET", "/apps/"+e.appID, "", "", cookie(e.session)...)
		expectPage(t, page, http.StatusOK)
		require.Contains(t, page.Body, e.mcpURL)
		require.Contains(t, page.Body, e.openAIs)
		require.Contains(t, page.Body, "support-desk/triage")
		require.Contains(t, page.Body, `data-show-tools="`+path+`"`)
		require.Zero(t, e.srv.Lists())

		r := call(t, env, "POST", path, "", "", same(e.session)...)
		require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
		require.Equal(t, "text/html; charset=utf-8", r.Header.Get("Content-Type"))
		require.Contains(t, r.Body, "docs_echo")
		require.Contains(t, r.Body, "data-mcp-tools-list")
		require.EqualValues(t, 1, e.srv.Lists())

		r = call(t, env, "POST", "/apps/"+e.appID+"/mcp-servers/"+e.goneID+"/tools", "", "", same(e.session)...)
		require.Equal(t, http.StatusOK, r.StatusCode, "a server down is no error page: %s", r.Body)
		require.Contains(t, r.Body, "Could not list the tools")

		// Without a session cookie (a Bearer token is no page's
		// credential): the login page.
		r = call(t, env, "POST", path, "", "", "Sec-Fetch-Site", "same-origin", "Origin", env.URL)
		require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
		r = call(t, env, "POST", path, "", "", "Authorization", "Bearer "+e.session)
		require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
		// From another site: refused before anything is listed.
		r = call(t, env, "POST", path, "", "", append(cookie(e.session), "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")...)
		require.Equal(t, http.StatusForbidden, r.StatusCode, r.Body)
		// A link cannot list (GET).
		r = call(t, env, "GET", path, "", "", cookie(e.session)...)
		require.Equal(t, http.StatusMethodNotAllowed, r.StatusCode, r.Body)
		// Another user's app, and a server of no app: not found.
		bob := signup(t, env, "bob@example.com")
		r = call(t, env, "POST", path, "", "", same(bob)...)
		expectPage(t, r, http.StatusNotFound)
		r = call(t, env, "POST", "/apps/"+e.appID+"/mcp-servers/0190aaaa-0000-7000-8000-000000000000/tools", "", "", same(e.session)...)
		expectPage(t, r, http.StatusNotFound)
		require.EqualValues(t, 1, e.srv.Lists(), "only Ann's one listing reached the server")

		// An app without MCP servers says how to add them.
		bobApp, _ := importApp(t, env, bob)
		page = call(t, env, "GET", "/apps/"+bobApp, "", "", cookie(bob)...)
		expectPage(t, page, http.StatusOK)
		require.Contains(t, page.Body, "No MCP servers in this app")
	})
}
