package api_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

// exampleManifest is examples/support-desk.json, decoded.
func exampleManifest(t testing.TB) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../../examples/support-desk.json")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func (e *env) importManifest(token string, m any) *resp {
	e.t.Helper()
	return e.do("POST", "/api/v1/apps/import-manifest", m, bearer(token))
}

func list(r *resp, key string) []map[string]any {
	items, _ := r.JSON[key].([]any)
	out := make([]map[string]any, len(items))
	for i, it := range items {
		out[i] = it.(map[string]any)
	}
	return out
}

func names(items []map[string]any) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i], _ = it["name"].(string)
	}
	return out
}

func TestAppsCRUD(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		owner := e.signup("owner@example.com")
		other := e.signup("other@example.com")

		r := e.do("POST", "/api/v1/apps", map[string]any{"name": "Notes", "slug": "notes", "description": "n"}, bearer(owner)).expect(t, 201)
		id := r.str("app_id")
		require.Equal(t, "notes", r.str("slug"))
		require.Equal(t, "notes", r.str("app_slug"))
		require.Equal(t, "1.0.0", r.str("version"))
		require.Equal(t, "active", r.str("status"))
		require.Equal(t, "private", r.str("marketplace_status"))
		require.True(t, strings.HasSuffix(r.str("entry_point_url"), "/apps/"+id), r.str("entry_point_url"))
		require.NotEmpty(t, r.str("created_at"))
		require.Equal(t, map[string]any{"agents": 0.0, "models": 0.0, "functions": 0.0, "pipelines": 0.0, "authenticators": 0.0}, r.JSON["created"])
		second := e.do("POST", "/api/v1/apps", map[string]any{"name": "Todo", "slug": "todo"}, bearer(owner)).expect(t, 201).str("app_id")

		for _, tc := range []struct {
			body   map[string]any
			status int
			field  string
		}{
			{map[string]any{"name": "Again", "slug": "notes"}, 409, `slug "notes" already exists`},
			{map[string]any{"name": "Bad", "slug": "Not A Slug"}, 400, "Invalid value for field slug"},
			{map[string]any{"name": "Bad", "slug": "-x"}, 400, "Invalid value for field slug"},
			{map[string]any{"slug": "x"}, 400, "Missing required field: name"},
			{map[string]any{"name": "x"}, 400, "Missing required field: slug"},
			{map[string]any{"name": 5, "slug": "x"}, 400, "name"},
			{map[string]any{"name": "x", "slug": "x", "manifest_data": map[string]any{"version": "1.0.0",
				"agents": []any{map[string]any{"name": "a", "agent_type_id": "llm", "agent_config": map[string]any{}}}}}, 400,
				"manifest_data.agents[0].agent_config.model"},
		} {
			e.do("POST", "/api/v1/apps", tc.body, bearer(owner)).expect(t, tc.status).expectError(t, tc.status, map[int]string{400: "ValidationError", 409: "ConflictError"}[tc.status], tc.field)
		}
		// Another user may use the same slug.
		e.do("POST", "/api/v1/apps", map[string]any{"name": "Notes", "slug": "notes"}, bearer(other)).expect(t, 201)

		r = e.do("GET", "/api/v1/apps", nil, bearer(owner)).expect(t, 200)
		require.Equal(t, []string{"Todo", "Notes"}, names(list(r, "apps")), "newest first")
		require.Equal(t, 2.0, r.JSON["total"])
		require.Equal(t, 2.0, r.JSON["total_count"])
		require.Equal(t, 50.0, r.JSON["limit"])
		require.Equal(t, 0.0, r.JSON["offset"])
		require.Equal(t, false, r.JSON["has_more"])
		r = e.do("GET", "/api/v1/apps?limit=1", nil, bearer(owner)).expect(t, 200)
		require.Equal(t, true, r.JSON["has_more"])
		e.do("GET", "/api/v1/apps?limit=0", nil, bearer(owner)).expectError(t, 400, "ValidationError", "limit")
		e.do("GET", "/api/v1/apps?limit=1001", nil, bearer(owner)).expectError(t, 400, "ValidationError", "limit")

		e.do("GET", "/api/v1/apps/"+id, nil, bearer(owner)).expect(t, 200)
		e.do("GET", "/api/v1/apps/"+id, nil, bearer(other)).expectError(t, 404, "NotFoundError", "App not found")
		e.do("GET", "/api/v1/apps/not-a-uuid", nil, bearer(owner)).expectError(t, 404, "NotFoundError", "App not found")

		r = e.do("PATCH", "/api/v1/apps/"+id, map[string]any{"name": "My notes", "status": "disabled", "marketplace_status": "published"}, bearer(owner)).expect(t, 200)
		require.Equal(t, "My notes", r.str("name"))
		require.Equal(t, "disabled", r.str("status"))
		require.Equal(t, "published", r.str("marketplace_status"))
		require.Equal(t, "n", r.str("description"), "unpatched fields stay")
		e.do("PATCH", "/api/v1/apps/"+id, map[string]any{"status": "paused"}, bearer(owner)).expectError(t, 400, "ValidationError", "status")
		e.do("PATCH", "/api/v1/apps/"+id, map[string]any{"marketplace_status": "public"}, bearer(owner)).expectError(t, 400, "ValidationError", "marketplace_status")
		e.do("PATCH", "/api/v1/apps/"+id, map[string]any{"name": ""}, bearer(owner)).expectError(t, 400, "ValidationError", "name")
		e.do("PATCH", "/api/v1/apps/"+id, map[string]any{"name": "x"}, bearer(other)).expectError(t, 404, "NotFoundError", "App not found")

		// Scopes: read keys read, app:access keys use, neither manages.
		read := e.keyWith(owner, "read:all")
		use := e.keyWith(owner, "app:access")
		e.do("GET", "/api/v1/apps/"+id, nil, bearer(read)).expect(t, 200)
		e.do("GET", "/api/v1/apps", nil, bearer(use)).expect(t, 200)
		e.do("PATCH", "/api/v1/apps/"+id, map[string]any{"name": "x"}, bearer(read)).expect(t, 403)
		e.do("POST", "/api/v1/apps", map[string]any{"name": "x", "slug": "x"}, bearer(use)).expect(t, 403)
		e.do("DELETE", "/api/v1/apps/"+id, nil, bearer(use)).expect(t, 403)
		e.do("GET", "/api/v1/apps", nil).expect(t, 401)

		e.do("DELETE", "/api/v1/apps/"+id, nil, bearer(other)).expectError(t, 404, "NotFoundError", "App not found")
		e.do("DELETE", "/api/v1/apps/"+id, nil, bearer(owner)).expect(t, 204)
		e.do("GET", "/api/v1/apps/"+id, nil, bearer(owner)).expect(t, 404)
		e.do("DELETE", "/api/v1/apps/"+id, nil, bearer(owner)).expect(t, 404)
		e.do("GET", "/api/v1/apps/"+second, nil, bearer(owner)).expect(t, 200)
	})
}

func TestImportManifest(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		owner := e.signup("owner@example.com")
		other := e.signup("other@example.com")
		m := exampleManifest(t)

		r := e.importManifest(owner, m).expect(t, 201)
		appID := r.str("app_id")
		require.Equal(t, "support-desk", r.str("slug"))
		require.Equal(t, "1.0.0", r.str("version"))
		require.Equal(t, map[string]any{"agents": 3.0, "models": 1.0, "functions": 3.0, "pipelines": 1.0, "authenticators": 1.0}, r.JSON["created"])
		require.Equal(t, false, r.JSON["upgraded"])

		r = e.do("GET", "/api/v1/apps/"+appID+"/agents", nil, bearer(owner)).expect(t, 200)
		agents := list(r, "agents")
		require.Equal(t, []string{"triage", "escalation-router", "front-desk"}, names(agents))
		triageID := agents[0]["agent_id"].(string)
		r = e.do("GET", "/api/v1/apps/"+appID+"/agents/"+triageID, nil, bearer(owner)).expect(t, 200)
		require.Equal(t, appID, r.str("app_id"))
		require.Equal(t, "echo", r.JSON["agent_config"].(map[string]any)["provider_id"])
		require.Equal(t, 60.0, r.JSON["timeout_seconds"])

		r = e.do("GET", "/api/v1/apps/"+appID+"/models", nil, bearer(owner)).expect(t, 200)
		models := list(r, "models")
		require.Len(t, models, 1)
		require.Equal(t, "tickets", models[0]["slug"])
		require.Len(t, models[0]["fields"], 12)
		e.do("GET", "/api/v1/apps/"+appID+"/models", nil, bearer(other)).expectError(t, 404, "NotFoundError", "App not found")

		// Same or lower version: 409. Nothing changes.
		e.importManifest(owner, m).expectError(t, 409, "ConflictError", "already at version 1.0.0")
		m["version"] = "0.9.0"
		e.importManifest(owner, m).expect(t, 409)
		// Another user imports the same slug as their own app.
		m["version"] = "1.0.0"
		e.importManifest(other, m).expect(t, 201)

		// A higher version upgrades in place; agents are matched by name.
		up := exampleManifest(t)
		up["version"] = "1.1.0"
		up["description"] = "v1.1"
		upAgents := up["agents"].([]any)
		upAgents[0].(map[string]any)["description"] = "now sharper"
		up["agents"] = []any{upAgents[0], map[string]any{"name": "summarizer", "agent_type_id": "llm", "agent_config": map[string]any{"model": "echo"}}}
		up["pipelines"] = []any{}
		r = e.importManifest(owner, up).expect(t, 200)
		require.Equal(t, appID, r.str("app_id"), "upgraded in place")
		require.Equal(t, "1.1.0", r.str("version"))
		require.Equal(t, true, r.JSON["upgraded"])
		require.Equal(t, 2.0, r.JSON["created"].(map[string]any)["agents"])
		require.Equal(t, 0.0, r.JSON["created"].(map[string]any)["pipelines"])
		r = e.do("GET", "/api/v1/apps/"+appID+"/agents", nil, bearer(owner)).expect(t, 200)
		agents = list(r, "agents")
		require.Equal(t, []string{"triage", "summarizer"}, names(agents))
		require.Equal(t, triageID, agents[0]["agent_id"], "a matched agent keeps its id")
		require.Equal(t, "now sharper", agents[0]["description"])
		exported := e.do("GET", "/api/v1/apps/"+appID+"/manifest", nil, bearer(owner)).expect(t, 200)
		require.Empty(t, exported.JSON["pipelines"])
		require.Equal(t, "v1.1", exported.str("description"))

		// Bad manifests: 400 naming the first bad path.
		bad := exampleManifest(t)
		bad["slug"] = "another"
		delete(bad["agents"].([]any)[0].(map[string]any)["agent_config"].(map[string]any), "model")
		e.importManifest(owner, bad).expectError(t, 400, "ValidationError", "agents[0].agent_config.model")
		bad = exampleManifest(t)
		bad["minPlatformVersion"] = "99.0.0"
		e.importManifest(owner, bad).expectError(t, 400, "ValidationError", "minPlatformVersion")
		bad = exampleManifest(t)
		bad["authenticators"].([]any)[0].(map[string]any)["client_secret"] = "hunter2"
		e.importManifest(owner, bad).expectError(t, 400, "ValidationError", "authenticators[0].client_secret")
		e.do("POST", "/api/v1/apps/import-manifest", []byte(`{"name": `), bearer(owner)).expectError(t, 400, "ValidationError", "Malformed JSON body")
		e.do("POST", "/api/v1/apps/import-manifest", []byte(``), bearer(owner)).expectError(t, 400, "ValidationError", "")

		// YAML with Content-Type: application/yaml.
		y := "name: Tiny\nslug: tiny\nversion: 0.1.0\nagents:\n  - name: echoer\n    agent_type_id: llm\n    agent_config: {model: echo, temperature: 1}\n"
		r = e.do("POST", "/api/v1/apps/import-manifest", []byte(y), bearer(owner), header("Content-Type", "application/yaml")).expect(t, 201)
		require.Equal(t, 1.0, r.JSON["created"].(map[string]any)["agents"])

		r = e.do("GET", "/api/v1/apps", nil, bearer(owner)).expect(t, 200)
		require.Equal(t, []string{"Tiny", "Support Desk"}, names(list(r, "apps")), "failed imports left nothing")
		e.importManifest(e.keyWith(owner, "app:access"), m).expect(t, 403)
	})
}

// TestImportIsOneTransaction makes the database refuse the function rows:
// the app, models and agents written before them must be gone too.
func TestImportIsOneTransaction(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		owner := e.signup("owner@example.com")
		ddl := []string{`CREATE TRIGGER refuse_functions BEFORE INSERT ON functions BEGIN SELECT RAISE(ABORT, 'refused'); END`}
		if d == store.Postgres {
			ddl = []string{
				`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$`,
				`CREATE TRIGGER refuse_functions BEFORE INSERT ON functions FOR EACH ROW EXECUTE FUNCTION refuse()`,
			}
		}
		for _, q := range ddl {
			_, err := e.srv.Store.DB().ExecContext(context.Background(), q)
			require.NoError(t, err)
		}
		e.importManifest(owner, exampleManifest(t)).expect(t, 500)
		r := e.do("GET", "/api/v1/apps", nil, bearer(owner)).expect(t, 200)
		require.Empty(t, list(r, "apps"))
		r = e.do("GET", "/api/v1/agents", nil, bearer(owner)).expect(t, 200)
		require.Equal(t, []string{"assistant"}, names(list(r, "agents")), "no agent of the failed import remains")
	})
}

// TestManifestRoundTrip: export → delete → import → export gives the same
// manifest.
func TestManifestRoundTrip(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		owner := e.signup("owner@example.com")
		m := exampleManifest(t)
		topSecret := webhook.NewSecret()
		// A webhook agent: its secret is imported, never exported.
		m["agents"] = append(m["agents"].([]any), map[string]any{"name": "hook", "agent_type_id": "custom",
			"webhook_url":  "https://example.com/done",
			"agent_config": map[string]any{"runtime": "webhook", "url": "https://agents.example.com/run", "secret": topSecret}})
		imported := e.importManifest(owner, m).expect(t, 201)
		require.Empty(t, imported.JSON["webhook_secrets"], "the manifest gave the agent its secret")
		require.NotContains(t, string(imported.Body), topSecret[len("whsec_"):])
		appID := imported.str("app_id")
		first := e.do("GET", "/api/v1/apps/"+appID+"/manifest", nil, bearer(owner)).expect(t, 200)
		require.NotContains(t, string(first.Body), topSecret[len("whsec_"):])
		require.Equal(t, "0.1.0", first.str("minPlatformVersion"))

		// Upgrading from the export (which has no secret) keeps the sealed one.
		var bumped map[string]any
		require.NoError(t, json.Unmarshal(first.Body, &bumped))
		bumped["version"] = "1.0.1"
		e.importManifest(owner, bumped).expect(t, 200)
		agents, err := e.srv.Store.AgentListByApp(context.Background(), appID)
		require.NoError(t, err)
		require.Equal(t, "hook", agents[3].Name)
		secret, err := e.srv.Secrets.Open(agents[3].SecretEnc)
		require.NoError(t, err)
		require.Equal(t, topSecret, secret)
		first = e.do("GET", "/api/v1/apps/"+appID+"/manifest", nil, bearer(owner)).expect(t, 200)

		e.do("DELETE", "/api/v1/apps/"+appID, nil, bearer(owner)).expect(t, 204)
		again := e.do("POST", "/api/v1/apps/import-manifest", first.Body, bearer(owner)).expect(t, 201)
		// Imported without a secret, the webhook agent gets a new one, shown once.
		issued := list(again, "webhook_secrets")
		require.Len(t, issued, 1)
		require.Equal(t, "hook", issued[0]["name"])
		require.NoError(t, webhook.CheckSecret(issued[0]["webhook_secret"].(string)))
		hookRow, err := e.srv.Store.AgentGet(context.Background(), issued[0]["agent_id"].(string))
		require.NoError(t, err)
		opened, err := e.srv.Secrets.Open(hookRow.SecretEnc)
		require.NoError(t, err)
		require.Equal(t, issued[0]["webhook_secret"], opened)
		second := e.do("GET", "/api/v1/apps/"+again.str("app_id")+"/manifest", nil, bearer(owner)).expect(t, 200)
		require.JSONEq(t, string(first.Body), string(second.Body))

		// The original manifest, normalised, is what the export says.
		var want, got map[string]any
		b, _ := json.Marshal(m)
		require.NoError(t, json.Unmarshal(b, &want))
		require.NoError(t, json.Unmarshal(first.Body, &got))
		require.Equal(t, want["agents"].([]any)[0], got["agents"].([]any)[0])
		require.Equal(t, want["functions"], got["functions"])
		require.Equal(t, want["authenticators"], got["authenticators"])
		require.Equal(t, want["models"], got["models"])
	})
}

func TestMarketplaceAndInstall(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		author := e.signup("author@example.com")
		user := e.signup("user@example.com")
		m := exampleManifest(t)
		authorSecret := webhook.NewSecret()
		m["agents"] = append(m["agents"].([]any), map[string]any{"name": "hook", "agent_type_id": "custom",
			"agent_config": map[string]any{"runtime": "webhook", "url": "https://agents.example.com/run", "secret": authorSecret}})
		appID := e.importManifest(author, m).expect(t, 201).str("app_id")
		private := e.do("POST", "/api/v1/apps", map[string]any{"name": "Private", "slug": "private"}, bearer(author)).expect(t, 201).str("app_id")

		r := e.do("GET", "/api/v1/apps/marketplace", nil, bearer(user)).expect(t, 200)
		require.Empty(t, list(r, "apps"))
		e.do("POST", "/api/v1/apps/"+appID+"/install", nil, bearer(user)).expectError(t, 404, "NotFoundError", "App not found")
		e.do("POST", "/api/v1/apps/"+private+"/install", nil, bearer(user)).expect(t, 404)

		e.do("PATCH", "/api/v1/apps/"+appID, map[string]any{"marketplace_status": "published"}, bearer(author)).expect(t, 200)
		r = e.do("GET", "/api/v1/apps/marketplace", nil, bearer(user)).expect(t, 200)
		apps := list(r, "apps")
		require.Len(t, apps, 1)
		require.Equal(t, "published", apps[0]["marketplace_status"])
		require.NotEmpty(t, apps[0]["entry_point_url"])
		require.Equal(t, 1.0, r.JSON["total"])

		r = e.do("POST", "/api/v1/apps/"+appID+"/install", nil, bearer(user)).expect(t, 201)
		installed := r
		copyID := r.str("app_id")
		require.NotEqual(t, appID, copyID)
		require.Equal(t, "private", r.str("marketplace_status"))
		require.Equal(t, 4.0, r.JSON["created"].(map[string]any)["agents"])
		r = e.do("GET", "/api/v1/apps/"+copyID+"/agents", nil, bearer(user)).expect(t, 200)
		require.Equal(t, []string{"triage", "escalation-router", "front-desk", "hook"}, names(list(r, "agents")))
		ctx := context.Background()
		copied, err := e.srv.Store.AgentListByApp(ctx, copyID)
		require.NoError(t, err)
		original, err := e.srv.Store.AgentListByApp(ctx, appID)
		require.NoError(t, err)
		require.NotEqual(t, original[0].ID, copied[0].ID, "new ids")
		opened, err := e.srv.Secrets.Open(original[3].SecretEnc)
		require.NoError(t, err)
		require.Equal(t, authorSecret, opened, "the author's secret is stored sealed")
		// The copy's webhook agent has a secret of its own, shown once.
		issued := list(installed, "webhook_secrets")
		require.Len(t, issued, 1)
		require.Equal(t, map[string]any{"agent_id": copied[3].ID, "name": "hook"}, map[string]any{"agent_id": issued[0]["agent_id"], "name": issued[0]["name"]})
		own, err := e.srv.Secrets.Open(copied[3].SecretEnc)
		require.NoError(t, err)
		require.Equal(t, issued[0]["webhook_secret"], own)
		require.NoError(t, webhook.CheckSecret(own))
		require.NotEqual(t, authorSecret, own, "no secrets are copied")
		app, err := e.srv.Store.AppGet(ctx, copyID)
		require.NoError(t, err)
		require.Equal(t, appID, app.InstalledFrom)

		// The slug is taken now; another slug works.
		e.do("POST", "/api/v1/apps/"+appID+"/install", nil, bearer(user)).expectError(t, 409, "ConflictError", "support-desk")
		e.do("POST", "/api/v1/apps/"+appID+"/install", map[string]any{"slug": "desk-2", "name": "Desk 2"}, bearer(user)).expect(t, 201)
		e.do("POST", "/api/v1/apps/"+appID+"/install", map[string]any{"slug": "Bad Slug"}, bearer(user)).expectError(t, 400, "ValidationError", "slug")
		// The owner may copy their own private app.
		e.do("POST", "/api/v1/apps/"+private+"/install", map[string]any{"slug": "private-2"}, bearer(author)).expect(t, 201)
	})
}

func TestOpenAPIDocumentsAppsAndAgents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	r := e.do("GET", "/api/v1/openapi.json", nil).expect(t, 200)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &doc))
	for _, route := range []string{
		"GET /api/v1/apps", "POST /api/v1/apps", "GET /api/v1/apps/marketplace", "POST /api/v1/apps/import-manifest",
		"GET /api/v1/apps/{app_id}", "PATCH /api/v1/apps/{app_id}", "DELETE /api/v1/apps/{app_id}",
		"POST /api/v1/apps/{app_id}/install", "GET /api/v1/apps/{app_id}/manifest", "GET /api/v1/apps/{app_id}/models",
		"GET /api/v1/agents", "GET /api/v1/agents/{agent_id}", "GET /api/v1/apps/{app_id}/agents", "POST /api/v1/apps/{app_id}/agents",
		"GET /api/v1/apps/{app_id}/agents/{agent_id}", "PATCH /api/v1/apps/{app_id}/agents/{agent_id}", "DELETE /api/v1/apps/{app_id}/agents/{agent_id}",
	} {
		method, path, _ := strings.Cut(route, " ")
		require.Contains(t, doc.Paths, path, route)
		require.Contains(t, doc.Paths[path], strings.ToLower(method), route)
	}
	imp := string(doc.Paths["/api/v1/apps/import-manifest"]["post"])
	require.Contains(t, imp, "application/yaml")
	require.Contains(t, imp, "Manifest")
	require.Contains(t, string(doc.Paths["/api/v1/apps/{app_id}/agents"]["post"]), "AgentSpec")
}

// TestExampleAppEndToEnd is the README's path: import the example, find
// triage among the agents, activate it, read the answer.
func TestExampleAppEndToEnd(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		session := e.signup("ada@example.com")
		key := e.keyWith(session, "read:all", "write:all")
		appID := e.importManifest(key, exampleManifest(t)).expect(t, 201).str("app_id")
		r := e.do("GET", "/api/v1/agents?search=triage", nil, bearer(key)).expect(t, 200)
		found := list(r, "agents")
		require.Len(t, found, 1)
		triage := found[0]["agent_id"].(string)

		use := e.keyWith(session, "app:access")
		r = e.do("POST", "/api/v1/agents/"+triage+"/activate", map[string]any{"input_data": map[string]any{"prompt": "My invoice is wrong"}}, bearer(use)).expect(t, 201)
		done := e.await(use, r.str("activation_id"))
		require.Equal(t, "completed", done.str("status"), "body: %s", done.Body)
		require.Equal(t, "echo: My invoice is wrong", done.JSON["output_data"].(map[string]any)["response"])

		// The system assistant works for anyone.
		r = e.do("POST", "/api/v1/agents/00000000-0000-7000-8000-000000000001/activate", map[string]any{"input_data": map[string]any{"prompt": "hi"}}, bearer(use)).expect(t, 201)
		require.Equal(t, "completed", e.await(use, r.str("activation_id")).str("status"))

		// A disabled app's agents refuse activation.
		e.do("PATCH", "/api/v1/apps/"+appID, map[string]any{"status": "disabled"}, bearer(key)).expect(t, 200)
		e.do("POST", "/api/v1/agents/"+triage+"/activate", map[string]any{"input_data": map[string]any{"prompt": "x"}}, bearer(use)).expectError(t, 409, "ConflictError", "App is disabled")

		// Deleting the app takes its activations with it.
		e.do("DELETE", "/api/v1/apps/"+appID, nil, bearer(key)).expect(t, 204)
		e.do("GET", "/api/v1/activations/"+r.str("activation_id"), nil, bearer(use)).expect(t, 200) // the assistant's stays
		e.do("GET", "/api/v1/agents/"+triage, nil, bearer(key)).expect(t, 404)
		e.do("GET", "/api/v1/activations/"+done.str("activation_id"), nil, bearer(use)).expect(t, 404)
	})
}

// TestConcurrentImportsOfOneSlug: racing imports create one app; the others
// are told the slug is taken (or already at that version).
func TestConcurrentImportsOfOneSlug(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		owner := e.signup("owner@example.com")
		m := exampleManifest(t)
		const n = 6
		statuses := make(chan int, n)
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses <- e.importManifest(owner, m).Status
			}()
		}
		wg.Wait()
		close(statuses)
		count := map[int]int{}
		for s := range statuses {
			count[s]++
		}
		require.Equal(t, map[int]int{201: 1, 409: n - 1}, count)
		r := e.do("GET", "/api/v1/agents", nil, bearer(owner)).expect(t, 200)
		require.Equal(t, 4.0, r.JSON["total_count"], "one app's agents and the assistant")
	})
}
