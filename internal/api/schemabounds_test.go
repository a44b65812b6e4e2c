package api_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// allOfBomb is levels of $defs, each an allOf pair of $ref to the next:
// 1.6 KB for 22 levels, 2^22 subschemas per input value.
func allOfBomb(levels int) map[string]any {
	defs := map[string]any{fmt.Sprintf("d%d", levels): map[string]any{"type": "object"}}
	for i := 0; i < levels; i++ {
		next := map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i+1)}
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"allOf": []any{next, next}}
	}
	return map[string]any{"$defs": defs, "$ref": "#/$defs/d0"}
}

func deepProperties(n int) any {
	s := `{"type":"object"}`
	for i := 0; i < n; i++ {
		s = `{"type":"object","properties":{"a":` + s + `}}`
	}
	var v any
	_ = json.Unmarshal([]byte(s), &v)
	return v
}

// TestFunctionSchemaBounds: a JSON Schema bomb is refused at create (API
// and manifest) with a 400 naming the problem, fast; a schema within the
// bounds whose validation is costly ends at the function's timeout; schema
// errors show no file path.
func TestFunctionSchemaBounds(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("schemas@example.com")
		appID := e.newApp(tok, "schemas")
		create := func(name string, schema any, timeout int) *resp {
			return e.do("POST", "/api/v1/functions", map[string]any{"app_id": appID, "name": name, "code": "async function run(i) { return 1; }",
				"input_schema": schema, "timeout_seconds": timeout}, bearer(tok))
		}
		for name, tc := range map[string]struct {
			schema any
			detail string
		}{
			"size":      {map[string]any{"description": strings.Repeat("x", 70<<10)}, "the limit is 65536 (64 KiB)"},
			"depth":     {deepProperties(1500), "the limit is 32"},
			"expansion": {allOfBomb(22), "expands to more than 20000 subschemas"},
		} {
			start := time.Now()
			r := create(name, tc.schema, 5).expectError(t, 400, "ValidationError", "Invalid value for field input_schema: the schema ")
			require.Contains(t, r.str("detail"), tc.detail)
			// Refused before any work that grows with the bomb (2^22
			// subschemas would take minutes): the bound tells that apart,
			// not speed. The depth case takes 0.15 s alone, 0.6 s under
			// -race, and took 3.2 s under -race while CI compiled and
			// tested the other packages on 2 cores.
			require.Less(t, time.Since(start), 15*time.Second, name)
		}
		m := map[string]any{"name": "Bomb", "slug": "bomb", "version": "1.0.0", "functions": []any{
			map[string]any{"name": "f", "code": "async function run(){}", "input_schema": allOfBomb(22)}}}
		e.importManifest(tok, m).expectError(t, 400, "ValidationError", "functions[0].input_schema: the schema expands to more than")

		// Within the bounds, costly per input: the run's timeout stops it.
		slow := create("slow", map[string]any{"allOf": []any{
			map[string]any{"properties": map[string]any{"a": map[string]any{"$ref": "#"}}},
			map[string]any{"properties": map[string]any{"a": map[string]any{"$ref": "#"}}}}}, 1).expect(t, 201).str("id")
		var input any
		require.NoError(t, json.Unmarshal([]byte(strings.Repeat(`{"a":`, 40)+`1`+strings.Repeat(`}`, 40)), &input))
		start := time.Now()
		r := e.do("POST", "/api/v1/functions/"+slow+"/execute", map[string]any{"input": input}, bearer(tok)).expect(t, 200)
		require.Equal(t, "Execution timed out after 1 s", r.str("error"))
		require.Less(t, time.Since(start), 3*time.Second)

		// Errors name the schema, not a file of the server.
		wd, _ := os.Getwd()
		bad := create("bad", map[string]any{"properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/none"}}}, 5).expect(t, 400)
		require.NotContains(t, bad.str("detail"), "file:")
		require.NotContains(t, bad.str("detail"), wd)
		require.Contains(t, bad.str("detail"), "input_schema#/$defs/none")
	})
}
