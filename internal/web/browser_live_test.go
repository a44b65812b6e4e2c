package web_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/webtest"
)

// waiterAgent is a JavaScript agent that waits on a fetch of url, which
// answers only when the request goes away: it runs until it is cancelled
// (or for the fetch's 10 s at most). A promise that never settles would
// not do: the sandbox ends a run at once when nothing is left that could
// settle it.
func waiterAgent(t testing.TB, url string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"name": "waiter", "agent_type_id": "custom", "timeout_seconds": 600,
		"agent_config": map[string]any{"runtime": "javascript",
			"code": "async function run(input, ctx) { await ctx.http.fetch(" + strconv.Quote(url) + "); return 'late'; }"}})
	require.NoError(t, err)
	return string(b)
}

// hangingServer is the "outside world" (egresstest) with one URL that
// answers when its request goes away, or when the test ends.
func hangingServer(t testing.TB) string {
	t.Helper()
	done := make(chan struct{})
	srv := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done) })
	return srv.URL + "/hang"
}

// logIn logs the browser in through the login page.
func logIn(b *webtest.Browser, email string) {
	b.T.Helper()
	b.Open("/login")
	b.Fill("#email", email)
	b.Fill("#password", "password1")
	b.Click(`button[type=submit]`)
	b.WaitPath("/")
}

// TestBrowserActivateCancelAndRun is running things from the UI, in a real
// browser, on both databases: activate the example's LLM agent with JSON
// input (a bad one first, its error beside the field) and watch its answer
// arrive without a reload, in the result and in the history; open the
// activation's page; cancel a JavaScript agent that would wait forever and
// see it end failed; run the example's function (a bad input first) and
// see its output and history row.
func TestBrowserActivateCancelAndRun(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		hang := hangingServer(t)
		env := webtest.Start(t, d, map[string]string{"AP_EGRESS_ALLOW": egresstest.Allow})
		session := signup(t, env, "ann@example.com")
		appID, _ := importApp(t, env, session)
		r := call(t, env, "POST", "/api/v1/apps/"+appID+"/agents", "application/json", waiterAgent(t, hang), "Authorization", "Bearer "+session)
		require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
		triage := agentID(t, env, session, appID, "triage")
		waiter := agentID(t, env, session, appID, "waiter")

		b := webtest.NewBrowser(t, env.URL, webtest.Options{})
		logIn(b, "ann@example.com")
		b.Open("/apps/" + appID)
		b.WaitText("h1", "Support Desk")
		b.WaitText("[data-empty=activations]", "No activations yet")
		b.Shot("app-no-activations")
		// Set on this document: still there at the end means no reload.
		require.True(t, webtest.Eval[bool](b, `window.sameDocument = true`))

		form := "#agent-" + triage + " form[data-activate-form]"
		b.Fill(form+" textarea", `{"prompt": "My invoice`)
		b.Click(form + " button[type=submit]")
		b.WaitText(form+" [data-error-for=input_data]", "not valid JSON")
		require.Equal(t, "true", webtest.Eval[string](b, `document.querySelector("#input-`+triage+`").getAttribute("aria-invalid")`))
		b.Fill(form+" textarea", `["a list"]`)
		b.Click(form + " button[type=submit]")
		b.WaitText(form+" [data-error-for=input_data]", "must be a JSON object")
		b.Shot("activate-error")

		// What the output shows along the way: the answer grows token by
		// token before the final record.
		result := "#agent-" + triage + " [data-result]"
		require.True(t, webtest.Eval[bool](b, `(() => { window.shown = [];
			new MutationObserver(rs => rs.forEach(r => r.addedNodes.forEach(n => window.shown.push(n.textContent))))
				.observe(document.querySelector("`+result+` [data-result-output]"), {childList: true});
			return true; })()`))
		b.Fill(form+" textarea", `{"prompt": "My invoice is wrong"}`)
		b.Click(form + " button[type=submit]")
		b.WaitText(result+" [data-result-output]", "echo: My invoice is wrong")
		shown := webtest.Eval[[]string](b, `window.shown`)
		require.Contains(t, shown, "echo: My ", "a partial answer was shown: %q", shown)
		b.WaitText(result+" [data-result-meta]", "completed")
		require.Empty(t, webtest.Eval[string](b, `document.querySelector("#input-`+triage+`-error").textContent`), "the error went")
		row := "[data-list=activations] tbody tr:first-child"
		b.WaitText(row+" [data-cell=status]", "completed")
		text := b.Text(row)
		require.Contains(t, text, "triage")
		require.Contains(t, text, "echo: My invoice is wrong")
		require.NotContains(t, text, "Cancel")
		require.True(t, webtest.Eval[bool](b, `window.sameDocument === true`), "no reload")
		b.Shot("activated")

		// The activation's page: its input, output and links.
		b.Click(result + " [data-result-meta] a")
		b.WaitText("h1", "Activation of triage")
		require.True(t, strings.HasPrefix(b.Path(), "/apps/"+appID+"/activations/"), b.Path())
		b.WaitText("[data-field=status]", "completed")
		b.WaitText("[data-field=response]", "echo: My invoice is wrong")
		require.Contains(t, b.Text("main"), `"prompt": "My invoice is wrong"`)
		b.WaitText("[data-empty=logs]", "No logs")
		require.NotEmpty(t, webtest.Eval[string](b, `document.querySelector("main time").title`), "shown in local time")
		b.Shot("activation")
		b.Click(".facts a[href$='#agent-" + triage + "']")
		b.WaitPath("/apps/" + appID)

		// Cancel an agent that would wait forever: it ends failed, in the
		// history and in its result.
		form = "#agent-" + waiter + " form[data-activate-form]"
		b.Fill(form+" textarea", `{"ticket": 1}`)
		b.Click(form + " button[type=submit]")
		b.WaitText(row, "waiter")
		b.WaitText(row+" [data-cell=status]", "running")
		b.Shot("running")
		b.Click(row + " button[data-cancel]")
		b.WaitText(row+" [data-cell=status]", "failed")
		b.WaitText(row+" [data-cell=preview]", "Activation cancelled")
		b.WaitText("#agent-"+waiter+" [data-result-error]", "Activation cancelled")
		b.WaitText("#agent-"+waiter+" [data-result-meta]", "failed")
		require.Zero(t, webtest.Eval[int](b, `document.querySelectorAll("button[data-cancel]").length`), "nothing left to cancel")
		b.Shot("cancelled")

		// After a reload the history is the server's: the same.
		b.Open("/apps/" + appID)
		history := b.WaitText("[data-list=activations]", "Activation cancelled")
		require.Contains(t, history, "echo: My invoice is wrong")
		require.Equal(t, 2, webtest.Eval[int](b, `document.querySelectorAll("[data-list=activations] tbody tr").length`))
		b.Click(row + " a[href*='/activations/']")
		b.WaitText("[data-field=error]", "Activation cancelled")
		b.WaitText("[data-field=status]", "failed")
		b.Shot("cancelled-activation")

		// An activation's page follows it live too, and cancels it.
		running := activate(t, env, session, appID, waiter, `{"ticket": 2}`, false)
		b.Open("/apps/" + appID + "/activations/" + running)
		b.WaitText("[data-field=status]", "running")
		b.WaitText("[data-empty=output]", "Waiting for the agent")
		b.Shot("running-activation")
		b.Click("button[data-cancel]")
		b.WaitText("[data-field=status]", "failed")
		b.WaitText("[data-field=error]", "Activation cancelled")
		b.WaitText("[data-field=duration]", "s")
		b.WaitText("[data-empty=output]", "No output")
		require.Zero(t, webtest.Eval[int](b, `document.querySelectorAll("button[data-cancel]").length`))

		// Functions: run one, a bad input first.
		b.Open("/apps/" + appID)
		b.Click(`nav.tabs a[href$="/functions"]`)
		b.WaitPath("/apps/" + appID + "/functions")
		b.WaitText("[data-list=functions]", "normalize-ticket")
		b.WaitText("[data-empty=executions]", "No executions yet")
		b.Shot("functions")
		require.True(t, webtest.Eval[bool](b, `window.sameDocument = true`))
		fn := "[data-list=functions] li:first-child"
		b.Fill(fn+" textarea", `{"subject": "Refund", "body": "x", "customer_email": "not an email"}`)
		b.Click(fn + " button[type=submit]")
		b.WaitText(fn+" [data-error-for=input]", "customer_email")
		b.Shot("function-error")
		b.Fill(fn+" textarea", `{"subject": "  Refund please ", "body": " My invoice is wrong ", "customer_email": "Ann@Example.COM"}`)
		b.Click(fn + " button[type=submit]")
		b.WaitText(fn+" [data-result-output]", `"customer_email": "ann@example.com"`)
		b.WaitText(fn+" [data-result-meta]", "completed")
		require.Contains(t, b.Text(fn+" [data-result-output]"), `"subject": "Refund please"`)
		erow := b.WaitText("[data-list=executions] tbody tr:first-child", "normalize-ticket")
		require.Contains(t, erow, "completed")
		require.Contains(t, erow, "ann@example.com")
		require.True(t, webtest.Eval[bool](b, `window.sameDocument === true`), "no reload")
		b.Shot("function-run")

		b.Open("/apps/" + appID + "/functions")
		erow = b.WaitText("[data-list=executions] tbody tr:first-child", "normalize-ticket")
		require.Contains(t, erow, "completed")
		require.Equal(t, 1, webtest.Eval[int](b, `document.querySelectorAll("[data-list=executions] tbody tr").length`), "the refused input ran nothing")
		b.Click("[data-list=executions] summary")
		b.WaitText("[data-list=executions] pre.output", `"priority": "normal"`)
		b.Shot("function-history")
	})
}

// TestBrowserLivePhoneWidth: at a phone's width the app page with its
// forms and history, an activation's page and the functions page fit:
// nothing needs sideways scrolling.
func TestBrowserLivePhoneWidth(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, nil)
	session := signup(t, env, "ann@example.com")
	appID, _ := importApp(t, env, session)
	act := activate(t, env, session, appID, agentID(t, env, session, appID, "triage"),
		`{"prompt": "`+strings.Repeat("a-long-word-without-spaces-", 12)+`"}`, true)
	r := call(t, env, "POST", "/api/v1/apps/"+appID+"/functions/"+functionID(t, env, session, appID)+"/execute", "application/json",
		`{"input": {"subject": "s", "body": "b", "customer_email": "ann@example.com"}}`, "Authorization", "Bearer "+session)
	require.Equal(t, http.StatusOK, r.StatusCode, r.Body)

	b := webtest.NewBrowser(t, env.URL, webtest.Options{Width: 390, Height: 844})
	logIn(b, "ann@example.com")
	for _, path := range []string{"/apps/" + appID, "/apps/" + appID + "/activations/" + act, "/apps/" + appID + "/functions"} {
		b.Open(path)
		b.WaitText("main", "Support Desk")
		b.NoHorizontalOverflow()
		b.Shot("phone" + path)
	}
	// The history's rows stack, each cell labelled.
	b.Open("/apps/" + appID)
	require.Equal(t, "block", webtest.Eval[string](b, `getComputedStyle(document.querySelector("[data-list=activations] td")).display`))
	b.WaitText("[data-list=activations] tbody tr", "completed")
}

// functionID is the id of the example's function.
func functionID(t testing.TB, env *webtest.Env, session, appID string) string {
	t.Helper()
	r := call(t, env, "GET", "/api/v1/functions?app_id="+appID, "", "", "Authorization", "Bearer "+session)
	require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
	i := strings.Index(r.Body, `"function_id":"`)
	require.GreaterOrEqual(t, i, 0, r.Body)
	id := r.Body[i+len(`"function_id":"`):]
	return id[:strings.IndexByte(id, '"')]
}
