package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/webtest"
)

// seeded is an activation put in the store as a run that called tools
// would leave it: an LLM answer asking for a call, and a wait on it.
type seeded struct {
	ID, WaitpointID, ToolCallID string
}

// seedWait stores an activation of app appID's LLM agent (ann's, whose
// finished activation done gives the ids) that waits, as its run would
// have left it: an LLM step that asked for lookup twice, the first call's
// step with result (it ran), the second's waiting, and a wait of kind on
// it.
// It is the page's state without a model: the answer then resumes it as
// any waiting run, through the real service.
func seedWait(t testing.TB, env *webtest.Env, done, kind, result string) seeded {
	t.Helper()
	ctx := context.Background()
	s := env.Server.Store
	base, err := s.ActivationGet(ctx, done)
	require.NoError(t, err)
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := &store.Activation{ID: uuid.Must(uuid.NewV7()).String(), UserID: base.UserID, AppID: base.AppID, AgentID: base.AgentID,
		Status: store.StatusRunning, InputData: json.RawMessage(`{"prompt": "look it up"}`), CreatedAt: now, StartedAt: &now,
		WorkerID: "seed", Attempt: 1}
	require.NoError(t, s.ActivationCreate(ctx, a))
	ended := now.Add(1500 * time.Millisecond)
	calls := []executor.WaitCall{{ToolCallID: "call_1_1", Name: "lookup", Arguments: json.RawMessage(`{"email": "a@b.c"}`)}}
	steps := []*store.Step{
		{ActivationID: a.ID, Index: 0, Kind: store.StepLLM, Status: store.StepCompleted, StartedAt: now, EndedAt: &ended,
			Output: json.RawMessage(`{"text": "Let me look.", "tool_calls": [{"id": "call_1_0", "name": "lookup", "arguments": "{\"email\":\"x@y.z\"}"}, {"id": "call_1_1", "name": "lookup", "arguments": "{\"email\":\"a@b.c\"}"}]}`),
			Usage:  json.RawMessage(`{"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}`)},
		{ActivationID: a.ID, Index: 1, Kind: store.StepTool, Name: "lookup", ToolCallID: "call_1_0", Status: store.StepCompleted,
			Input: json.RawMessage(`{"email":"x@y.z"}`), Output: json.RawMessage(result), StartedAt: ended, EndedAt: &ended},
		{ActivationID: a.ID, Index: 2, Kind: store.StepTool, Name: "lookup", ToolCallID: "call_1_1", Status: store.StepWaiting,
			Input: json.RawMessage(`{"email":"a@b.c"}`), StartedAt: ended},
	}
	require.NoError(t, s.StepsInsert(ctx, steps...))
	wp := &store.Waitpoint{ID: uuid.Must(uuid.NewV7()).String(), ActivationID: a.ID, UserID: a.UserID, Kind: kind, StepIndex: 3,
		ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	wp.ToolCalls, err = json.Marshal(calls)
	require.NoError(t, err)
	waiting, err := json.Marshal(activation.Waiting{WaitpointID: wp.ID, Kind: kind, ToolCalls: calls, ExpiresAt: wp.ExpiresAt})
	require.NoError(t, err)
	require.NoError(t, s.StepsInsert(ctx, &store.Step{ActivationID: a.ID, Index: 3, Kind: store.StepWait, Status: store.StepWaiting,
		Input: waiting, StartedAt: ended}))
	require.NoError(t, s.WaitpointCreate(ctx, wp))
	ok, err := s.ActivationWait(ctx, a.ID, "seed", waiting)
	require.NoError(t, err)
	require.True(t, ok)
	return seeded{ID: a.ID, WaitpointID: wp.ID, ToolCallID: "call_1_1"}
}

// hostileResult is a tool result that would run script if a page put it
// in as HTML.
const hostileResult = `{"tickets": ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>"]}`

// TestWaitingPages: an activation's page shows its steps (the LLM's text
// and calls, a tool's arguments and result, escaped) and the call it
// waits on with Approve, Edit and Reject; the app page lists it, waiting;
// both parts come alone as fragments for the script; a client tool's
// wait has no buttons; another user gets 404 for all of it, and for the
// answer.
func TestWaitingPages(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		env := webtest.Start(t, d, nil)
		ann := signup(t, env, "ann@example.com")
		bob := signup(t, env, "bob@example.com")
		appID, _ := importApp(t, env, ann)
		triage := agentID(t, env, ann, appID, "triage")
		done := activate(t, env, ann, appID, triage, `{"prompt": "hi"}`, true)
		w := seedWait(t, env, done, store.WaitApproval, hostileResult)

		path := "/apps/" + appID + "/activations/" + w.ID
		page := call(t, env, "GET", path, "", "", cookie(ann)...)
		expectPage(t, page, http.StatusOK)
		for _, want := range []string{
			`<span class="status status-waiting">waiting</span>`,
			`data-src="` + path + `/run"`,
			"Waiting for you",
			"The model asks for 2 tool calls", "Let me look.", "7 tokens",
			"Tool lookup", "&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(2)&gt;",
			`data-wait-form data-activation-id="` + w.ID + `" data-waitpoint-id="` + w.WaitpointID + `"`,
			`<fieldset class="call" data-call="` + w.ToolCallID + `">`,
			`data-decide="approve"`, `data-open="edit"`, `data-open="reject"`,
			"&#34;email&#34;: &#34;a@b.c&#34;", "Waiting for approval", "not answered yet",
		} {
			require.Contains(t, page.Body, want)
		}
		require.NotContains(t, page.Body, "<script>alert")
		require.NotContains(t, page.Body, "<img src=x")

		run := call(t, env, "GET", path+"/run", "", "", cookie(ann)...)
		require.Equal(t, http.StatusOK, run.StatusCode, run.Body)
		require.Equal(t, "text/html; charset=utf-8", run.Header.Get("Content-Type"))
		require.Equal(t, "no-store", run.Header.Get("Cache-Control"))
		require.True(t, strings.HasPrefix(run.Body, `<div data-run data-src="`+path+`/run">`), run.Body)
		require.Contains(t, run.Body, `data-waitpoint-id="`+w.WaitpointID+`"`)
		require.NotContains(t, run.Body, "<html", "a fragment, not a page")
		require.NotContains(t, run.Body, "<script>alert")

		app := call(t, env, "GET", "/apps/"+appID, "", "", cookie(ann)...)
		expectPage(t, app, http.StatusOK)
		require.Contains(t, app.Body, `data-src="/apps/`+appID+`/waiting"`)
		require.Contains(t, app.Body, `<li class="card" data-waiting="`+w.ID+`">`)
		require.Contains(t, app.Body, `data-waitpoint-id="`+w.WaitpointID+`"`)
		require.Regexp(t, `(?s)data-activation-id="`+w.ID+`">\s*<td data-label="Status" data-cell="status"><span class="status status-waiting">waiting</span>`, app.Body)
		list := call(t, env, "GET", "/apps/"+appID+"/waiting", "", "", cookie(ann)...)
		require.Equal(t, http.StatusOK, list.StatusCode, list.Body)
		require.True(t, strings.HasPrefix(list.Body, `<div data-waitlist data-src="/apps/`+appID+`/waiting">`), list.Body)
		require.Contains(t, list.Body, `data-waiting="`+w.ID+`"`)

		// A client tool's wait is its caller's to answer: no buttons.
		client := seedWait(t, env, done, store.WaitToolResult, `{"ok": true}`)
		page = call(t, env, "GET", "/apps/"+appID+"/activations/"+client.ID, "", "", cookie(ann)...)
		expectPage(t, page, http.StatusOK)
		require.Contains(t, page.Body, "Waiting for the caller")
		require.Contains(t, page.Body, "/waitpoints/"+client.WaitpointID)
		require.NotContains(t, page.Body, "data-decide")

		// Bob: 404 for the pages, the fragments and the answer.
		bobApp, _ := importApp(t, env, bob)
		for _, p := range []string{path, path + "/run", "/apps/" + appID + "/waiting", "/apps/" + bobApp + "/activations/" + w.ID + "/run"} {
			r := call(t, env, "GET", p, "", "", cookie(bob)...)
			require.Equal(t, http.StatusNotFound, r.StatusCode, p)
			require.NotContains(t, r.Body, "lookup", p)
		}
		require.NotContains(t, call(t, env, "GET", "/apps/"+bobApp+"/waiting", "", "", cookie(bob)...).Body, w.ID)
		answer := `{"decisions": [{"tool_call_id": "` + w.ToolCallID + `", "type": "approve"}]}`
		answerPath := "/api/v1/activations/" + w.ID + "/waitpoints/" + w.WaitpointID
		r := call(t, env, "POST", answerPath, "application/json", answer, append(cookie(bob), "Origin", env.URL)...)
		require.Equal(t, http.StatusNotFound, r.StatusCode, r.Body)
		// The answer is the page's (same origin), never another site's.
		r = call(t, env, "POST", answerPath, "application/json", answer, append(cookie(ann), "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")...)
		require.Equal(t, http.StatusForbidden, r.StatusCode, r.Body)
		page = call(t, env, "GET", path, "", "", cookie(ann)...)
		require.Contains(t, page.Body, "data-wait-form", "still waiting")
	})
}

// toolsManifest is an app whose echo agent "clerk" calls the function
// lookup only once a person approves; lookup's result carries markup.
func toolsManifest(t testing.TB) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"name": "Tools", "slug": "tools", "version": "1.0.0",
		"functions": []map[string]any{{"name": "lookup", "input_schema": map[string]any{"type": "object"},
			"code": `async function run(input) { return {tickets: [input.email], note: "<script>alert(1)</script>"}; }`}},
		"agents": []map[string]any{{"name": "clerk", "agent_type_id": "llm", "timeout_seconds": 60,
			"agent_config": map[string]any{"provider_id": "echo", "model": "echo",
				"tools": []map[string]any{{"type": "function", "function": "lookup", "approval": "always"}}}}},
	})
	require.NoError(t, err)
	return string(b)
}

// lookupPrompt makes echo call lookup with email.
func lookupPrompt(email string) string {
	b, _ := json.Marshal(map[string]any{"prompt": `call lookup {"email":"` + email + `"}`})
	return string(b)
}

// TestBrowserApproveEditReject is a person answering an agent's tool
// calls, in a real browser: an activation started from the app page
// waits, listed there with its call; its page shows the LLM's step and
// the call, and Approve makes the run go on and end with the tool's
// result (markup shown as text) and the answer, without a reload. Edit
// runs the call with other arguments (bad JSON refused first), and Reject
// on the app page tells the model why.
func TestBrowserApproveEditReject(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		env := webtest.Start(t, d, nil)
		ann := signup(t, env, "ann@example.com")
		r := call(t, env, "POST", "/api/v1/apps/import-manifest", "application/json", toolsManifest(t), "Authorization", "Bearer "+ann)
		require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
		var app struct {
			ID string `json:"app_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.Body), &app))
		clerk := agentID(t, env, ann, app.ID, "clerk")

		b := webtest.NewBrowser(t, env.URL, webtest.Options{Timeout: 150 * time.Second})
		logIn(b, "ann@example.com")
		b.Open("/apps/" + app.ID)
		b.WaitText("h1", "Tools")
		require.True(t, webtest.Eval[bool](b, `window.sameDocument = true`))

		// Started here, it waits: the app page lists it with its call.
		form := "#agent-" + clerk + " form[data-activate-form]"
		b.SetValue(form+" textarea", lookupPrompt("a@b.c"))
		b.Click(form + " button[type=submit]")
		card := b.WaitText("[data-list=waiting] li", "lookup")
		require.Contains(t, card, `"email": "a@b.c"`)
		require.Contains(t, card, "clerk")
		b.WaitText("[data-list=activations] tbody tr:first-child [data-cell=status]", "waiting")
		require.True(t, webtest.Eval[bool](b, `window.sameDocument === true`), "no reload")
		b.Shot("app-waiting")

		// Its page: the LLM's step, the call waiting, the buttons.
		b.Click("[data-list=waiting] li a[href*='/activations/']")
		b.WaitText("h1", "Activation of clerk")
		b.WaitText("[data-field=status]", "waiting")
		steps := b.WaitText("[data-list=steps]", "The model asks for 1 tool call")
		require.Contains(t, steps, "Tool lookup")
		waiting := b.WaitText("[data-run] section.waiting", "Waiting for you")
		require.Contains(t, waiting, `"email": "a@b.c"`)
		b.Shot("activation-waiting")
		require.True(t, webtest.Eval[bool](b, `window.sameDocument = true`))
		b.Click("[data-run] button[data-decide=approve]")
		b.WaitText("[data-field=status]", "completed")
		result := b.WaitText("[data-list=steps] [data-kind=tool] [data-field=result]", "a@b.c")
		require.Contains(t, result, "<script>alert(1)</script>", "markup shown as text")
		require.Zero(t, webtest.Eval[int](b, `document.querySelectorAll("[data-run] script, [data-run] img").length`))
		b.WaitText("[data-list=steps] [data-kind=wait]", "approved")
		b.WaitText("[data-list=steps] li:last-child", "echo: ")
		b.WaitText("[data-field=output]", "echo: ")
		require.Zero(t, webtest.Eval[int](b, `document.querySelectorAll("[data-run] section.waiting").length`), "waits no more")
		require.True(t, webtest.Eval[bool](b, `window.sameDocument === true`), "no reload")
		b.Shot("activation-approved")

		// Edit, on the activation's page, which it starts to wait on live.
		id := activate(t, env, ann, app.ID, clerk, lookupPrompt("x@y.z"), false)
		b.Open("/apps/" + app.ID + "/activations/" + id)
		b.WaitText("[data-run] section.waiting", "x@y.z")
		b.Click("[data-run] button[data-open=edit]")
		b.SetValue("[data-run] textarea[name=arguments]", `{"email": `)
		b.Click("[data-run] button[data-decide=edit]")
		b.WaitText("[data-run] [data-error-for=arguments]", "not valid JSON")
		b.Shot("activation-edit-error")
		b.SetValue("[data-run] textarea[name=arguments]", `{"email": "edited@b.c"}`)
		b.Click("[data-run] button[data-decide=edit]")
		b.WaitText("[data-field=status]", "completed")
		b.WaitText("[data-list=steps] [data-kind=tool] [data-field=result]", "edited@b.c")
		b.WaitText("[data-list=steps] [data-kind=wait]", "edited; runs with")
		b.Shot("activation-edited")

		// Reject, from the app page's list, with a message for the model.
		id = activate(t, env, ann, app.ID, clerk, lookupPrompt("no@b.c"), false)
		b.Open("/apps/" + app.ID)
		item := `[data-list=waiting] li[data-waiting="` + id + `"]`
		b.WaitText(item, "no@b.c")
		b.Click(item + " button[data-open=reject]")
		b.Fill(item+" input[name=message]", "Not this customer")
		b.Shot("app-reject")
		b.Click(item + " button[data-decide=reject]")
		row := `[data-list=activations] tr[data-activation-id="` + id + `"]`
		b.WaitText(row+" [data-cell=status]", "completed")
		b.Until(`!document.querySelector('`+item+`')`, "the answered one to leave the list")
		b.Shot("app-rejected")
		b.Open("/apps/" + app.ID + "/activations/" + id)
		b.WaitText("[data-list=steps] [data-kind=tool]", "Not this customer")
		b.WaitText("[data-list=steps] [data-kind=wait]", "rejected")
		b.Shot("activation-rejected")

		// Two calls in one answer: the answer goes once each has a
		// decision, and a decision may change until then.
		two, _ := json.Marshal(map[string]any{"prompt": "call lookup {\"email\":\"one@b.c\"}\ncall lookup {\"email\":\"two@b.c\"}"})
		id = activate(t, env, ann, app.ID, clerk, string(two), false)
		b.Open("/apps/" + app.ID + "/activations/" + id)
		b.WaitText("[data-run] section.waiting", "two@b.c")
		require.Equal(t, 2, webtest.Eval[int](b, `document.querySelectorAll("[data-run] fieldset[data-call]").length`))
		first, second := "[data-run] fieldset[data-call]:nth-of-type(1)", "[data-run] fieldset[data-call]:nth-of-type(2)"
		b.Click(first + " button[data-decide=approve]")
		b.WaitText(first+" [data-decided]", "Approved")
		b.Click(first + " button[data-undecide]")
		b.Click(first + " button[data-open=reject]")
		b.Click(first + " button[data-decide=reject]")
		b.WaitText(first+" [data-decided]", "Rejected")
		require.Equal(t, "waiting", b.Text("[data-field=status]"), "nothing sent before every call has a decision")
		b.Shot("activation-two-calls")
		b.Click(second + " button[data-decide=approve]")
		b.WaitText("[data-field=status]", "completed")
		b.WaitText("[data-list=steps] [data-kind=wait]", "rejected")
		require.Contains(t, b.Text("[data-list=steps] [data-kind=wait]"), "approved")
		b.WaitText("[data-list=steps] li:last-child", "The call was rejected")

		// At a phone's width the waiting list and a waiting page fit.
		id = activate(t, env, ann, app.ID, clerk, lookupPrompt("a-rather-long-address.for-testing@subdomain.example.com"), false)
		phone := webtest.NewBrowser(t, env.URL, webtest.Options{Width: 390, Height: 844})
		logIn(phone, "ann@example.com")
		for _, path := range []string{"/apps/" + app.ID, "/apps/" + app.ID + "/activations/" + id} {
			phone.Open(path)
			phone.WaitText("section.waiting", "subdomain.example.com")
			phone.Click("section.waiting button[data-open=edit]")
			phone.NoHorizontalOverflow()
			phone.Shot("phone" + path)
		}
	})
}
