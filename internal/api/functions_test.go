package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func (e *env) functionID(token, appID, name string) string {
	e.t.Helper()
	for _, f := range list(e.do("GET", "/api/v1/functions?app_id="+appID, nil, bearer(token)).expect(e.t, 200), "functions") {
		if f["name"] == name {
			return f["id"].(string)
		}
	}
	e.t.Fatalf("no function %s", name)
	return ""
}

// TestFunctionsRunAndAreRecorded: the example's function runs with its
// input checked against its schema; failures, timeouts and logs are kept;
// both histories list newest first.
func TestFunctionsRunAndAreRecorded(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("fn@example.com")
		appID := e.importManifest(tok, exampleManifest(t)).expect(t, 201).str("app_id")
		normalize := e.functionID(tok, appID, "normalize-ticket")

		r := e.do("POST", "/api/v1/apps/"+appID+"/functions/"+normalize+"/execute", map[string]any{"input": map[string]any{
			"subject": "  Refund  ", "body": " please ", "customer_email": "Ada@Example.COM"}}, bearer(tok)).expect(t, 200)
		require.Equal(t, "completed", r.str("status"))
		require.Equal(t, map[string]any{"subject": "Refund", "body": "please", "customer_email": "ada@example.com", "priority": "normal"}, r.JSON["output"])
		require.Nil(t, r.JSON["error"])
		require.Equal(t, normalize, r.str("function_id"))

		// The input is checked against input_schema: 400 naming the path.
		e.do("POST", "/api/v1/functions/"+normalize+"/execute", map[string]any{"input": map[string]any{"subject": "s", "body": "b"}}, bearer(tok)).
			expectError(t, 400, "ValidationError", "Invalid value for field input: missing property 'customer_email'")
		bad := e.do("POST", "/api/v1/functions/"+normalize+"/execute", map[string]any{"input": map[string]any{"subject": "s", "body": "b",
			"customer_email": "not-an-email"}}, bearer(tok)).expect(t, 400)
		require.Contains(t, bad.str("detail"), "input.customer_email")
		bad = e.do("POST", "/api/v1/functions/"+normalize+"/execute", map[string]any{"input": map[string]any{"subject": "", "body": "b",
			"customer_email": "a@b.co"}}, bearer(tok)).expect(t, 400)
		require.Contains(t, bad.str("detail"), "input.subject")

		// Made over the API: a throw, a timeout, logs.
		make := func(name, code string, timeout int) string {
			return e.do("POST", "/api/v1/functions", map[string]any{"app_id": appID, "name": name, "code": code, "timeout_seconds": timeout,
				"input_schema": map[string]any{"type": "object"}}, bearer(tok)).expect(t, 201).str("id")
		}
		thrower := make("thrower", `async function run(input, ctx) { ctx.log("about to fail", ctx.execution.function_id); throw new Error("no " + input.what); }`, 5)
		r = e.do("POST", "/api/v1/functions/"+thrower+"/execute", map[string]any{"input": map[string]any{"what": "luck"}}, bearer(tok)).expect(t, 200)
		require.Equal(t, "failed", r.str("status"))
		require.Equal(t, "no luck", r.str("error"))
		require.Nil(t, r.JSON["output"])
		logs := r.JSON["logs"].([]any)
		require.Equal(t, "about to fail "+thrower, logs[0].(map[string]any)["message"])
		require.Contains(t, logs[1].(map[string]any)["message"], "no luck")
		looper := make("looper", `async function run() { for (;;) {} }`, 1)
		r = e.do("POST", "/api/v1/functions/"+looper+"/execute", nil, bearer(tok)).expect(t, 200)
		require.Equal(t, "Execution timed out after 1 s", r.str("error"))

		// Management: validation, conflicts, patch, delete.
		e.do("POST", "/api/v1/functions", map[string]any{"app_id": appID, "name": "x", "code": "", "input_schema": map[string]any{}}, bearer(tok)).
			expectError(t, 400, "ValidationError", "Missing required field: code")
		e.do("POST", "/api/v1/functions", map[string]any{"app_id": appID, "name": "x", "code": "async function run(){}",
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "https://example.com/s.json"}}}}, bearer(tok)).
			expect(t, 400)
		e.do("POST", "/api/v1/functions", map[string]any{"app_id": appID, "name": "thrower", "code": "async function run(){}"}, bearer(tok)).expect(t, 409)
		e.do("POST", "/api/v1/functions", map[string]any{"name": "x", "code": "async function run(){}"}, bearer(tok)).
			expectError(t, 400, "ValidationError", "Missing required field: app_id")
		p := e.do("PATCH", "/api/v1/functions/"+thrower, map[string]any{"code": `async function run() { return "fixed"; }`}, bearer(tok)).expect(t, 200)
		require.Equal(t, "thrower", p.str("name"))
		require.Equal(t, "fixed", e.do("POST", "/api/v1/functions/"+thrower+"/execute", nil, bearer(tok)).expect(t, 200).JSON["output"])

		// History: newest first, paginated, per app and per function.
		h := e.do("GET", "/api/v1/apps/"+appID+"/functions/history?limit=2", nil, bearer(tok)).expect(t, 200)
		execs := list(h, "executions")
		require.Len(t, execs, 2)
		require.Equal(t, "fixed", execs[0]["output"])
		require.Equal(t, "Execution timed out after 1 s", execs[1]["error"])
		require.Equal(t, 4.0, h.JSON["total_count"])
		require.Equal(t, true, h.JSON["has_more"])
		h = e.do("GET", "/api/v1/apps/"+appID+"/functions/"+thrower+"/history", nil, bearer(tok)).expect(t, 200)
		execs = list(h, "executions")
		require.Len(t, execs, 2)
		require.Equal(t, "no luck", execs[1]["error"])
		require.NotEmpty(t, execs[1]["logs"], "history keeps the logs")

		e.do("DELETE", "/api/v1/functions/"+looper, nil, bearer(tok)).expect(t, 204)
		e.do("GET", "/api/v1/functions/"+looper, nil, bearer(tok)).expectError(t, 404, "NotFoundError", "Function not found")
	})
}

// TestFunctionsIsolation: another user's functions and executions are
// absent; a key bound to another app does not reach them; app:access runs
// them but does not manage them.
func TestFunctionsIsolation(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		owner, other := e.signup("fnowner@example.com"), e.signup("fnother@example.com")
		appID := e.importManifest(owner, exampleManifest(t)).expect(t, 201).str("app_id")
		fn := e.functionID(owner, appID, "normalize-ticket")
		second := e.newApp(owner, "second")
		bound, _ := e.key(owner, map[string]any{"name": "bound", "scopes": []string{"write:all"}, "app_id": second})
		input := map[string]any{"input": map[string]any{"subject": "s", "body": "b", "customer_email": "a@b.co"}}
		for _, tok := range []string{other, bound} {
			e.do("GET", "/api/v1/functions/"+fn, nil, bearer(tok)).expect(t, 404)
			e.do("POST", "/api/v1/functions/"+fn+"/execute", input, bearer(tok)).expect(t, 404)
			e.do("PATCH", "/api/v1/functions/"+fn, map[string]any{"name": "x"}, bearer(tok)).expect(t, 404)
			e.do("DELETE", "/api/v1/functions/"+fn, nil, bearer(tok)).expect(t, 404)
			e.do("GET", "/api/v1/apps/"+appID+"/functions/history", nil, bearer(tok)).expect(t, 404)
			require.Empty(t, list(e.do("GET", "/api/v1/functions", nil, bearer(tok)).expect(t, 200), "functions"))
		}
		e.do("POST", "/api/v1/apps/"+second+"/functions/"+fn+"/execute", input, bearer(owner)).expect(t, 404)
		access := e.keyWith(owner, "app:access")
		e.do("POST", "/api/v1/functions/"+fn+"/execute", input, bearer(access)).expect(t, 200)
		e.do("PATCH", "/api/v1/functions/"+fn, map[string]any{"name": "x"}, bearer(access)).expect(t, 403)
	})
}
