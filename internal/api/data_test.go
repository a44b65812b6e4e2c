package api_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

func itemIDs(r *resp) []string {
	var ids []string
	for _, it := range list(r, "items") {
		ids = append(ids, it["item_id"].(string))
	}
	return ids
}

func field(r *resp, name string) []any {
	var out []any
	for _, it := range list(r, "items") {
		out = append(out, it["data"].(map[string]any)[name])
	}
	return out
}

// TestAppDataRecords: records are checked against their model's fields,
// and listed with filters and an order that the database applies.
func TestAppDataRecords(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("data@example.com")
		appID := e.importManifest(tok, exampleManifest(t)).expect(t, 201).str("app_id")
		base := "/api/v1/data/" + appID + "/tickets"
		ticket := func(subject string, score float64, reopened int, priority string) map[string]any {
			return map[string]any{"data": map[string]any{"subject": subject, "body": "b", "customer_email": "c@example.com",
				"priority": priority, "sentiment_score": score, "reopen_count": reopened, "escalated": reopened > 1}}
		}

		// Validation names the field.
		bad := []struct {
			data  map[string]any
			field string
		}{
			{map[string]any{"body": "b", "customer_email": "c", "priority": "low"}, "Missing required field: data.subject"},
			{map[string]any{"subject": 1, "body": "b", "customer_email": "c", "priority": "low"}, "data.subject: expected a string"},
			{map[string]any{"subject": "s", "body": "b", "customer_email": "c", "priority": "asap"}, "data.priority: must be one of"},
			{map[string]any{"subject": "s", "body": "b", "customer_email": "c", "priority": "low", "reopen_count": 1.5}, "data.reopen_count: expected an integer"},
			{map[string]any{"subject": "s", "body": "b", "customer_email": "c", "priority": "low", "sentiment_score": "high"}, "data.sentiment_score: expected a number"},
			{map[string]any{"subject": "s", "body": "b", "customer_email": "c", "priority": "low", "escalated": "yes"}, "data.escalated: expected true or false"},
			{map[string]any{"subject": "s", "body": "b", "customer_email": "c", "priority": "low", "due_at": "tomorrow"}, "data.due_at: expected an RFC 3339"},
			{map[string]any{"subject": "s", "body": "b", "customer_email": "c", "priority": "low", "colour": "red"}, "data.colour: not a field"},
		}
		for _, b := range bad {
			r := e.do("POST", base, map[string]any{"data": b.data}, bearer(tok)).expect(t, 400)
			require.Contains(t, r.str("detail"), b.field)
		}
		created := e.do("POST", base, map[string]any{"data": map[string]any{"subject": "s", "body": "b", "customer_email": "c",
			"priority": "low", "due_at": "2026-01-02T15:04:05Z", "triage": map[string]any{"any": []any{1, "x"}}}}, bearer(tok)).expect(t, 201)
		require.NotEmpty(t, created.str("item_id"))
		require.NotEmpty(t, created.str("created_by"))

		// Numbers order as numbers, not as text; filters compare as the
		// field's type; pages say what is left.
		for i, s := range []float64{10, 9, 100, 0.5} {
			e.do("POST", base, ticket(fmt.Sprintf("t%d", i), s, i, []string{"high", "low", "high", "urgent"}[i]), bearer(tok)).expect(t, 201)
		}
		r := e.do("GET", base+"?sort=sentiment_score&filter[escalated]=false", nil, bearer(tok)).expect(t, 200)
		require.Equal(t, []any{9.0, 10.0}, field(r, "sentiment_score"))
		r = e.do("GET", base+"?sort=-sentiment_score&limit=2", nil, bearer(tok)).expect(t, 200)
		require.Equal(t, []any{100.0, 10.0}, field(r, "sentiment_score"))
		require.Equal(t, 5.0, r.JSON["total_count"])
		require.Equal(t, true, r.JSON["has_more"])
		r = e.do("GET", base+"?sort=-sentiment_score&limit=2&offset=4", nil, bearer(tok)).expect(t, 200)
		require.Equal(t, []any{nil}, field(r, "sentiment_score"), "records without the field come last")
		require.Equal(t, false, r.JSON["has_more"])
		r = e.do("GET", base+"?"+url.Values{"filter[priority]": {"high"}, "filter[reopen_count]": {"2"}}.Encode(), nil, bearer(tok)).expect(t, 200)
		require.Equal(t, []any{"t2"}, field(r, "subject"))
		e.do("GET", base+"?filter[colour]=red", nil, bearer(tok)).expectError(t, 400, "ValidationError",
			`Invalid value for field filter[colour]: "colour" is not a field of model tickets`)
		e.do("GET", base+"?filter[reopen_count]=many", nil, bearer(tok)).expectError(t, 400, "ValidationError",
			"Invalid value for field filter[reopen_count]: expected a number")
		e.do("GET", base+"?sort=colour", nil, bearer(tok)).expect(t, 400)
		e.do("GET", base+"?limit=0", nil, bearer(tok)).expect(t, 400)

		// Get, merge, replace, delete.
		id := created.str("item_id")
		item := base + "/" + id
		require.Equal(t, "s", e.do("GET", item, nil, bearer(tok)).expect(t, 200).JSON["data"].(map[string]any)["subject"])
		patched := e.do("PATCH", item, map[string]any{"data": map[string]any{"subject": "new", "triage": nil}}, bearer(tok)).expect(t, 200)
		data := patched.JSON["data"].(map[string]any)
		require.Equal(t, "new", data["subject"])
		require.Equal(t, "low", data["priority"], "a patch merges")
		require.NotContains(t, data, "triage", "null removes a field")
		e.do("PATCH", item, map[string]any{"data": map[string]any{"subject": nil}}, bearer(tok)).expectError(t, 400, "ValidationError", "Missing required field: data.subject")
		e.do("PUT", item, map[string]any{"data": map[string]any{"subject": "only"}}, bearer(tok)).expect(t, 400)
		put := e.do("PUT", item, map[string]any{"data": map[string]any{"subject": "p", "body": "b", "customer_email": "c", "priority": "normal"}}, bearer(tok)).expect(t, 200)
		require.NotContains(t, put.JSON["data"], "due_at", "a put replaces")
		e.do("DELETE", item, nil, bearer(tok)).expect(t, 204)
		e.do("GET", item, nil, bearer(tok)).expectError(t, 404, "NotFoundError", "Record not found")
		e.do("GET", base+"/not-an-id", nil, bearer(tok)).expect(t, 404)
		e.do("GET", "/api/v1/data/"+appID+"/nothing", nil, bearer(tok)).expectError(t, 404, "NotFoundError", "Model not found")

		// The explorer's paths answer the same.
		require.Equal(t, itemIDs(e.do("GET", base+"?sort=subject", nil, bearer(tok)).expect(t, 200)),
			itemIDs(e.do("GET", "/api/apps/"+appID+"/tickets?sort=subject", nil, bearer(tok)).expect(t, 200)))
		fields := list(e.do("GET", "/api/apps/"+appID+"/tickets/fields", nil, bearer(tok)).expect(t, 200), "fields")
		require.Len(t, fields, 12)
		require.Equal(t, "subject", fields[0]["name"])
		m1 := e.do("GET", "/api/apps/"+appID+"/models", nil, bearer(tok)).expect(t, 200).JSON["models"]
		require.Equal(t, m1, e.do("GET", "/api/v1/data/"+appID+"/models", nil, bearer(tok)).expect(t, 200).JSON["models"])
		require.Equal(t, m1, e.do("GET", "/api/v1/apps/"+appID+"/models", nil, bearer(tok)).expect(t, 200).JSON["models"])

		// An app:access key uses the data; a read key only reads it.
		key := e.keyWith(tok, "app:access")
		e.do("POST", base, ticket("by key", 1, 0, "low"), bearer(key)).expect(t, 201)
		read := e.keyWith(tok, "read:all")
		e.do("GET", base, nil, bearer(read)).expect(t, 200)
		e.do("POST", base, ticket("no", 1, 0, "low"), bearer(read)).expect(t, 403)
	})
}

// TestAppDataModels: models are made, changed and deleted at run time too.
func TestAppDataModels(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("models@example.com")
		appID := e.newApp(tok, "notes")
		models := "/api/v1/data/" + appID + "/models"
		e.do("POST", models, map[string]any{"slug": "models", "fields": []any{}}, bearer(tok)).expectError(t, 400, "ValidationError",
			`Invalid value for field slug: "models" is reserved`)
		e.do("POST", models, map[string]any{"slug": "note", "fields": []any{map[string]any{"name": "x", "type": "date"}}}, bearer(tok)).expect(t, 400)
		e.do("POST", models, map[string]any{"slug": "note", "fields": []any{map[string]any{"name": "level", "type": "enum"}}}, bearer(tok)).
			expectError(t, 400, "ValidationError", "Missing required field: fields[0].values")
		m := e.do("POST", models, map[string]any{"slug": "note", "name": "Note", "fields": []any{
			map[string]any{"name": "text", "type": "text", "required": true}}}, bearer(tok)).expect(t, 201)
		require.Equal(t, "note", m.str("slug"))
		e.do("POST", models, map[string]any{"slug": "note", "fields": []any{}}, bearer(tok)).expect(t, 409)
		e.do("POST", "/api/v1/data/"+appID+"/note", map[string]any{"data": map[string]any{"text": "hello"}}, bearer(tok)).expect(t, 201)
		p := e.do("PATCH", models+"/note", map[string]any{"name": "Notes", "fields": []any{
			map[string]any{"name": "text", "type": "text", "required": true}, map[string]any{"name": "pinned", "type": "boolean"}}}, bearer(tok)).expect(t, 200)
		require.Equal(t, "Notes", p.str("name"))
		require.Len(t, p.JSON["fields"], 2)
		require.Equal(t, "Notes", e.do("GET", models+"/note", nil, bearer(tok)).expect(t, 200).str("name"))
		e.do("DELETE", models+"/note", nil, bearer(tok)).expect(t, 204)
		e.do("GET", "/api/v1/data/"+appID+"/note", nil, bearer(tok)).expect(t, 404)
	})
}

// TestAppDataIsolation: another user's app data, and another app than a
// bound key's, are absent.
func TestAppDataIsolation(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		owner, other := e.signup("owner@example.com"), e.signup("intruder@example.com")
		appID := e.importManifest(owner, exampleManifest(t)).expect(t, 201).str("app_id")
		rec := e.do("POST", "/api/v1/data/"+appID+"/tickets", map[string]any{"data": map[string]any{"subject": "s", "body": "b",
			"customer_email": "c", "priority": "low"}}, bearer(owner)).expect(t, 201).str("item_id")
		otherApp := e.newApp(owner, "second")
		bound, _ := e.key(owner, map[string]any{"name": "bound", "scopes": []string{"app:access"}, "app_id": otherApp})
		for _, tok := range []string{other, bound} {
			for _, p := range []string{"/api/v1/data/" + appID + "/models", "/api/v1/data/" + appID + "/tickets", "/api/v1/data/" + appID + "/tickets/" + rec,
				"/api/apps/" + appID + "/models", "/api/apps/" + appID + "/tickets", "/api/apps/" + appID + "/tickets/fields"} {
				e.do("GET", p, nil, bearer(tok)).expect(t, 404)
			}
			e.do("DELETE", "/api/v1/data/"+appID+"/tickets/"+rec, nil, bearer(tok)).expect(t, 404)
		}
		require.Equal(t, 1.0, e.do("GET", "/api/v1/data/"+appID+"/tickets", nil, bearer(owner)).expect(t, 200).JSON["total_count"])
	})
}

// TestJavaScriptAgentUsesAppData: ctx.data creates models and records,
// reads them back, and throws ValidationError naming the field.
func TestJavaScriptAgentUsesAppData(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		tok := e.signup("scripts@example.com")
		ag := e.jsAgent(tok, `async function run(input, ctx) {
			await ctx.data.createModel("visit", {name: "Visit", fields: [{name: "who", type: "string", required: true}, {name: "n", type: "integer"}]});
			const a = await ctx.data.create("visit", {who: input.who, n: 1});
			await ctx.data.create("visit", {who: "zed", n: 2});
			const got = await ctx.data.get("visit", a.item_id);
			const updated = await ctx.data.update("visit", a.item_id, {n: 5});
			const page = await ctx.data.list("visit", {sort: "-n", limit: 1});
			const missing = await ctx.data.get("visit", "00000000-0000-7000-8000-000000000000");
			let invalid;
			try { await ctx.data.create("visit", {n: "x"}); } catch (e) { invalid = e.name + ": " + e.message; }
			await ctx.data.delete("visit", got.item_id);
			const left = await ctx.data.list("visit", {filter: {n: 2}});
			return {who: got.data.who, n: updated.data.n, top: page.items[0].data.n, total: page.total_count, more: page.has_more,
				missing, invalid, left: left.total_count};
		}`, 10)
		r := e.await(tok, e.activateJS(tok, ag, map[string]any{"who": "ada"}))
		require.Equal(t, "completed", r.str("status"), r.str("error"))
		require.Equal(t, map[string]any{"who": "ada", "n": 5.0, "top": 5.0, "total": 2.0, "more": true, "missing": nil,
			"invalid": "ValidationError: Invalid value for field data.n: expected an integer", "left": 1.0}, r.JSON["output_data"])
		// The record it wrote is in the app's data.
		items := list(e.do("GET", "/api/v1/data/"+ag.appID+"/visit", nil, bearer(tok)).expect(t, 200), "items")
		require.Len(t, items, 1)
		require.Equal(t, "zed", items[0]["data"].(map[string]any)["who"])
	})
}
