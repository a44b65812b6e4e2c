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
// have left it: an LLM step that asked for lookup, a tool step whose
// result is result (it ran before), and a wait of kind on a second call.
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
	}
	require.NoError(t, s.StepsInsert(ctx, steps...))
	wp := &store.Waitpoint{ID: uuid.Must(uuid.NewV7()).String(), ActivationID: a.ID, UserID: a.UserID, Kind: kind, StepIndex: 2,
		ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	wp.ToolCalls, err = json.Marshal(calls)
	require.NoError(t, err)
	waiting, err := json.Marshal(activation.Waiting{WaitpointID: wp.ID, Kind: kind, ToolCalls: calls, ExpiresAt: wp.ExpiresAt})
	require.NoError(t, err)
	require.NoError(t, s.StepsInsert(ctx, &store.Step{ActivationID: a.ID, Index: 2, Kind: store.StepWait, Status: store.StepWaiting,
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
