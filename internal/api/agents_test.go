package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/webhook"
)

func TestSystemAgentIsVisibleToEveryone(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		user := e.signup("u@example.com")
		r := e.do("GET", "/api/v1/agents", nil, bearer(user)).expect(t, 200)
		agents := list(r, "agents")
		require.Len(t, agents, 1)
		a := agents[0]
		require.Equal(t, apps.AssistantID, a["agent_id"])
		require.Equal(t, apps.AssistantID, a["id"])
		require.Equal(t, "assistant", a["name"])
		require.Equal(t, "llm", a["agent_type_id"])
		require.Equal(t, true, a["is_system"])
		require.Equal(t, "active", a["status"])
		require.Equal(t, []any{"chat"}, a["capabilities"])
		require.Equal(t, 1.0, r.JSON["total_count"])
		require.Equal(t, false, r.JSON["has_more"])

		r = e.do("GET", "/api/v1/agents/"+apps.AssistantID, nil, bearer(user)).expect(t, 200)
		require.Nil(t, r.JSON["app_id"])
		require.Equal(t, map[string]any{"model": "echo", "provider_id": "echo", "temperature": 0.7, "system_message": "You are a helpful assistant."}, r.JSON["agent_config"])

		// Seeding again (every start does) changes nothing.
		require.NoError(t, e.srv.Apps.SeedSystemAgents(context.Background()))
		r = e.do("GET", "/api/v1/agents", nil, bearer(user)).expect(t, 200)
		require.Len(t, list(r, "agents"), 1)

		// It cannot be changed through any app.
		appID := e.do("POST", "/api/v1/apps", map[string]any{"name": "A", "slug": "a"}, bearer(user)).expect(t, 201).str("app_id")
		e.do("PATCH", "/api/v1/apps/"+appID+"/agents/"+apps.AssistantID, map[string]any{"name": "mine"}, bearer(user)).expectError(t, 404, "NotFoundError", "Agent not found")
		e.do("DELETE", "/api/v1/apps/"+appID+"/agents/"+apps.AssistantID, nil, bearer(user)).expect(t, 404)
		e.do("GET", "/api/v1/agents/"+apps.AssistantID, nil, bearer(user)).expect(t, 200)
	})
}

func TestAgentLists(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		admin := e.signup("admin@example.com")
		owner := e.signup("owner@example.com")
		other := e.signup("other@example.com")
		deskID := e.importManifest(owner, exampleManifest(t)).expect(t, 201).str("app_id")
		tinyID := e.do("POST", "/api/v1/apps", map[string]any{"name": "Tiny", "slug": "tiny"}, bearer(owner)).expect(t, 201).str("app_id")
		tinyAgent := e.do("POST", "/api/v1/apps/"+tinyID+"/agents", map[string]any{"name": "tiny-bot", "agent_type_id": "llm",
			"agent_config": map[string]any{"model": "echo"}}, bearer(owner)).expect(t, 201).str("agent_id")

		r := e.do("GET", "/api/v1/agents", nil, bearer(owner)).expect(t, 200)
		require.Equal(t, []string{"assistant", "triage", "escalation-router", "front-desk", "tiny-bot"}, names(list(r, "agents")))
		require.Equal(t, 5.0, r.JSON["total_count"])
		r = e.do("GET", "/api/v1/agents?search=TRIAGE", nil, bearer(owner)).expect(t, 200)
		require.Equal(t, []string{"triage"}, names(list(r, "agents")))
		r = e.do("GET", "/api/v1/agents?search=which%20team", nil, bearer(owner)).expect(t, 200)
		require.Equal(t, []string{"escalation-router"}, names(list(r, "agents")), "search matches descriptions")
		r = e.do("GET", "/api/v1/agents?search=%25", nil, bearer(owner)).expect(t, 200)
		require.Empty(t, list(r, "agents"), "% is a literal, not a wildcard")
		r = e.do("GET", "/api/v1/agents?limit=2&offset=1", nil, bearer(owner)).expect(t, 200)
		require.Equal(t, []string{"triage", "escalation-router"}, names(list(r, "agents")))
		require.Equal(t, true, r.JSON["has_more"])
		e.do("GET", "/api/v1/agents?limit=0", nil, bearer(owner)).expectError(t, 400, "ValidationError", "limit")
		e.do("GET", "/api/v1/agents?offset=-1", nil, bearer(owner)).expectError(t, 400, "ValidationError", "offset")

		r = e.do("GET", "/api/v1/apps/"+deskID+"/agents", nil, bearer(owner)).expect(t, 200)
		require.Equal(t, []string{"triage", "escalation-router", "front-desk"}, names(list(r, "agents")))
		triage := list(r, "agents")[0]["agent_id"].(string)

		// Another user sees only the system agent; the owner's are 404.
		r = e.do("GET", "/api/v1/agents", nil, bearer(other)).expect(t, 200)
		require.Equal(t, []string{"assistant"}, names(list(r, "agents")))
		e.do("GET", "/api/v1/agents/"+triage, nil, bearer(other)).expectError(t, 404, "NotFoundError", "Agent not found")
		e.do("GET", "/api/v1/apps/"+deskID+"/agents", nil, bearer(other)).expectError(t, 404, "NotFoundError", "App not found")
		e.do("GET", "/api/v1/apps/"+deskID+"/agents/"+triage, nil, bearer(other)).expect(t, 404)
		e.do("GET", "/api/v1/agents/nope", nil, bearer(owner)).expect(t, 404)
		// An agent through the wrong app is 404 too.
		e.do("GET", "/api/v1/apps/"+tinyID+"/agents/"+triage, nil, bearer(owner)).expectError(t, 404, "NotFoundError", "Agent not found")

		// An admin reaches it only with a stated reason, which is audited.
		e.do("GET", "/api/v1/agents/"+triage, nil, bearer(admin)).expect(t, 404)
		r = e.do("GET", "/api/v1/agents/"+triage, nil, bearer(admin), header("X-Admin-Reason", "ticket 42")).expect(t, 200)
		require.Equal(t, deskID, r.str("app_id"))
		e.do("GET", "/api/v1/apps/"+deskID+"/agents", nil, bearer(admin), header("X-Admin-Reason", "ticket 42")).expect(t, 200)
		r = e.do("GET", "/api/v1/users/audit-log", nil, bearer(admin)).expect(t, 200)
		require.Contains(t, string(r.Body), "ticket 42")

		// A key bound to an app sees only that app's agents.
		bound, _ := e.key(owner, map[string]any{"name": "bound", "scopes": []string{"app:access"}, "app_id": tinyID})
		r = e.do("GET", "/api/v1/agents", nil, bearer(bound)).expect(t, 200)
		require.Equal(t, []string{"tiny-bot"}, names(list(r, "agents")))
		e.do("GET", "/api/v1/agents/"+triage, nil, bearer(bound)).expect(t, 404)
		e.do("GET", "/api/v1/agents/"+tinyAgent, nil, bearer(bound)).expect(t, 200)
		r = e.do("GET", "/api/v1/apps", nil, bearer(bound)).expect(t, 200)
		require.Equal(t, []string{"Tiny"}, names(list(r, "apps")))
		e.do("GET", "/api/v1/apps/"+deskID+"/agents", nil, bearer(bound)).expectError(t, 404, "NotFoundError", "App not found")
		// A bound write key manages its app, and creates no other.
		boundWrite, _ := e.key(owner, map[string]any{"name": "bw", "scopes": []string{"write:all"}, "app_id": tinyID})
		e.do("POST", "/api/v1/apps", map[string]any{"name": "New", "slug": "new"}, bearer(boundWrite)).expect(t, 403)
		e.importManifest(boundWrite, map[string]any{"name": "Desk", "slug": "support-desk", "version": "9.0.0"}).expect(t, 403)
		e.do("POST", "/api/v1/apps/"+tinyID+"/agents", map[string]any{"name": "b2", "agent_type_id": "llm",
			"agent_config": map[string]any{"model": "echo"}}, bearer(boundWrite)).expect(t, 201)
	})
}

func TestAgentManagement(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		owner := e.signup("owner@example.com")
		other := e.signup("other@example.com")
		appID := e.do("POST", "/api/v1/apps", map[string]any{"name": "A", "slug": "a"}, bearer(owner)).expect(t, 201).str("app_id")
		agents := "/api/v1/apps/" + appID + "/agents"

		r := e.do("POST", agents, map[string]any{"name": "writer", "description": "writes", "agent_type_id": "llm",
			"capabilities": []string{"text"}, "agent_config": map[string]any{"model": "echo", "temperature": 0.3, "system_message": "Be brief."}},
			bearer(owner)).expect(t, 201)
		writer := r.str("agent_id")
		require.Equal(t, writer, r.str("id"))
		require.Equal(t, appID, r.str("app_id"))
		require.Equal(t, 300.0, r.JSON["timeout_seconds"], "default timeout")
		require.Equal(t, "1.0.0", r.str("version"))
		require.Equal(t, map[string]any{"model": "echo", "temperature": 0.3, "system_message": "Be brief."}, r.JSON["agent_config"])

		for _, tc := range []struct {
			body   map[string]any
			status int
			detail string
		}{
			{map[string]any{"agent_type_id": "llm", "agent_config": map[string]any{"model": "echo"}}, 400, "Missing required field: name"},
			{map[string]any{"name": "x", "agent_type_id": "llm", "agent_config": map[string]any{}}, 400, "Missing required field: agent_config.model"},
			{map[string]any{"name": "x", "agent_type_id": "llm", "agent_config": map[string]any{"model": "echo", "temperature": 3}}, 400, "agent_config.temperature"},
			{map[string]any{"name": "x", "agent_type_id": "llm", "agent_config": map[string]any{"model": "echo", "max_tokens": -1}}, 400, "agent_config.max_tokens"},
			{map[string]any{"name": "x", "agent_type_id": "llm", "agent_config": "model"}, 400, "agent_config"},
			{map[string]any{"name": "x", "agent_type_id": "bot", "agent_config": map[string]any{}}, 400, "agent_type_id"},
			{map[string]any{"name": "x", "agent_type_id": "custom", "agent_config": map[string]any{"runtime": "webhook", "url": "ftp://x"}}, 400, "agent_config.url"},
			{map[string]any{"name": "x", "agent_type_id": "llm", "timeout_seconds": 0, "agent_config": map[string]any{"model": "echo"}}, 400, "timeout_seconds"},
			{map[string]any{"name": "writer", "agent_type_id": "llm", "agent_config": map[string]any{"model": "echo"}}, 409, `"writer" already exists`},
		} {
			e.do("POST", agents, tc.body, bearer(owner)).expectError(t, tc.status, map[int]string{400: "ValidationError", 409: "ConflictError"}[tc.status], tc.detail)
		}
		e.do("POST", agents, []byte(`[1]`), bearer(owner)).expectError(t, 400, "ValidationError", "expected a JSON object")
		e.do("POST", agents, map[string]any{"name": "x", "agent_type_id": "llm", "agent_config": map[string]any{"model": "echo"}}, bearer(other)).expectError(t, 404, "NotFoundError", "App not found")
		e.do("POST", agents, map[string]any{"name": "x", "agent_type_id": "llm", "agent_config": map[string]any{"model": "echo"}}, bearer(e.keyWith(owner, "app:access"))).expect(t, 403)

		// A webhook agent's secret is stored sealed and never shown; the
		// user's own is not echoed either.
		own := webhook.NewSecret()
		r = e.do("POST", agents, map[string]any{"name": "hook", "agent_type_id": "custom",
			"agent_config": map[string]any{"runtime": "webhook", "url": "https://hooks.example.com/a", "secret": own}}, bearer(owner)).expect(t, 201)
		hook := r.str("agent_id")
		require.NotContains(t, string(r.Body), own[len("whsec_"):])
		require.NotContains(t, r.JSON, "webhook_secret", "a secret the user supplied is not shown back")
		require.NotContains(t, string(e.do("GET", "/api/v1/agents/"+hook, nil, bearer(owner)).expect(t, 200).Body), own[len("whsec_"):])
		stored, err := e.srv.Store.AgentGet(context.Background(), hook)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(stored.SecretEnc, "v1:"), stored.SecretEnc)
		require.NotContains(t, string(stored.Config), own[len("whsec_"):])
		opened, err := e.srv.Secrets.Open(stored.SecretEnc)
		require.NoError(t, err)
		require.Equal(t, own, opened)
		for _, bad := range []string{"s3cret", "whsec_s3cret", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 16))} {
			e.do("POST", agents, map[string]any{"name": "bad", "agent_type_id": "custom",
				"agent_config": map[string]any{"runtime": "webhook", "url": "https://hooks.example.com/a", "secret": bad}}, bearer(owner)).
				expectError(t, 400, "ValidationError", "agent_config.secret")
		}

		// Without a secret one is generated and shown once.
		r = e.do("POST", agents, map[string]any{"name": "hook2", "agent_type_id": "custom",
			"agent_config": map[string]any{"runtime": "webhook", "url": "https://hooks.example.com/c"}}, bearer(owner)).expect(t, 201)
		hook2, generated := r.str("agent_id"), r.str("webhook_secret")
		require.NoError(t, webhook.CheckSecret(generated))
		require.Equal(t, map[string]any{"runtime": "webhook", "url": "https://hooks.example.com/c"}, r.JSON["agent_config"])
		stored2, err := e.srv.Store.AgentGet(context.Background(), hook2)
		require.NoError(t, err)
		opened, err = e.srv.Secrets.Open(stored2.SecretEnc)
		require.NoError(t, err)
		require.Equal(t, generated, opened)
		for _, path := range []string{"/api/v1/agents/" + hook2, agents + "/" + hook2, agents, "/api/v1/apps/" + appID + "/manifest"} {
			require.NotContains(t, string(e.do("GET", path, nil, bearer(owner)).expect(t, 200).Body), generated[len("whsec_"):], path)
		}
		// PATCH rotates it: a new one, shown once; a plain change shows none.
		r = e.do("PATCH", agents+"/"+hook2, map[string]any{"rotate_secret": true}, bearer(owner)).expect(t, 200)
		rotated := r.str("webhook_secret")
		require.NoError(t, webhook.CheckSecret(rotated))
		require.NotEqual(t, generated, rotated)
		r = e.do("PATCH", agents+"/"+hook2, map[string]any{"description": "d"}, bearer(owner)).expect(t, 200)
		require.NotContains(t, r.JSON, "webhook_secret")
		stored2, err = e.srv.Store.AgentGet(context.Background(), hook2)
		require.NoError(t, err)
		opened, err = e.srv.Secrets.Open(stored2.SecretEnc)
		require.NoError(t, err)
		require.Equal(t, rotated, opened)
		// Or to one of the user's.
		mine := webhook.NewSecret()
		r = e.do("PATCH", agents+"/"+hook2, map[string]any{"agent_config": map[string]any{"secret": mine}}, bearer(owner)).expect(t, 200)
		require.NotContains(t, string(r.Body), mine[len("whsec_"):])
		stored2, err = e.srv.Store.AgentGet(context.Background(), hook2)
		require.NoError(t, err)
		opened, err = e.srv.Secrets.Open(stored2.SecretEnc)
		require.NoError(t, err)
		require.Equal(t, mine, opened)
		e.do("PATCH", agents+"/"+hook2, map[string]any{"rotate_secret": "yes"}, bearer(owner)).expectError(t, 400, "ValidationError", "rotate_secret")
		e.do("PATCH", agents+"/"+writer, map[string]any{"rotate_secret": true}, bearer(owner)).expectError(t, 400, "ValidationError", "rotate_secret")
		e.do("PATCH", agents+"/"+hook2, map[string]any{"rotate_secret": true}, bearer(other)).expect(t, 404)
		e.do("DELETE", agents+"/"+hook2, nil, bearer(owner)).expect(t, 204)

		// PATCH merges agent_config and validates the result.
		r = e.do("PATCH", agents+"/"+writer, map[string]any{"agent_config": map[string]any{"temperature": 1.5}, "version": "1.1.0"}, bearer(owner)).expect(t, 200)
		require.Equal(t, map[string]any{"model": "echo", "temperature": 1.5, "system_message": "Be brief."}, r.JSON["agent_config"])
		require.Equal(t, "1.1.0", r.str("version"))
		require.Equal(t, "writes", r.str("description"))
		r = e.do("PATCH", agents+"/"+writer, map[string]any{"status": "disabled"}, bearer(owner)).expect(t, 200)
		require.Equal(t, "disabled", r.str("status"))
		e.do("PATCH", agents+"/"+writer, map[string]any{"agent_config": map[string]any{"temperature": -1}}, bearer(owner)).expectError(t, 400, "ValidationError", "agent_config.temperature")
		e.do("PATCH", agents+"/"+writer, map[string]any{"status": "asleep"}, bearer(owner)).expectError(t, 400, "ValidationError", "status")
		e.do("PATCH", agents+"/"+writer, map[string]any{"name": "hook"}, bearer(owner)).expectError(t, 409, "ConflictError", "already exists")
		e.do("PATCH", agents+"/"+writer, map[string]any{"name": "x"}, bearer(other)).expect(t, 404)
		// Changing the webhook's URL keeps its secret.
		e.do("PATCH", agents+"/"+hook, map[string]any{"agent_config": map[string]any{"url": "https://hooks.example.com/b"}}, bearer(owner)).expect(t, 200)
		again, err := e.srv.Store.AgentGet(context.Background(), hook)
		require.NoError(t, err)
		require.Equal(t, stored.SecretEnc, again.SecretEnc)

		e.do("DELETE", agents+"/"+writer, nil, bearer(other)).expect(t, 404)
		e.do("DELETE", agents+"/"+writer, nil, bearer(owner)).expect(t, 204)
		e.do("GET", agents+"/"+writer, nil, bearer(owner)).expect(t, 404)
		r = e.do("GET", agents, nil, bearer(owner)).expect(t, 200)
		require.Equal(t, []string{"hook"}, names(list(r, "agents")))

		// Deleting the app deletes its agents.
		e.do("DELETE", "/api/v1/apps/"+appID, nil, bearer(owner)).expect(t, 204)
		_, err = e.srv.Store.AgentGet(context.Background(), hook)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// TestVisibleAgent covers what the activation engine relies on.
func TestVisibleAgent(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		ctx := context.Background()
		owner := e.signup("owner@example.com")
		e.signup("other@example.com")
		appID := e.importManifest(owner, exampleManifest(t)).expect(t, 201).str("app_id")
		agentList := list(e.do("GET", "/api/v1/apps/"+appID+"/agents", nil, bearer(owner)).expect(t, 200), "agents")
		triage := agentList[0]["agent_id"].(string)
		ownerID := e.do("GET", "/api/v1/users/me", nil, bearer(owner)).expect(t, 200).str("id")
		caller := &auth.Caller{UserID: ownerID, Kind: auth.KindSession}
		stranger := &auth.Caller{UserID: "01900000-0000-7000-8000-000000000000", Kind: auth.KindSession}

		a, err := e.srv.Apps.VisibleAgent(ctx, caller, triage)
		require.NoError(t, err)
		require.Equal(t, "triage", a.Name)
		a, err = e.srv.Apps.VisibleAgent(ctx, stranger, apps.AssistantID)
		require.NoError(t, err)
		require.True(t, a.IsSystem)
		_, err = e.srv.Apps.VisibleAgent(ctx, stranger, triage)
		require.Equal(t, apps.ErrAgentNotFound, err)
		_, err = e.srv.Apps.VisibleAgent(ctx, caller, "not-an-id")
		require.True(t, apperr.Is(err, apperr.NotFound))
		_, err = e.srv.Apps.VisibleAgent(ctx, &auth.Caller{UserID: ownerID, Kind: auth.KindAPIKey, AppID: "01900000-0000-7000-8000-000000000001"}, triage)
		require.Equal(t, apps.ErrAgentNotFound, err, "a key bound to another app")

		app, err := e.srv.Apps.OwnedApp(ctx, caller, appID)
		require.NoError(t, err)
		require.Equal(t, "support-desk", app.Slug)
		_, err = e.srv.Apps.OwnedApp(ctx, stranger, appID)
		require.Equal(t, apps.ErrAppNotFound, err)

		e.do("PATCH", "/api/v1/apps/"+appID, map[string]any{"status": "disabled"}, bearer(owner)).expect(t, 200)
		_, err = e.srv.Apps.VisibleAgent(ctx, caller, triage)
		require.Equal(t, apps.ErrAppDisabled, err)
		require.True(t, apperr.Is(err, apperr.Conflict))
		_, err = e.srv.Apps.Agent(ctx, caller, triage)
		require.NoError(t, err, "a disabled app's agents can still be read")

		e.do("PATCH", "/api/v1/apps/"+appID, map[string]any{"status": "active"}, bearer(owner)).expect(t, 200)
		e.do("PATCH", "/api/v1/apps/"+appID+"/agents/"+triage, map[string]any{"status": "disabled"}, bearer(owner)).expect(t, 200)
		_, err = e.srv.Apps.VisibleAgent(ctx, caller, triage)
		require.Equal(t, apps.ErrAgentDisabled, err)
	})
}

// TestCustomAgentInputSchema: a custom agent's input_schema over the API:
// saved with the bounds functions have (400 naming input_schema), refused
// on an LLM agent, shown by every read, changed and removed by PATCH,
// exported and imported back with the manifest, and checked against each
// activation's input_data as a function's input is (400 naming the place).
func TestCustomAgentInputSchema(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		owner := e.signup("owner@example.com")
		appID := e.do("POST", "/api/v1/apps", map[string]any{"name": "A", "slug": "a"}, bearer(owner)).expect(t, 201).str("app_id")
		agents := "/api/v1/apps/" + appID + "/agents"
		schema := map[string]any{"type": "object", "properties": map[string]any{"subject": map[string]any{"type": "string", "minLength": 1.0},
			"n": map[string]any{"type": "integer"}}, "required": []any{"subject"}}
		custom := func(name string, s any) map[string]any {
			return map[string]any{"name": name, "agent_type_id": "custom", "input_schema": s,
				"agent_config": map[string]any{"runtime": "javascript", "code": "async function run(input) { return input; }"}}
		}

		r := e.do("POST", agents, custom("router", schema), bearer(owner)).expect(t, 201)
		router := r.str("agent_id")
		require.Equal(t, schema, r.JSON["input_schema"])
		require.Equal(t, schema, e.do("GET", "/api/v1/agents/"+router, nil, bearer(owner)).expect(t, 200).JSON["input_schema"])
		require.Equal(t, schema, e.do("GET", agents+"/"+router, nil, bearer(owner)).expect(t, 200).JSON["input_schema"])
		plain := e.do("POST", agents, custom("plain", nil), bearer(owner)).expect(t, 201)
		require.NotContains(t, plain.JSON, "input_schema", "none declared, none shown")

		big := map[string]any{"type": "object", "description": strings.Repeat("x", 70<<10)}
		for _, tc := range []struct {
			body   map[string]any
			detail string
		}{
			{map[string]any{"name": "llm", "agent_type_id": "llm", "input_schema": schema, "agent_config": map[string]any{"model": "echo"}}, "input_schema"},
			{custom("bad-type", map[string]any{"type": "thing"}), "input_schema.type"},
			{custom("not-object", []any{}), "input_schema"},
			{custom("too-big", big), "input_schema"},
		} {
			e.do("POST", agents, tc.body, bearer(owner)).expectError(t, 400, "ValidationError", tc.detail)
		}
		llm := e.do("POST", agents, map[string]any{"name": "writer", "agent_type_id": "llm", "agent_config": map[string]any{"model": "echo"}},
			bearer(owner)).expect(t, 201).str("agent_id")
		e.do("PATCH", agents+"/"+llm, map[string]any{"input_schema": schema}, bearer(owner)).expectError(t, 400, "ValidationError", "input_schema")

		// Activations: input_data is checked against it on every form.
		activate := func(input map[string]any) *resp {
			return e.do("POST", "/api/v1/agents/"+router+"/activate", map[string]any{"input_data": input}, bearer(owner))
		}
		activate(map[string]any{"n": 1}).expectError(t, 400, "ValidationError", "subject")
		activate(map[string]any{"subject": "Refund", "n": "one"}).expectError(t, 400, "ValidationError", "input_data.n")
		e.do("POST", "/api/v1/apps/"+appID+"/agents/"+router+"/activate", map[string]any{"input_data": map[string]any{"subject": ""}},
			bearer(owner)).expectError(t, 400, "ValidationError", "input_data.subject")
		e.do("POST", "/api/v1/activations", map[string]any{"agent_id": router, "input_data": map[string]any{}},
			bearer(owner)).expectError(t, 400, "ValidationError", "input_data")
		total := e.do("GET", "/api/v1/activations?agent_id="+router, nil, bearer(owner)).expect(t, 200).JSON["total_count"]
		require.EqualValues(t, 0, total, "a refused input records nothing")
		id := activate(map[string]any{"subject": "Refund", "n": 2}).expect(t, 201).str("activation_id")
		done := e.await(owner, id)
		require.Equal(t, "completed", done.str("status"), string(done.Body))

		// Export and import: the schema goes with the agent.
		exported := e.do("GET", "/api/v1/apps/"+appID+"/manifest", nil, bearer(owner)).expect(t, 200)
		var m map[string]any
		require.NoError(t, json.Unmarshal(exported.Body, &m))
		byName := map[string]map[string]any{}
		for _, a := range m["agents"].([]any) {
			byName[a.(map[string]any)["name"].(string)] = a.(map[string]any)
		}
		require.Equal(t, schema, byName["router"]["input_schema"])
		require.NotContains(t, byName["plain"], "input_schema")
		require.NotContains(t, byName["writer"], "input_schema")
		m["slug"] = "a-copy"
		copyID := e.importManifest(owner, m).expect(t, 201).str("app_id")
		for _, a := range list(e.do("GET", "/api/v1/apps/"+copyID+"/agents", nil, bearer(owner)).expect(t, 200), "agents") {
			got := e.do("GET", "/api/v1/agents/"+a["agent_id"].(string), nil, bearer(owner)).expect(t, 200)
			if a["name"] == "router" {
				require.Equal(t, schema, got.JSON["input_schema"])
			} else {
				require.NotContains(t, got.JSON, "input_schema")
			}
		}
		bad := map[string]any{"name": "B", "slug": "b", "version": "1.0.0", "agents": []any{
			map[string]any{"name": "x", "agent_type_id": "llm", "input_schema": schema, "agent_config": map[string]any{"model": "echo"}}}}
		e.importManifest(owner, bad).expectError(t, 400, "ValidationError", "agents[0].input_schema")

		// PATCH changes it (the new one applies at once) and null removes it.
		other := map[string]any{"type": "object", "required": []any{"item_id"}}
		r = e.do("PATCH", agents+"/"+router, map[string]any{"input_schema": other}, bearer(owner)).expect(t, 200)
		require.Equal(t, other, r.JSON["input_schema"])
		activate(map[string]any{"subject": "Refund"}).expectError(t, 400, "ValidationError", "item_id")
		r = e.do("PATCH", agents+"/"+router, map[string]any{"input_schema": nil}, bearer(owner)).expect(t, 200)
		require.NotContains(t, r.JSON, "input_schema")
		activate(map[string]any{"anything": true}).expect(t, 201)

		// The document shows it wherever an agent is written or read.
		doc := e.do("GET", "/api/v1/openapi.json", nil).expect(t, 200)
		var spec struct {
			Components struct {
				Schemas map[string]struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"schemas"`
			} `json:"components"`
		}
		require.NoError(t, json.Unmarshal(doc.Body, &spec))
		for _, name := range []string{"AgentDetail", "SavedAgent", "AgentSpec", "AgentPatch"} {
			require.Contains(t, spec.Components.Schemas[name].Properties, "input_schema", name)
		}
	})
}
