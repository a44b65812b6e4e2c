package web_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/webtest"
)

// agentID is the id of app appID's agent called name.
func agentID(t testing.TB, env *webtest.Env, session, appID, name string) string {
	t.Helper()
	r := call(t, env, "GET", "/api/v1/apps/"+appID+"/agents", "", "", "Authorization", "Bearer "+session)
	require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
	var out struct {
		Agents []struct {
			ID   string `json:"agent_id"`
			Name string `json:"name"`
		} `json:"agents"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Body), &out))
	for _, a := range out.Agents {
		if a.Name == name {
			return a.ID
		}
	}
	t.Fatalf("no agent %s in app %s", name, appID)
	return ""
}

// activate runs app appID's agent with input and waits for its end (wait
// false: only creates it); the activation's id.
func activate(t testing.TB, env *webtest.Env, session, appID, agent, input string, wait bool) string {
	t.Helper()
	h := []string{"Authorization", "Bearer " + session}
	if wait {
		h = append(h, "Prefer", "wait=30")
	}
	r := call(t, env, "POST", "/api/v1/apps/"+appID+"/agents/"+agent+"/activate", "application/json", `{"input_data": `+input+`}`, h...)
	require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
	var out struct {
		ID     string `json:"activation_id"`
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Body), &out))
	if wait {
		require.Equal(t, "completed", out.Status, r.Body)
	}
	return out.ID
}

// TestLivePagesWithoutSession: the pages where agents and functions run
// send a browser without a session to /login, like every private page.
func TestLivePagesWithoutSession(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, nil)
	session := signup(t, env, "ann@example.com")
	appID, _ := importApp(t, env, session)
	act := activate(t, env, session, appID, agentID(t, env, session, appID, "triage"), `{"prompt": "hi"}`, false)
	for _, path := range []string{"/apps/" + appID + "?offset=20", "/apps/" + appID + "/activations/" + act, "/apps/" + appID + "/functions"} {
		for _, h := range [][]string{nil, {"Authorization", "Bearer " + session}, cookie("st_forged")} {
			r := call(t, env, "GET", path, "", "", h...)
			require.Equal(t, http.StatusSeeOther, r.StatusCode, "%s %v", path, h)
			require.Equal(t, loginFor(path), r.Header.Get("Location"), "%s %v", path, h)
		}
	}
}

// TestLivePages serves the app page's history, an activation's page and
// the functions page with the UI's headers and without inline script, on
// both databases; what a run wrote is escaped; another user's app or
// activation, and an activation looked up under another app, is the 404
// page; a bad ?offset= is the first page, never an error.
func TestLivePages(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		env := webtest.Start(t, d, nil)
		ann := signup(t, env, "ann@example.com")
		bob := signup(t, env, "bob@example.com")
		appID, _ := importApp(t, env, ann)
		triage := agentID(t, env, ann, appID, "triage")
		act := activate(t, env, ann, appID, triage, `{"prompt": "<script>alert(1)</script> refund"}`, true)

		page := call(t, env, "GET", "/apps/"+appID, "", "", cookie(ann)...)
		expectPage(t, page, http.StatusOK)
		require.Contains(t, page.Body, `data-activate-form`)
		require.Contains(t, page.Body, `<label for="input-`+triage+`">`, "the input has its label")
		require.Contains(t, page.Body, `src="/static/activations.js?v=`)
		require.Contains(t, page.Body, `data-activation-id="`+act+`"`)
		require.Contains(t, page.Body, `<span class="status status-completed">completed</span>`)
		require.Contains(t, page.Body, `href="/apps/`+appID+`/activations/`+act+`"`)
		require.Contains(t, page.Body, `href="/apps/`+appID+`#agent-`+triage+`">triage</a>`)
		require.Contains(t, page.Body, "echo: &lt;script&gt;alert(1)&lt;/script&gt; refund", "the output preview, escaped")
		require.Contains(t, page.Body, `<time datetime="`)
		require.Contains(t, page.Body, `<div class="empty" data-empty="activations" hidden>`, "no empty state")

		detail := call(t, env, "GET", "/apps/"+appID+"/activations/"+act, "", "", cookie(ann)...)
		expectPage(t, detail, http.StatusOK)
		for _, want := range []string{"Activation of triage", `<span class="status status-completed">completed</span>`,
			"&#34;prompt&#34;: &#34;&lt;script&gt;alert(1)&lt;/script&gt; refund&#34;", // the input, indented
			`<p class="response" data-field="response">echo: &lt;script&gt;alert(1)&lt;/script&gt; refund</p>`,
			`href="/apps/` + appID + `#agent-` + triage + `"`, `href="/apps/` + appID + `"`, "No logs."} {
			require.Contains(t, detail.Body, want)
		}

		// A JavaScript agent's page has what its run logged.
		router := activate(t, env, ann, appID, agentID(t, env, ann, appID, "escalation-router"),
			`{"subject": "Refund", "body": "My invoice is wrong", "customer_email": "ann@example.com"}`, true)
		detail = call(t, env, "GET", "/apps/"+appID+"/activations/"+router, "", "", cookie(ann)...)
		expectPage(t, detail, http.StatusOK)
		require.Contains(t, detail.Body, "Activation of escalation-router")
		require.Regexp(t, `<li class="log log-info"><time datetime="[^"]+">[^<]+</time> <span class="level">info</span> <span class="message">ticket \S+ goes to billing</span></li>`, detail.Body)
		require.Contains(t, detail.Body, "&#34;team&#34;: &#34;billing&#34;")

		fns := call(t, env, "GET", "/apps/"+appID+"/functions", "", "", cookie(ann)...)
		expectPage(t, fns, http.StatusOK)
		for _, want := range []string{"normalize-ticket", "Cleans up an incoming ticket", "&#34;customer_email&#34;",
			`data-run-form`, `src="/static/functions.js?v=`, "No executions yet", `aria-current="page">Functions</a>`} {
			require.Contains(t, fns.Body, want)
		}

		// Bob sees none of it, and cannot reach Ann's activation through
		// his own app; Ann cannot see it under another of her apps.
		r := call(t, env, "POST", "/api/v1/apps", "application/json", `{"name": "Other", "slug": "other"}`, "Authorization", "Bearer "+ann)
		require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
		var other struct {
			ID string `json:"app_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.Body), &other))
		bobApp, _ := importApp(t, env, bob)
		for _, c := range []struct {
			who, path string
		}{
			{bob, "/apps/" + appID + "/activations/" + act},
			{bob, "/apps/" + appID + "/functions"},
			{bob, "/apps/" + appID + "?offset=20"},
			{bob, "/apps/" + bobApp + "/activations/" + act},
			{ann, "/apps/" + other.ID + "/activations/" + act},
			{ann, "/apps/" + appID + "/activations/not-an-id"},
			{ann, "/apps/" + appID + "/activations/0190aaaa-0000-7000-8000-000000000000"},
			{ann, "/apps/not-an-id/functions"},
		} {
			r := call(t, env, "GET", c.path, "", "", cookie(c.who)...)
			expectPage(t, r, http.StatusNotFound)
			require.Contains(t, r.Body, "Not found", c.path)
			require.NotContains(t, r.Body, "refund", c.path)
		}
		require.NotContains(t, call(t, env, "GET", "/apps/"+bobApp, "", "", cookie(bob)...).Body, act, "Bob's history is his own")

		for _, q := range []string{"?offset=abc", "?offset=-5", "?offset=1.5", "?offset=99999999999999999999"} {
			r := call(t, env, "GET", "/apps/"+appID+q, "", "", cookie(ann)...)
			expectPage(t, r, http.StatusOK)
		}
		r = call(t, env, "GET", "/apps/"+appID+"?offset=500", "", "", cookie(ann)...)
		expectPage(t, r, http.StatusOK)
		require.Contains(t, r.Body, "No activations on this page")
		require.Contains(t, r.Body, `rel="prev"`)
	})
}

// TestLiveHistoryPages: the app page lists the newest activations first,
// a page at a time, with links to the older and newer pages.
func TestLiveHistoryPages(t *testing.T) {
	t.Parallel()
	env := webtest.Start(t, store.SQLite, nil)
	ann := signup(t, env, "ann@example.com")
	appID, _ := importApp(t, env, ann)
	triage := agentID(t, env, ann, appID, "triage")
	var ids []string
	for i := range 22 {
		ids = append(ids, activate(t, env, ann, appID, triage, fmt.Sprintf(`{"prompt": "n%d"}`, i), false))
	}
	rows := func(body string) int { return strings.Count(body, "<tr data-activation-id=") }

	first := call(t, env, "GET", "/apps/"+appID, "", "", cookie(ann)...)
	expectPage(t, first, http.StatusOK)
	require.Equal(t, 20, rows(first.Body))
	require.Contains(t, first.Body, `data-activation-id="`+ids[21]+`"`, "the newest first")
	require.NotContains(t, first.Body, `data-activation-id="`+ids[1]+`"`)
	require.Contains(t, first.Body, `href="?offset=20" rel="next"`)
	require.NotContains(t, first.Body, `rel="prev"`)
	require.Contains(t, first.Body, "1–20 of 22")

	second := call(t, env, "GET", "/apps/"+appID+"?offset=20", "", "", cookie(ann)...)
	expectPage(t, second, http.StatusOK)
	require.Equal(t, 2, rows(second.Body))
	require.Contains(t, second.Body, `data-activation-id="`+ids[0]+`"`, "the oldest last")
	require.Contains(t, second.Body, `href="?offset=0" rel="prev"`)
	require.NotContains(t, second.Body, `rel="next"`)
	require.Contains(t, second.Body, "21–22 of 22")
}

// TestLiveActivePages: a queued or running activation has a cancel
// button, in the history and on its page, and its page waits for the
// output; once it has ended, neither.
func TestLiveActivePages(t *testing.T) {
	t.Parallel()
	hang := hangingServer(t)
	env := webtest.Start(t, store.SQLite, map[string]string{"AP_EGRESS_ALLOW": egresstest.Allow})
	ann := signup(t, env, "ann@example.com")
	appID, _ := importApp(t, env, ann)
	r := call(t, env, "POST", "/api/v1/apps/"+appID+"/agents", "application/json", waiterAgent(t, hang), "Authorization", "Bearer "+ann)
	require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
	act := activate(t, env, ann, appID, agentID(t, env, ann, appID, "waiter"), `{}`, false)

	page := call(t, env, "GET", "/apps/"+appID, "", "", cookie(ann)...)
	expectPage(t, page, http.StatusOK)
	require.Contains(t, page.Body, `data-cancel="`+act+`"`)
	detail := call(t, env, "GET", "/apps/"+appID+"/activations/"+act, "", "", cookie(ann)...)
	expectPage(t, detail, http.StatusOK)
	require.Contains(t, detail.Body, `data-cancel="`+act+`"`)
	require.Contains(t, detail.Body, "Waiting for the agent")

	r = call(t, env, "POST", "/api/v1/activations/"+act+"/cancel", "", "", "Authorization", "Bearer "+ann)
	require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
	page = call(t, env, "GET", "/apps/"+appID, "", "", cookie(ann)...)
	require.NotContains(t, page.Body, `data-cancel=`)
	require.Contains(t, page.Body, `<span class="status status-failed">failed</span>`)
	require.Contains(t, page.Body, `class="preview failed">Activation cancelled</td>`)
	detail = call(t, env, "GET", "/apps/"+appID+"/activations/"+act, "", "", cookie(ann)...)
	require.NotContains(t, detail.Body, `data-cancel=`)
	require.Contains(t, detail.Body, `<p class="error-text" data-field="error">Activation cancelled</p>`)
}

// TestAgentInputStartsFromLastInput: on both databases, a custom agent's
// activate form starts from the input of its last activation (the
// caller's), not from {} its code refuses; an LLM agent's from a prompt.
func TestAgentInputStartsFromLastInput(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		env := webtest.Start(t, d, nil)
		ann := signup(t, env, "ann@example.com")
		appID, _ := importApp(t, env, ann)
		router := agentID(t, env, ann, appID, "escalation-router")
		triage := agentID(t, env, ann, appID, "triage")
		textarea := func(agent string) string {
			page := call(t, env, "GET", "/apps/"+appID, "", "", cookie(ann)...)
			expectPage(t, page, http.StatusOK)
			start := strings.Index(page.Body, `<textarea id="input-`+agent+`"`)
			require.GreaterOrEqual(t, start, 0)
			body := page.Body[start:]
			body = body[strings.Index(body, ">")+1:]
			return body[:strings.Index(body, "</textarea>")]
		}
		require.Equal(t, "{}", textarea(router), "no input yet")
		require.Equal(t, "{&#34;prompt&#34;: &#34;&#34;}", textarea(triage))

		activate(t, env, ann, appID, router, `{"subject": "Refund <now>", "body": "My invoice is wrong", "customer_email": "ann@example.com"}`, true)
		activate(t, env, ann, appID, router, `{"subject": "Refund", "body": "Still wrong", "customer_email": "ann@example.com"}`, true)
		activate(t, env, ann, appID, triage, `{"prompt": "hello"}`, true)
		require.Equal(t, "{\n  &#34;body&#34;: &#34;Still wrong&#34;,\n  &#34;customer_email&#34;: &#34;ann@example.com&#34;,\n  &#34;subject&#34;: &#34;Refund&#34;\n}",
			textarea(router), "the last input, indented")
		require.Equal(t, "{&#34;prompt&#34;: &#34;&#34;}", textarea(triage), "an LLM agent's form starts from an empty prompt")
	})
}

// TestAgentInputStartsFromSchema: on both databases, a custom agent that
// declares an input_schema and has never run starts its activate form from
// the schema's skeleton (its required properties), which activates as is
// once filled in; after a run, from that run's input.
func TestAgentInputStartsFromSchema(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		env := webtest.Start(t, d, nil)
		ann := signup(t, env, "ann@example.com")
		appID, _ := importApp(t, env, ann)
		body := `{"name": "echoer", "agent_type_id": "custom", "agent_config": {"runtime": "javascript", "code": "async function run(input) { return input; }"},
			"input_schema": {"type": "object", "required": ["subject", "priority"], "properties": {"subject": {"type": "string"},
			"priority": {"enum": ["low", "high"]}, "body": {"type": "string"}}}}`
		r := call(t, env, "POST", "/api/v1/apps/"+appID+"/agents", "application/json", body, "Authorization", "Bearer "+ann)
		require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
		echoer := agentID(t, env, ann, appID, "echoer")
		textarea := func() string {
			page := call(t, env, "GET", "/apps/"+appID, "", "", cookie(ann)...)
			expectPage(t, page, http.StatusOK)
			start := strings.Index(page.Body, `<textarea id="input-`+echoer+`"`)
			require.GreaterOrEqual(t, start, 0)
			rest := page.Body[start:]
			rest = rest[strings.Index(rest, ">")+1:]
			return html.UnescapeString(rest[:strings.Index(rest, "</textarea>")])
		}
		require.Equal(t, "{\n  \"priority\": \"low\",\n  \"subject\": \"\"\n}", textarea(), "never run: the schema's skeleton")
		activate(t, env, ann, appID, echoer, `{"subject": "Refund", "priority": "high", "body": "Wrong invoice"}`, true)
		require.Equal(t, "{\n  \"body\": \"Wrong invoice\",\n  \"priority\": \"high\",\n  \"subject\": \"Refund\"\n}", textarea(),
			"the last input wins")
	})
}
