package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/webtest"
)

// decoded is an answer's JSON body.
func decoded(t testing.TB, r answer) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.Body), &out), r.Body)
	return out
}

// routeTicket runs the example's custom agent escalation-router for
// session, waiting for its end (Prefer: wait), and answers its output: it
// records the ticket in the app's tickets model (ctx.data) and routes it.
func routeTicket(t testing.TB, env *webtest.Env, session, appID string, ticket map[string]any) map[string]any {
	t.Helper()
	bearer := []string{"Authorization", "Bearer " + session}
	agents := decoded(t, call(t, env, "GET", "/api/v1/apps/"+appID+"/agents", "", "", bearer...))
	router := ""
	for _, a := range agents["agents"].([]any) {
		if a := a.(map[string]any); a["name"] == "escalation-router" {
			router = a["agent_id"].(string)
		}
	}
	require.NotEmpty(t, router, "the example has escalation-router")
	body, err := json.Marshal(map[string]any{"input_data": ticket})
	require.NoError(t, err)
	r := call(t, env, "POST", "/api/v1/agents/"+router+"/activate", "application/json", string(body), append(bearer, "Prefer", "wait=60")...)
	require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
	id := decoded(t, r)["activation_id"].(string)
	done := decoded(t, call(t, env, "GET", "/api/v1/activations/"+id, "", "", bearer...))
	require.Equal(t, "completed", done["status"], "%v", done["error"])
	return done["output_data"].(map[string]any)
}

// addTicket records a ticket through the data API; its item id.
func addTicket(t testing.TB, env *webtest.Env, session, appID string, data map[string]any) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"data": data})
	require.NoError(t, err)
	r := call(t, env, "POST", "/api/v1/data/"+appID+"/tickets", "application/json", string(body), "Authorization", "Bearer "+session)
	require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
	return decoded(t, r)["item_id"].(string)
}

// firstCell is the text of the records table's first row in column label.
func firstCell(b *webtest.Browser, label string) string {
	b.T.Helper()
	return webtest.Eval[string](b, `document.querySelector('[data-list=records] tbody tr td[data-label="`+label+`"]').innerText`)
}

// TestBrowserDataExplorer: the example's custom agent records a ticket,
// and the data explorer shows it among the model's records; sorting by a
// column, filtering with the form and paging change the table, each view
// with its own URL; a bad filter is said beside the field. Both databases.
func TestBrowserDataExplorer(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		env := webtest.Start(t, d, nil)
		session := signup(t, env, "ann@example.com")
		appID, _ := importApp(t, env, session)
		out := routeTicket(t, env, session, appID, map[string]any{"subject": "Refund for a double charge",
			"body": "I was charged twice this month.", "customer_email": "grace@example.com", "priority": "high"})
		require.Equal(t, "billing", out["team"])
		itemID := out["item_id"].(string)
		addTicket(t, env, session, appID, map[string]any{"subject": "App crashes on start", "body": "Every time.",
			"customer_email": "lin@example.com", "priority": "urgent", "reopen_count": 2, "triage": map[string]any{"bug": true}})
		addTicket(t, env, session, appID, map[string]any{"subject": "Question about plans", "body": "Which one?",
			"customer_email": "sam@example.com", "priority": "low", "due_at": "2026-12-01T09:30:00Z"})

		b := webtest.NewBrowser(t, env.URL, webtest.Options{})
		logIn(b, "ann@example.com")
		b.Open("/apps/" + appID)
		b.Click(`nav.tabs a[href$="/data"]`)
		base := "/apps/" + appID + "/data"
		b.WaitPath(base)
		models := b.WaitText("[data-list=models]", "Tickets")
		require.Contains(t, models, "12 fields · 3 records")
		b.WaitText("#model-heading", "Tickets")
		row := b.WaitText(`[data-list=records] tr[data-item-id="`+itemID+`"]`, "Refund for a double charge")
		require.Contains(t, row, "echo: Refund for a double charge", "the summary the agent wrote")
		require.Contains(t, row, "billing")
		require.Contains(t, b.Text("#records-summary"), "1–3 of 3 records, newest first")
		require.Equal(t, "Question about plans", firstCell(b, "subject"), "newest first")
		// Timestamps are <time> elements shown in the browser's time zone
		// (app.js replaced the server's UTC text).
		b.Until(`(() => { const t = document.querySelector('[data-list=records] td[data-label=Created] time'); return !!t.getAttribute("datetime") && !t.innerText.includes("UTC"); })()`,
			"record times in local time")
		require.Contains(t, b.Text(`[data-list=records] tbody tr:first-child td[data-label=due_at]`), "2026")
		b.Click("details.fields summary")
		fields := b.WaitText("[data-list=fields]", "customer_email")
		require.Contains(t, fields, "urgent", "an enum's values")
		require.Contains(t, fields, "required")
		b.Shot("data")

		// Sort by a column: ascending, then descending.
		b.Click(`th a[href*="sort=subject"]`)
		b.WaitText("#records-summary", "subject, ascending")
		require.Equal(t, "ascending", webtest.Eval[string](b, `document.querySelector("th[aria-sort]").getAttribute("aria-sort")`))
		require.Equal(t, "App crashes on start", firstCell(b, "subject"))
		require.Contains(t, b.Path(), "sort=subject")
		b.Click(`th[aria-sort] a`)
		b.WaitText("#records-summary", "subject, descending")
		require.Equal(t, "Refund for a double charge", firstCell(b, "subject"))
		require.Contains(t, b.Path(), "sort=-subject")
		b.Shot("data-sorted")
		// A wide table scrolls in its frame: the page does not.
		b.NoHorizontalOverflow()

		// Filter with the form: the sort stays, the view has its URL.
		b.SetValue("#filter-field", "priority")
		b.Fill("#filter-value", "high")
		b.Click(`#query-form button[type=submit]`)
		b.WaitText("#records-summary", "1–1 of 1 matching record,")
		require.Contains(t, b.Path(), "filter%5Bpriority%5D=high")
		require.Contains(t, b.Path(), "sort=-subject")
		table := b.Text("[data-list=records]")
		require.Contains(t, table, "Refund for a double charge")
		require.NotContains(t, table, "App crashes")
		require.Contains(t, b.Text(".chips"), "priority = high")
		filtered := b.Path()
		b.Shot("data-filtered")

		// A filter the field's type cannot read: said beside the value,
		// the page still there.
		b.SetValue("#filter-field", "reopen_count")
		b.Fill("#filter-value", "many")
		b.Click(`#query-form button[type=submit]`)
		b.WaitText("#filter_value-error", "expected a number")
		require.Equal(t, "true", webtest.Eval[string](b, `document.querySelector("#filter-value").getAttribute("aria-invalid")`))
		require.Equal(t, "many", webtest.Eval[string](b, `document.querySelector("#filter-value").value`), "kept to correct")
		b.Shot("data-bad-filter")

		// The shared link shows the same view; removing the filter shows
		// every record again.
		b.Open(filtered)
		b.WaitText("#records-summary", "1–1 of 1 matching record,")
		b.Click(`.chips a`)
		b.WaitText("#records-summary", "1–3 of 3 records, subject, descending")

		// Pages: two records a page.
		b.Open(base + "?model=tickets&limit=2&sort=subject")
		b.WaitText("#records-summary", "1–2 of 3 records")
		require.Contains(t, b.Text(".pager"), "Page 1 of 2")
		b.Click(`.pager a[rel=next]`)
		b.WaitText("#records-summary", "3–3 of 3 records")
		require.Equal(t, "Refund for a double charge", firstCell(b, "subject"))
		b.Click(`.pager a[rel=prev]`)
		b.WaitText("#records-summary", "1–2 of 3 records")
		b.Shot("data-paged")

		// A filter that matches nothing: the empty state, and a way back.
		b.Open(base + "?model=tickets&filter[customer_email]=nobody@example.com")
		b.WaitText("[data-empty=records]", "No records match")
		b.Shot("data-no-match")
	})
}

// TestBrowserDataPhoneWidth: the data explorer and the connections page
// fit a phone's width (the records table turns into stacked rows).
func TestBrowserDataPhoneWidth(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, nil)
	session := signup(t, env, "phone@example.com")
	appID, _ := importApp(t, env, session)
	addTicket(t, env, session, appID, map[string]any{"subject": strings.Repeat("a rather long subject ", 6), "body": "Body.",
		"customer_email": "someone.with.a.long.address@subdomain.example.com", "priority": "normal",
		"triage": map[string]any{"notes": strings.Repeat("long-json-value-", 10)}})

	b := webtest.NewBrowser(t, env.URL, webtest.Options{Width: 390, Height: 844})
	logIn(b, "phone@example.com")
	for _, path := range []string{"/apps/" + appID + "/data", "/apps/" + appID + "/connections"} {
		b.Open(path)
		b.WaitText("main h1", "Support Desk")
		b.NoHorizontalOverflow()
		b.Shot("phone" + path)
	}
	b.Open("/apps/" + appID + "/data")
	b.Click("details.fields summary")
	b.WaitText("[data-list=fields]", "customer_email")
	b.NoHorizontalOverflow()
}

// TestDataPages: the explorer's pages on both databases: security headers
// and no inline script; another user's app, or none, is the 404 page;
// without a session, the login page; a bad query is a page that says what
// is wrong (400, or 404 for a model the app lacks), never a 500; the
// form's submission lands on the view's canonical URL; values are
// escaped.
func TestDataPages(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		env := webtest.Start(t, d, nil)
		ann := signup(t, env, "ann@example.com")
		bob := signup(t, env, "bob@example.com")
		appID, _ := importApp(t, env, ann)
		addTicket(t, env, ann, appID, map[string]any{"subject": `<script>alert("x")</script>`, "body": "<b>bold</b>",
			"customer_email": "a@example.com", "priority": "low"})
		base := "/apps/" + appID + "/data"

		page := call(t, env, "GET", base, "", "", cookie(ann)...)
		expectPage(t, page, http.StatusOK)
		require.Contains(t, page.Body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
		require.Contains(t, page.Body, "&lt;b&gt;bold&lt;/b&gt;")
		require.Contains(t, page.Body, `src="/static/data.js?v=`)
		require.Contains(t, page.Body, "1 record")

		for _, path := range []string{base, base + "?model=tickets", base + "?model=nope"} {
			r := call(t, env, "GET", path, "", "", cookie(bob)...)
			expectPage(t, r, http.StatusNotFound)
			require.Contains(t, r.Body, "Not found")
			require.NotContains(t, r.Body, "Support Desk")
			r = call(t, env, "GET", path, "", "")
			require.Equal(t, http.StatusSeeOther, r.StatusCode)
			require.Equal(t, loginFor(path), r.Header.Get("Location"))
		}
		r := call(t, env, "GET", "/apps/not-an-id/data", "", "", cookie(ann)...)
		expectPage(t, r, http.StatusNotFound)

		for _, c := range []struct {
			query  string
			status int
			says   string
		}{
			{"model=nope", 404, "This app has no data model &#34;nope&#34;"},
			{"model=tickets&sort=colour", 400, "&#34;colour&#34; is not a field of model tickets"},
			{"model=tickets&sort=-triage", 400, "a json field has no order"},
			{"model=tickets&filter[colour]=red", 400, "&#34;colour&#34; is not a field of model tickets"},
			{"model=tickets&filter[reopen_count]=many", 400, "expected a number"},
			{"model=tickets&filter[escalated]=maybe", 400, "expected true or false"},
			{"model=tickets&filter[triage]=x", 400, "a json field cannot be filtered on"},
			{"model=tickets&limit=0", 400, "Records per page must be a whole number from 1 to 100"},
			{"model=tickets&limit=1001", 400, "Records per page must be a whole number from 1 to 100"},
			{"model=tickets&limit=ten", 400, "Records per page must be a whole number"},
			{"model=tickets&offset=-1", 400, "offset must be a whole number"},
		} {
			r := call(t, env, "GET", base+"?"+c.query, "", "", cookie(ann)...)
			expectPage(t, r, c.status)
			require.Contains(t, r.Body, c.says, c.query)
			require.Contains(t, r.Body, `<nav class="tabs"`, "the page, not an error page: %s", c.query)
		}

		// Past the last page: nothing there, and a link to the first.
		r = call(t, env, "GET", base+"?model=tickets&offset=50", "", "", cookie(ann)...)
		expectPage(t, r, http.StatusOK)
		require.Contains(t, r.Body, "No records on this page")

		// The form's controls become the view's URL.
		form := url.Values{"model": {"tickets"}, "filter[priority]": {"low"}, "filter_field": {"reopen_count"}, "filter_value": {" 2 "},
			"sort_by": {"subject"}, "order": {"desc"}, "limit": {"10"}}
		r = call(t, env, "GET", base+"?"+form.Encode(), "", "", cookie(ann)...)
		require.Equal(t, http.StatusSeeOther, r.StatusCode)
		require.Equal(t, base+"?filter%5Bpriority%5D=low&filter%5Breopen_count%5D=2&limit=10&model=tickets&sort=-subject", r.Header.Get("Location"))
		// An empty value removes that field's filter; newest first is the
		// default and needs no parameter.
		form = url.Values{"model": {"tickets"}, "filter[priority]": {"low"}, "filter_field": {"priority"}, "filter_value": {""},
			"sort_by": {"created_at"}, "order": {"desc"}, "limit": {"25"}}
		r = call(t, env, "GET", base+"?"+form.Encode(), "", "", cookie(ann)...)
		require.Equal(t, http.StatusSeeOther, r.StatusCode)
		require.Equal(t, base+"?model=tickets", r.Header.Get("Location"))

		// An app without models: the empty state.
		r = call(t, env, "POST", "/api/v1/apps/import-manifest", "application/json",
			`{"name": "Bare", "slug": "bare", "version": "1.0.0"}`, "Authorization", "Bearer "+ann)
		require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
		bare := decoded(t, r)["app_id"].(string)
		r = call(t, env, "GET", "/apps/"+bare+"/data?limit=0", "", "", cookie(ann)...)
		expectPage(t, r, http.StatusOK)
		require.Contains(t, r.Body, "This app has no data models")
	})
}
