package api_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/cleantext"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// runFunction makes a function of code in app and executes it with input,
// answering the execution.
func (e *env) runFunction(token, appID, code string, input map[string]any) *resp {
	e.t.Helper()
	id := e.do("POST", "/api/v1/functions", map[string]any{"app_id": appID, "name": "f-" + uuid.NewString()[:8], "code": code,
		"timeout_seconds": 30, "input_schema": map[string]any{"type": "object"}}, bearer(token)).expect(e.t, 201).str("id")
	if input == nil {
		input = map[string]any{}
	}
	return e.do("POST", "/api/v1/functions/"+id+"/execute", map[string]any{"input": input}, bearer(token)).expect(e.t, 200)
}

// TestJavaScriptRecordsObeyTheBodyLimit: a record written from JavaScript
// obeys the API's 1 MiB body limit (the error names the size), and nothing
// is stored. An agent, not a function: its run does not hold a request.
func TestJavaScriptRecordsObeyTheBodyLimit(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("records@example.com")
		ag := e.jsAgent(tok, `async function run(input, ctx) {
			await ctx.data.createModel("notes", {name: "Notes", fields: [{name: "body", type: "text", required: true}]});
			let refused;
			try { await ctx.data.create("notes", {body: "x".repeat(1100000)}); } catch (e) { refused = e.name + ": " + e.message; }
			return {refused, left: (await ctx.data.list("notes")).total_count};
		}`, 60)
		a := e.await(tok, e.activateJS(tok, ag, map[string]any{}))
		require.Equal(t, "completed", a.str("status"), a.str("error"))
		out := a.JSON["output_data"].(map[string]any)
		require.Regexp(t, `^PayloadTooLargeError: A record is at most 1048576 bytes of JSON \(1 MiB\); this one is 11000\d\d bytes$`, out["refused"])
		require.Equal(t, 0.0, out["left"])
		l := e.do("GET", "/api/v1/data/"+ag.appID+"/notes", nil, bearer(tok)).expect(t, 200)
		require.Equal(t, 0.0, l.JSON["total_count"])
	})
}

// TestThrownErrorsAndLogLinesAreCapped: a 100 KB throw is recorded cut to
// 64 KiB, from a function and from an agent; throw null says so; a 300 KB
// console.log is kept cut to the 256 KiB log cap, marked truncated.
func TestThrownErrorsAndLogLinesAreCapped(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("caps@example.com")
		appID := e.importManifest(tok, exampleManifest(t)).expect(t, 201).str("app_id")
		capped := strings.Repeat("x", cleantext.ErrorBytes) + cleantext.Truncated

		r := e.runFunction(tok, appID, `async function run() { throw new Error("x".repeat(100000)); }`, nil)
		require.Equal(t, "failed", r.str("status"))
		require.Equal(t, capped, r.str("error"))
		for _, l := range r.JSON["logs"].([]any) {
			require.LessOrEqual(t, len(l.(map[string]any)["message"].(string)), 256<<10)
		}

		ag := e.jsAgent(tok, `async function run() { throw "x".repeat(100000); }`, 10)
		a := e.await(tok, e.activateJS(tok, ag, map[string]any{}))
		require.Equal(t, "failed", a.str("status"))
		require.Equal(t, capped, a.str("error"))

		r = e.runFunction(tok, appID, `async function run() { throw null; }`, nil)
		require.True(t, strings.HasPrefix(r.str("error"), "Uncaught null"), r.str("error"))

		r = e.runFunction(tok, appID, `async function run() { console.log("l".repeat(300000)); console.log("after"); return 1; }`, nil)
		require.Equal(t, "completed", r.str("status"), r.str("error"))
		require.Equal(t, true, r.JSON["logs_truncated"])
		logs := r.JSON["logs"].([]any)
		require.Len(t, logs, 1)
		msg := logs[0].(map[string]any)["message"].(string)
		require.LessOrEqual(t, len(msg), 256<<10)
		require.True(t, strings.HasPrefix(msg, "llll"))
		require.True(t, strings.HasSuffix(msg, cleantext.Truncated))
	})
}
