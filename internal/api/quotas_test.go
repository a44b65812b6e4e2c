package api_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// TestQuotas: each quota, set small, refuses with QuotaExceededError
// naming it (409 for things, 413 for bytes) through the API, and for
// storage and records through ctx.storage and ctx.data; what a delete
// gives back may be used again.
func TestQuotas(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, map[string]string{"AP_QUOTA_STORAGE_KEYS": "3", "AP_QUOTA_STORAGE_BYTES": "1000",
			"AP_QUOTA_RECORDS": "3", "AP_QUOTA_RECORD_BYTES": "300", "AP_QUOTA_MODELS": "2", "AP_QUOTA_FIELDS": "3",
			"AP_QUOTA_PIPELINE_STEPS": "2", "AP_QUOTA_API_KEYS": "2"})
		tok := e.signup("quotas@example.com")
		keyBody := map[string]any{"name": "k", "scopes": []string{"read:all"}}
		e.key(tok, keyBody)
		e.key(tok, keyBody)
		e.do("POST", "/api/v1/user/api-keys", keyBody, bearer(tok)).
			expectError(t, 409, "QuotaExceededError", "Quota exceeded: at most 2 API keys per user (AP_QUOTA_API_KEYS)")
		appID := e.newApp(tok, "quotas")
		fn := func(name, code string) string {
			return e.do("POST", "/api/v1/functions", map[string]any{"app_id": appID, "name": name, "code": code}, bearer(tok)).expect(t, 201).str("id")
		}
		run := func(id string, input map[string]any) any {
			return e.do("POST", "/api/v1/functions/"+id+"/execute", map[string]any{"input": input}, bearer(tok)).expect(t, 200).JSON["output"]
		}

		// ctx.storage: keys, then bytes; an overwrite and a delete count right.
		storage := fn("storage", `async function run(input, ctx) {
			const done = [];
			try {
				for (const [k, v] of input.set) { await ctx.storage.set(k, v); done.push(k); }
				for (const k of input.del || []) { await ctx.storage.delete(k); }
			} catch (e) { return {done, error: e.name + ": " + e.message}; }
			return {done};
		}`)
		out := run(storage, map[string]any{"set": [][]any{{"a", 1}, {"b", 2}, {"a", 3}, {"c", 4}, {"d", 5}}})
		require.Equal(t, map[string]any{"done": []any{"a", "b", "a", "c"},
			"error": "QuotaExceededError: Quota exceeded: at most 3 ctx.storage keys per app (AP_QUOTA_STORAGE_KEYS)"}, out)
		require.Equal(t, map[string]any{"done": []any{}}, run(storage, map[string]any{"set": [][]any{}, "del": []string{"c"}}))
		require.Equal(t, map[string]any{"done": []any{"d"}}, run(storage, map[string]any{"set": [][]any{{"d", 5}}}))
		big := strings.Repeat("x", 600)
		out = run(storage, map[string]any{"set": [][]any{{"a", big}, {"a", big}, {"b", big}}}) // a, b and d are kept
		require.Equal(t, map[string]any{"done": []any{"a", "a"},
			"error": "QuotaExceededError: Quota exceeded: at most 1000 ctx.storage bytes per app (AP_QUOTA_STORAGE_BYTES)"}, out)
		run(storage, map[string]any{"set": [][]any{}, "del": []string{"a"}})
		require.Equal(t, map[string]any{"done": []any{"b"}}, run(storage, map[string]any{"set": [][]any{{"b", big}}}))

		// Models per app, fields per model.
		model := func(slug string, fields int) *resp {
			fs := []any{}
			for i := range fields {
				fs = append(fs, map[string]any{"name": "f" + string(rune('a'+i)), "type": "string"})
			}
			return e.do("POST", "/api/v1/data/"+appID+"/models", map[string]any{"slug": slug, "name": slug, "fields": fs}, bearer(tok))
		}
		model("wide", 4).expectError(t, 409, "QuotaExceededError", "Quota exceeded at fields: at most 3 fields per model (AP_QUOTA_FIELDS)")
		model("notes", 3).expect(t, 201)
		e.do("PATCH", "/api/v1/data/"+appID+"/models/notes", map[string]any{"fields": []any{
			map[string]any{"name": "a", "type": "string"}, map[string]any{"name": "b", "type": "string"},
			map[string]any{"name": "c", "type": "string"}, map[string]any{"name": "d", "type": "string"}}}, bearer(tok)).
			expectError(t, 409, "QuotaExceededError", "AP_QUOTA_FIELDS")
		model("big", 1).expect(t, 201)
		model("third", 1).expectError(t, 409, "QuotaExceededError", "Quota exceeded: at most 2 data models per app (AP_QUOTA_MODELS)")

		// Records per model (API), then through ctx.data.
		base := "/api/v1/data/" + appID + "/notes"
		var ids []string
		for i := range 3 {
			ids = append(ids, e.do("POST", base, map[string]any{"data": map[string]any{"fa": string(rune('a' + i))}}, bearer(tok)).expect(t, 201).str("item_id"))
		}
		e.do("POST", base, map[string]any{"data": map[string]any{"fa": "d"}}, bearer(tok)).
			expectError(t, 409, "QuotaExceededError", "Quota exceeded: at most 3 records per model (AP_QUOTA_RECORDS)")
		data := fn("data", `async function run(input, ctx) {
			try { await ctx.data.create(input.model, input.data); } catch (e) { return e.name + ": " + e.message; }
			return "created";
		}`)
		require.Equal(t, "QuotaExceededError: Quota exceeded: at most 3 records per model (AP_QUOTA_RECORDS)",
			run(data, map[string]any{"model": "notes", "data": map[string]any{"fa": "d"}}))
		e.do("DELETE", base+"/"+ids[0], nil, bearer(tok)).expect(t, 204)
		require.Equal(t, "created", run(data, map[string]any{"model": "notes", "data": map[string]any{"fa": "d"}}))

		// Record bytes per model: 413, on create and on a growing update.
		bigBase := "/api/v1/data/" + appID + "/big"
		r1 := e.do("POST", bigBase, map[string]any{"data": map[string]any{"fa": strings.Repeat("y", 200)}}, bearer(tok)).expect(t, 201).str("item_id")
		e.do("POST", bigBase, map[string]any{"data": map[string]any{"fa": strings.Repeat("y", 200)}}, bearer(tok)).
			expectError(t, 413, "QuotaExceededError", "Quota exceeded: at most 300 bytes of records per model (AP_QUOTA_RECORD_BYTES)")
		require.Equal(t, "QuotaExceededError: Quota exceeded: at most 300 bytes of records per model (AP_QUOTA_RECORD_BYTES)",
			run(data, map[string]any{"model": "big", "data": map[string]any{"fa": strings.Repeat("y", 200)}}))
		e.do("PUT", bigBase+"/"+r1, map[string]any{"data": map[string]any{"fa": strings.Repeat("y", 400)}}, bearer(tok)).
			expectError(t, 413, "QuotaExceededError", "AP_QUOTA_RECORD_BYTES")
		e.do("PUT", bigBase+"/"+r1, map[string]any{"data": map[string]any{"fa": "short"}}, bearer(tok)).expect(t, 200)
		e.do("POST", bigBase, map[string]any{"data": map[string]any{"fa": strings.Repeat("y", 200)}}, bearer(tok)).expect(t, 201)

		// Pipeline steps, over the API and in a manifest; models and fields in a manifest.
		steps := []any{step("a", "function", "data", nil), step("b", "function", "data", nil), step("c", "function", "data", nil)}
		e.do("POST", "/api/v1/pipelines", map[string]any{"app_id": appID, "name": "long", "steps": steps}, bearer(tok)).
			expectError(t, 409, "QuotaExceededError", "Quota exceeded at steps: at most 2 steps per pipeline (AP_QUOTA_PIPELINE_STEPS)")
		p := e.do("POST", "/api/v1/pipelines", map[string]any{"app_id": appID, "name": "short", "steps": steps[:2]}, bearer(tok)).expect(t, 201).str("pipeline_id")
		e.do("PATCH", "/api/v1/pipelines/"+p, map[string]any{"steps": steps}, bearer(tok)).expectError(t, 409, "QuotaExceededError", "AP_QUOTA_PIPELINE_STEPS")
		m := func(extra map[string]any) map[string]any {
			out := map[string]any{"name": "Q", "slug": "q", "version": "1.0.0", "functions": []any{
				map[string]any{"name": "data", "code": "async function run(){}"}}}
			for k, v := range extra {
				out[k] = v
			}
			return out
		}
		mod := func(slug string) map[string]any {
			return map[string]any{"slug": slug, "name": slug, "fields": []any{map[string]any{"name": "a", "type": "string"}}}
		}
		one := mod("m1")
		e.importManifest(tok, m(map[string]any{"models": []any{one, mod("m2"), mod("m3")}})).
			expectError(t, 409, "QuotaExceededError", "Quota exceeded at models: at most 2 data models per app")
		wide := map[string]any{"slug": "w", "name": "W", "fields": []any{map[string]any{"name": "a", "type": "string"}, map[string]any{"name": "b", "type": "string"},
			map[string]any{"name": "c", "type": "string"}, map[string]any{"name": "d", "type": "string"}}}
		e.importManifest(tok, m(map[string]any{"models": []any{one, wide}})).
			expectError(t, 409, "QuotaExceededError", "Quota exceeded at models[1].fields: at most 3 fields per model")
		e.importManifest(tok, m(map[string]any{"pipelines": []any{map[string]any{"name": "p", "steps": steps}}})).
			expectError(t, 409, "QuotaExceededError", "Quota exceeded at pipelines[0].steps: at most 2 steps per pipeline")
	})
}
