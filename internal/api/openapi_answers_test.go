package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/danielgtaylor/huma/v2"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/oauthtest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// contract checks real answers against the document the server serves:
// the status is one the operation lists, and the body matches its schema
// (closed objects, required fields, enums, arrays never null).
type contract struct {
	t    *testing.T
	e    *env
	oapi *huma.OpenAPI
	mu   sync.Mutex
	seen map[string]bool
}

func newContract(t *testing.T, e *env) *contract {
	return &contract{t: t, e: e, oapi: e.srv.API.Huma().OpenAPI(), seen: map[string]bool{}}
}

var pathParam = regexp.MustCompile(`\{[A-Za-z_]+\}`)

// call sends a request to the route template with its path parameters
// filled in order, expects status, and checks the answer.
func (c *contract) call(status int, method, template string, params []string, body any, opts ...opt) *resp {
	c.t.Helper()
	template, query, _ := strings.Cut(template, "?")
	i := 0
	path := pathParam.ReplaceAllStringFunc(template, func(string) string { i++; return params[i-1] })
	if query != "" {
		path += "?" + query
	}
	r := c.e.do(method, path, body, opts...)
	require.Equal(c.t, status, r.Status, "%s %s: %s", method, path, r.Body)
	c.check(method, template, r)
	return r
}

func (c *contract) operation(method, template string) *huma.Operation {
	c.t.Helper()
	item := c.oapi.Paths[template]
	require.NotNil(c.t, item, template)
	op := map[string]*huma.Operation{"GET": item.Get, "POST": item.Post, "PUT": item.Put, "PATCH": item.Patch, "DELETE": item.Delete}[method]
	require.NotNil(c.t, op, "%s %s", method, template)
	return op
}

func (c *contract) check(method, template string, r *resp) {
	c.t.Helper()
	op := c.operation(method, template)
	c.mu.Lock()
	c.seen[op.OperationID] = true
	c.mu.Unlock()
	doc := op.Responses[strconv.Itoa(r.Status)]
	require.NotNil(c.t, doc, "%s %s answered %d, which the document does not list: %s", method, template, r.Status, r.Body)
	for _, name := range perAnswerHeaders {
		if r.Header.Get(name) != "" {
			require.Contains(c.t, doc.Headers, name, "%s %s %d sends %s: the document lists it", method, template, r.Status, name)
		}
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
		require.NotNil(c.t, doc.Content["text/event-stream"], "%s %s %d: a stream the document does not list", method, template, r.Status)
		return
	}
	mt := doc.Content["application/json"]
	if mt == nil {
		require.Empty(c.t, r.Body, "%s %s %d has no documented body", method, template, r.Status)
		return
	}
	var v any
	require.NoError(c.t, json.Unmarshal(r.Body, &v), "%s %s: %s", method, template, r.Body)
	c.valid(mt.Schema, v, method+" "+template+" "+strconv.Itoa(r.Status))
}

// perAnswerHeaders are the headers the document lists where they are sent
// (the introduction promises X-Request-ID on every answer).
var perAnswerHeaders = []string{"Location", "Set-Cookie", "Retry-After", "Preference-Applied", "Idempotent-Replayed"}

func (c *contract) valid(schema *huma.Schema, v any, where string) {
	c.t.Helper()
	res := &huma.ValidateResult{}
	huma.Validate(c.oapi.Components.Schemas, schema, huma.NewPathBuffer(nil, 0), huma.ModeReadFromServer, v, res)
	b, _ := json.Marshal(v)
	require.Empty(c.t, res.Errors, "%s: the answer does not match the document: %s", where, b)
}

// TestAnswersMatchTheDocument drives nearly every operation and the
// WebSocket and checks each answer against the served document, on both
// databases.
func TestAnswersMatchTheDocument(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		c := newContract(t, e)
		none := []string(nil)
		one := func(s ...string) []string { return s }

		// Accounts: JSON answers and browser redirects.
		c.call(201, "POST", "/api/v1/auth/register", none, form("email", "admin@example.com", "password", "password1", "confirm_password", "password1"), acceptJSON)
		c.call(303, "POST", "/api/v1/auth/register", none, form("email", "b@example.com", "password", "password1", "confirm_password", "password1"))
		c.call(409, "POST", "/api/v1/auth/register", none, form("email", "b@example.com", "password", "password1", "confirm_password", "password1"), acceptJSON)
		admin := c.call(200, "POST", "/api/v1/auth/login", none, form("email", "admin@example.com", "password", "password1"), acceptJSON).str("access_token")
		c.call(303, "POST", "/api/v1/auth/login", none, form("email", "b@example.com", "password", "password1"))
		other := e.login("b@example.com", "password1")
		as := bearer(admin)
		me := c.call(200, "GET", "/api/v1/users/me", none, nil, as).str("id")
		c.call(401, "GET", "/api/v1/users/me", none, nil)
		c.call(200, "PATCH", "/api/v1/users/me", none, map[string]any{"first_name": "Ada"}, as)
		c.call(200, "GET", "/api/v1/users", none, nil, as)
		c.call(200, "GET", "/api/v1/users/{id}", one(me), nil, as)
		c.call(200, "PATCH", "/api/v1/users/{id}", one(me), map[string]any{"is_active": true}, as)
		c.call(200, "GET", "/api/v1/users/audit-log", none, nil, as)
		c.call(204, "POST", "/api/v1/users/me/password", none, map[string]any{"current_password": "password1", "new_password": "password2"}, as)

		// Keys.
		key := c.call(201, "POST", "/api/v1/user/api-keys", none, map[string]any{"name": "ci", "scopes": []string{"write:all"}}, as)
		c.call(200, "GET", "/api/v1/user/api-keys", none, nil, as)
		c.call(400, "POST", "/api/v1/user/api-keys", none, map[string]any{"name": "ci", "scopes": []string{"root"}}, as)

		// Apps and manifests.
		m := exampleManifest(t)
		// A webhook agent without a secret: the answers show the one made for it.
		m["agents"] = append(m["agents"].([]any), map[string]any{"name": "hook", "agent_type_id": "custom",
			"agent_config": map[string]any{"runtime": "webhook", "url": "https://agents.example.com/run"}})
		app := c.call(201, "POST", "/api/v1/apps/import-manifest", none, m, as).str("app_id")
		m["version"] = "1.1.0"
		c.call(200, "POST", "/api/v1/apps/import-manifest", none, m, as)
		c.call(409, "POST", "/api/v1/apps/import-manifest", none, m, as)
		c.call(201, "POST", "/api/v1/apps", none, map[string]any{"name": "Notes", "slug": "notes"}, as)
		c.call(200, "GET", "/api/v1/apps", none, nil, as)
		c.call(200, "GET", "/api/v1/apps/{app_id}", one(app), nil, as)
		c.call(404, "GET", "/api/v1/apps/{app_id}", one("00000000-0000-0000-0000-000000000000"), nil, as)
		c.call(200, "PATCH", "/api/v1/apps/{app_id}", one(app), map[string]any{"marketplace_status": "published"}, as)
		c.call(200, "GET", "/api/v1/apps/marketplace", none, nil, bearer(other))
		c.call(201, "POST", "/api/v1/apps/{app_id}/install", one(app), map[string]any{"slug": "desk-copy"}, bearer(other))
		c.call(200, "GET", "/api/v1/apps/{app_id}/manifest", one(app), nil, as)
		c.call(200, "GET", "/api/v1/apps/{app_id}/models", one(app), nil, as)

		// Functions.
		fns := list(c.call(200, "GET", "/api/v1/functions", none, nil, as), "functions")
		fn := fns[0]["id"].(string)
		c.call(200, "GET", "/api/v1/functions/{function_id}", one(fn), nil, as)
		c.call(200, "PATCH", "/api/v1/functions/{function_id}", one(fn), map[string]any{"description": "d"}, as)
		made := c.call(201, "POST", "/api/v1/functions", none, map[string]any{"app_id": app, "name": "fails",
			"code": `async function run(i, ctx) { ctx.log("x"); throw new Error("no"); }`}, as).str("id")
		c.call(409, "POST", "/api/v1/functions", none, map[string]any{"app_id": app, "name": "fails", "code": "async function run() {}"}, as)
		c.call(400, "POST", "/api/v1/functions", none, map[string]any{"app_id": app, "name": "x"}, as)
		fnInput := map[string]any{"input": map[string]any{"subject": "s", "body": "b", "customer_email": "a@b.co"}}
		c.call(200, "POST", "/api/v1/functions/{function_id}/execute", one(fn), fnInput, as)
		c.call(400, "POST", "/api/v1/functions/{function_id}/execute", one(fn), map[string]any{"input": map[string]any{}}, as)
		c.call(200, "POST", "/api/v1/apps/{app_id}/functions/{function_id}/execute", one(app, made), nil, as)
		c.call(200, "GET", "/api/v1/apps/{app_id}/functions/history", one(app), nil, as)
		c.call(200, "GET", "/api/v1/apps/{app_id}/functions/{function_id}/history", one(app, made), nil, as)
		c.call(204, "DELETE", "/api/v1/functions/{function_id}", one(made), nil, as)

		// OAuth authenticators: the manifest's, others made here, the errors.
		helpdesk := list(c.call(200, "GET", "/api/v1/oauth/authenticators?app_id="+app, none, nil, as), "authenticators")[0]["id"].(string)
		c.call(400, "GET", "/api/v1/oauth/authenticators", none, nil, as)
		c.call(404, "GET", "/api/v1/oauth/authenticators?app_id="+app, none, nil, bearer(other))
		c.call(200, "GET", "/api/v1/oauth/authenticators/{id}", one(helpdesk), nil, as)
		c.call(200, "PATCH", "/api/v1/oauth/authenticators/{id}", one(helpdesk), map[string]any{"client_secret": "cs", "is_active": false}, as)
		c.call(400, "PATCH", "/api/v1/oauth/authenticators/{id}", one(helpdesk), map[string]any{"scopes": []string{}}, as)
		googleAuth := map[string]any{"name": "google", "authenticator_type": "google", "client_id": "1-a.apps.googleusercontent.com",
			"client_secret": "s", "scopes": []string{"openid", "email"}, "configuration": map[string]any{"prompt": "consent", "pkce_enabled": true}}
		google := c.call(201, "POST", "/api/v1/oauth/authenticators/{id}", one(app), googleAuth, as).str("id")
		c.call(409, "POST", "/api/v1/oauth/authenticators/{id}", one(app), googleAuth, as)
		c.call(400, "POST", "/api/v1/oauth/authenticators/{id}", one(app), map[string]any{"name": "x"}, as)
		c.call(404, "GET", "/api/v1/oauth/authenticators/{id}", one(google), nil, bearer(other))
		c.call(200, "GET", "/api/v1/apps/{app_id}/service-providers", one(app), nil, as)
		c.call(201, "POST", "/api/v1/apps/{app_id}/service-providers", one(app), map[string]any{"name": "slack", "authenticator_type": "slack",
			"client_id": "123.456", "client_secret": "s", "scopes": []string{"chat:write"}}, as)
		c.call(204, "DELETE", "/api/v1/oauth/authenticators/{id}", one(google), nil, as)
		c.call(404, "DELETE", "/api/v1/oauth/authenticators/{id}", one(google), nil, as)

		// MCP servers.
		srvID := c.call(201, "POST", "/api/v1/apps/{app_id}/mcp-servers", one(app), map[string]any{"name": "docs", "url": "https://mcp.example.com/mcp"}, as).str("id")
		c.call(409, "POST", "/api/v1/apps/{app_id}/mcp-servers", one(app), map[string]any{"name": "docs", "url": "https://mcp.example.com/mcp"}, as)
		c.call(400, "POST", "/api/v1/apps/{app_id}/mcp-servers", one(app), map[string]any{"name": "x", "url": "http://10.0.0.1/mcp"}, as)
		c.call(200, "GET", "/api/v1/apps/{app_id}/mcp-servers", one(app), nil, as)
		c.call(200, "GET", "/api/v1/apps/{app_id}/mcp-servers/{server_id}", one(app, srvID), nil, as)
		c.call(404, "GET", "/api/v1/apps/{app_id}/mcp-servers/{server_id}", one(app, srvID), nil, bearer(other))
		c.call(200, "PATCH", "/api/v1/apps/{app_id}/mcp-servers/{server_id}", one(app, srvID), map[string]any{"authenticator": "helpdesk"}, as)
		c.call(400, "PATCH", "/api/v1/apps/{app_id}/mcp-servers/{server_id}", one(app, srvID), map[string]any{"authenticator": "nope"}, as)
		c.call(204, "DELETE", "/api/v1/apps/{app_id}/mcp-servers/{server_id}", one(app, srvID), nil, as)

		// The credential service, against a real OAuth server.
		p := oauthtest.New(t, oauthtest.Options{})
		p.AddClient("support-desk-client", "cs", []string{e.srv.Config.PublicURL + "/api/v1/oauth/callback"}, []string{"tickets.read", "tickets.write"})
		c.call(200, "PATCH", "/api/v1/oauth/authenticators/{id}", one(helpdesk), map[string]any{"is_active": true,
			"authorize_url": p.AuthorizeURL(), "token_url": p.TokenURL(), "revoke_url": p.RevokeURL(),
			"configuration": map[string]any{"userinfo_url": p.UserinfoURL(), "pkce_enabled": true}}, as)
		cred := one(app, "helpdesk")
		c.call(404, "GET", "/api/v1/credentials/{app_id}/{provider}", cred, nil, as)
		c.call(400, "GET", "/api/v1/credentials/{app_id}/{provider}", one(app, "nope"), nil, as)
		c.call(200, "GET", "/api/v1/credentials/{app_id}/{provider}/auth-url", cred, nil, as)
		authz := c.call(302, "GET", "/api/v1/credentials/{app_id}/{provider}/authorize?return_to=/apps", cred, nil, cookie(admin))
		code, state := e.consent(authz.Header.Get("Location"), "ada")
		c.call(403, "GET", "/api/v1/oauth/callback?code="+code+"&state="+state, none, nil)
		c.call(303, "GET", "/api/v1/oauth/callback?code="+code+"&state="+state, none, nil, cookie(admin))
		c.call(400, "GET", "/api/v1/oauth/callback?code="+code+"&state="+state, none, nil, cookie(admin))
		appKey := bearer(c.call(201, "POST", "/api/v1/user/api-keys", none, map[string]any{"name": "agent", "scopes": []string{"app:access"}}, as).str("key"))
		c.call(200, "GET", "/api/v1/credentials?app_id="+app, none, nil, as)
		c.call(200, "GET", "/api/v1/credentials/{app_id}/{provider}", cred, nil, appKey)
		c.call(200, "GET", "/api/v1/credentials/{app_id}/{provider}", cred, nil, as)
		c.call(403, "GET", "/api/v1/credentials/{app_id}/{provider}?required_scopes=admin", cred, nil, appKey)
		c.call(200, "GET", "/api/v1/credentials/{app_id}/{provider}/connected", cred, nil, as)
		c.call(200, "POST", "/api/v1/credentials/{app_id}/{provider}/validate-scopes", cred, map[string]any{"required_scopes": []string{"x"}}, as)
		c.call(200, "GET", "/api/v1/credentials/{app_id}/{provider}/token-info", cred, nil, as)
		c.call(200, "GET", "/api/v1/credentials/{app_id}/{provider}/user-info", cred, nil, as)
		c.call(200, "POST", "/api/v1/credentials/{app_id}/{provider}/refresh", cred, nil, appKey)
		p.SetDown(true)
		c.call(502, "POST", "/api/v1/credentials/{app_id}/{provider}/refresh", cred, nil, appKey)
		c.call(200, "GET", "/api/v1/credentials?app_id="+app, none, nil, as)
		p.SetDown(false)
		c.call(200, "DELETE", "/api/v1/credentials/{app_id}/{provider}", cred, nil, as)

		// App data.
		c.call(200, "GET", "/api/v1/data/{app_id}/models", one(app), nil, as)
		c.call(201, "POST", "/api/v1/data/{app_id}/models", one(app), map[string]any{"slug": "note", "fields": []any{
			map[string]any{"name": "text", "type": "text", "required": true}}}, as)
		c.call(400, "POST", "/api/v1/data/{app_id}/models", one(app), map[string]any{"slug": "models", "fields": []any{}}, as)
		c.call(409, "POST", "/api/v1/data/{app_id}/models", one(app), map[string]any{"slug": "note", "fields": []any{}}, as)
		c.call(200, "GET", "/api/v1/data/{app_id}/models/{slug}", one(app, "note"), nil, as)
		c.call(200, "PATCH", "/api/v1/data/{app_id}/models/{slug}", one(app, "note"), map[string]any{"name": "Notes"}, as)
		item := c.call(201, "POST", "/api/v1/data/{app_id}/{slug}", one(app, "note"), map[string]any{"data": map[string]any{"text": "hi"}}, as).str("item_id")
		c.call(400, "POST", "/api/v1/data/{app_id}/{slug}", one(app, "note"), map[string]any{"data": map[string]any{"text": 1}}, as)
		c.call(200, "GET", "/api/v1/data/{app_id}/{slug}", one(app, "note"), nil, as)
		c.call(200, "GET", "/api/v1/data/{app_id}/{slug}/{item_id}", one(app, "note", item), nil, as)
		c.call(200, "PATCH", "/api/v1/data/{app_id}/{slug}/{item_id}", one(app, "note", item), map[string]any{"data": map[string]any{"text": "p"}}, as)
		c.call(200, "PUT", "/api/v1/data/{app_id}/{slug}/{item_id}", one(app, "note", item), map[string]any{"data": map[string]any{"text": "q"}}, as)
		c.call(200, "GET", "/api/apps/{appId}/models", one(app), nil, as)
		c.call(200, "GET", "/api/apps/{appId}/{modelSlug}/fields", one(app, "note"), nil, as)
		c.call(200, "GET", "/api/apps/{appId}/{modelSlug}", one(app, "note"), nil, as)
		c.call(204, "DELETE", "/api/v1/data/{app_id}/{slug}/{item_id}", one(app, "note", item), nil, as)
		c.call(404, "GET", "/api/v1/data/{app_id}/{slug}/{item_id}", one(app, "note", item), nil, as)
		c.call(204, "DELETE", "/api/v1/data/{app_id}/models/{slug}", one(app, "note"), nil, as)

		// Agents.
		c.call(200, "GET", "/api/v1/agents", none, nil, as)
		agents := list(c.call(200, "GET", "/api/v1/apps/{app_id}/agents", one(app), nil, as), "agents")
		agent := agents[0]["agent_id"].(string)
		c.call(200, "GET", "/api/v1/agents/{agent_id}", one(agent), nil, as)
		c.call(200, "GET", "/api/v1/apps/{app_id}/agents/{agent_id}", one(app, agent), nil, as)
		added := c.call(201, "POST", "/api/v1/apps/{app_id}/agents", one(app), map[string]any{"name": "helper", "agent_type_id": "llm",
			"agent_config": map[string]any{"model": "echo", "provider_id": "echo"}}, as).str("agent_id")
		c.call(200, "PATCH", "/api/v1/apps/{app_id}/agents/{agent_id}", one(app, added), map[string]any{"description": "helps"}, as)
		hook := c.call(201, "POST", "/api/v1/apps/{app_id}/agents", one(app), map[string]any{"name": "hook2", "agent_type_id": "custom",
			"agent_config": map[string]any{"runtime": "webhook", "url": "https://agents.example.com/run"}}, as)
		require.NotEmpty(t, hook.str("webhook_secret"))
		require.NotEmpty(t, c.call(200, "PATCH", "/api/v1/apps/{app_id}/agents/{agent_id}", one(app, hook.str("agent_id")),
			map[string]any{"rotate_secret": true}, as).str("webhook_secret"))

		// Activations, and the events they make.
		socket, status := e.socket("since=0", http.Header{"Authorization": {"Bearer " + admin}})
		require.Equal(t, http.StatusSwitchingProtocols, status)
		input := map[string]any{"input_data": map[string]any{"prompt": "hi"}, "context": map[string]any{"chat_id": "c1"}}
		ids := []string{
			c.call(201, "POST", "/api/v1/agents/{agent_id}/activate", one(agent), input, as).str("activation_id"),
			c.call(201, "POST", "/api/v1/apps/{app_id}/agents/{agent_id}/activate", one(app, agent), input, as).str("activation_id"),
			c.call(201, "POST", "/api/v1/activations", none, map[string]any{"agent_id": added, "input_data": map[string]any{"prompt": "x"}}, as).str("activation_id"),
		}
		c.call(400, "POST", "/api/v1/activations", none, map[string]any{"agent_id": added}, as)
		for _, id := range ids {
			e.await(admin, id)
			c.call(200, "GET", "/api/v1/activations/{activation_id}", one(id), nil, as)
			c.call(200, "GET", "/api/v1/apps/{app_id}/agents/activations/{activation_id}", one(app, id), nil, as)
			c.call(200, "GET", "/api/v1/activations/{activation_id}/deliveries", one(id), nil, as)
			c.call(200, "GET", "/api/v1/activations/{activation_id}/logs", one(id), nil, as)
		}
		c.call(409, "POST", "/api/v1/activations/{activation_id}/cancel", one(ids[0]), nil, as)

		// Create-and-wait, create-and-stream, and the stream.
		waited := c.call(201, "POST", "/api/v1/apps/{app_id}/agents/{agent_id}/activate", one(app, agent), input, as, header("Prefer", "wait=20"))
		require.Equal(t, "wait=20", waited.Header.Get("Preference-Applied"))
		require.Equal(t, "completed", waited.str("status"))
		c.call(201, "POST", "/api/v1/agents/{agent_id}/activate", one(agent), input, as, header("Prefer", "wait=20"))
		streamed := c.call(201, "POST", "/api/v1/activations", none, map[string]any{"agent_id": agent, "input_data": map[string]any{"prompt": "s"}},
			as, header("Accept", "text/event-stream"))
		require.Contains(t, string(streamed.Body), "event: activation")
		c.call(200, "GET", "/api/v1/activations/{activation_id}/stream", one(ids[0]), nil, as)
		c.call(204, "GET", "/api/v1/activations/{activation_id}/stream", one(ids[0]), nil, as, header("Last-Event-ID", "end"))

		// A webhook delivery that will be retried.
		var hits atomic.Int32
		rcv := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hits.Add(1) == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		hooked := c.call(201, "POST", "/api/v1/agents/{agent_id}/activate", one(agent), map[string]any{"input_data": map[string]any{"prompt": "w"},
			"metadata": map[string]any{"webhook_url": rcv.URL + "/hook"}}, as).str("activation_id")
		e.awaitDeliveries(admin, hooked, 1)
		dl := list(c.call(200, "GET", "/api/v1/activations/{activation_id}/deliveries", one(hooked), nil, as), "deliveries")[0]
		require.Equal(t, "retrying", dl["state"])
		require.NotEmpty(t, dl["next_attempt_at"])

		// The example's custom agent: it writes a ticket record, calls the
		// LLM and logs; its output is the agent's own JSON.
		var router string
		for _, a := range agents {
			if a["name"] == "escalation-router" {
				router = a["agent_id"].(string)
			}
		}
		routed := c.call(201, "POST", "/api/v1/agents/{agent_id}/activate", one(router), map[string]any{"input_data": map[string]any{
			"subject": "Refund", "body": "Charged twice", "customer_email": "c@example.com"}}, as, header("Prefer", "wait=20"))
		require.Equal(t, "completed", routed.str("status"))
		routedID := routed.str("activation_id")
		c.call(200, "GET", "/api/v1/activations/{activation_id}", one(routedID), nil, as)
		require.NotEmpty(t, list(c.call(200, "GET", "/api/v1/activations/{activation_id}/logs", one(routedID), nil, as), "logs"))
		c.call(404, "GET", "/api/v1/activations/{activation_id}/logs", one(routedID), nil, bearer(other))

		// The example's front-desk: a tool loop whose escalation waits for
		// a person's approval; its steps (llm, tool and wait: usage null on
		// the last two) while it waits and once it is answered.
		var desk string
		for _, a := range agents {
			if a["name"] == "front-desk" {
				desk = a["agent_id"].(string)
			}
		}
		waiting := c.call(201, "POST", "/api/v1/apps/{app_id}/agents/{agent_id}/activate", one(app, desk), map[string]any{"input_data": map[string]any{
			"prompt": "call record_ticket {\"subject\": \"Charged twice\", \"body\": \"Two charges.\", \"customer_email\": \"c@example.com\"}\n" +
				"call escalate {\"customer_email\": \"c@example.com\", \"reason\": \"double charge\"}"}}, as, header("Prefer", "wait=20"))
		require.Equal(t, "running", waiting.str("status"), "it waits for the approval")
		deskRun := waiting.str("activation_id")
		wp := waiting.JSON["waiting"].(map[string]any)
		c.call(200, "GET", "/api/v1/activations/{activation_id}/steps", one(deskRun), nil, as)
		c.call(404, "GET", "/api/v1/activations/{activation_id}/steps", one(deskRun), nil, bearer(other))
		approve := map[string]any{"decisions": []any{map[string]any{"tool_call_id": wp["tool_calls"].([]any)[0].(map[string]any)["tool_call_id"], "type": "approve"}}}
		c.call(202, "POST", "/api/v1/activations/{activation_id}/waitpoints/{waitpoint_id}", one(deskRun, wp["waitpoint_id"].(string)), approve, as)
		c.call(409, "POST", "/api/v1/activations/{activation_id}/waitpoints/{waitpoint_id}", one(deskRun, wp["waitpoint_id"].(string)), approve, as)
		e.await(admin, deskRun)
		c.call(200, "GET", "/api/v1/activations/{activation_id}/steps", one(deskRun), nil, as)
		ticket := list(c.call(200, "GET", "/api/v1/data/{app_id}/{slug}", one(app, "tickets"), nil, as), "items")[0]["item_id"].(string)
		c.call(200, "GET", "/api/v1/data/{app_id}/{slug}/{item_id}", one(app, "tickets", ticket), nil, as)
		c.call(200, "GET", "/api/apps/{appId}/{modelSlug}", one(app, "tickets"), nil, as)
		c.call(200, "GET", "/api/apps/{appId}/{modelSlug}/fields", one(app, "tickets"), nil, as)
		c.call(400, "GET", "/api/v1/data/{app_id}/{slug}?filter[colour]=red", one(app, "tickets"), nil, as)
		c.call(404, "GET", "/api/v1/data/{app_id}/{slug}", one(app, "nothing"), nil, as)
		// A custom agent may answer any JSON, or nothing (null), or throw.
		for i, code := range []string{`async function run() { return "just text"; }`, `async function run() {}`,
			`async function run() { throw new Error("no"); }`} {
			custom := c.call(201, "POST", "/api/v1/apps/{app_id}/agents", one(app), map[string]any{"name": "custom-" + strconv.Itoa(i),
				"agent_type_id": "custom", "agent_config": map[string]any{"runtime": "javascript", "code": code}}, as).str("agent_id")
			c.call(201, "POST", "/api/v1/apps/{app_id}/agents/{agent_id}/activate", one(app, custom), map[string]any{"input_data": map[string]any{}},
				as, header("Prefer", "wait=20"))
		}

		// Pipelines: the example's (function into the custom agent), one
		// made here, runs that complete and fail.
		pipes := list(c.call(200, "GET", "/api/v1/pipelines", none, nil, as), "pipelines")
		intake := pipes[0]["pipeline_id"].(string)
		c.call(200, "GET", "/api/v1/pipelines?app_id="+app, none, nil, as)
		c.call(200, "GET", "/api/v1/pipelines/{pipeline_id}", one(intake), nil, as)
		c.call(404, "GET", "/api/v1/pipelines/{pipeline_id}", one(intake), nil, bearer(other))
		run := c.call(201, "POST", "/api/v1/pipelines/{pipeline_id}/run", one(intake), map[string]any{"input": map[string]any{
			"subject": " App crashes ", "body": "Error 500", "customer_email": "d@example.com", "priority": "urgent"}}, as).str("run_id")
		broken := c.call(201, "POST", "/api/v1/pipelines", none, map[string]any{"app_id": app, "name": "broken", "steps": []any{
			map[string]any{"id": "bad", "type": "function", "ref": "normalize-ticket", "input": map[string]any{"subject": "{{input.subject}}"}},
			map[string]any{"id": "never", "type": "agent", "ref": "triage", "input": map[string]any{"prompt": "{{steps.bad.output.subject}}"}}}}, as).str("pipeline_id")
		c.call(409, "POST", "/api/v1/pipelines", none, map[string]any{"app_id": app, "name": "broken", "steps": []any{
			map[string]any{"id": "a", "type": "agent", "ref": "triage"}}}, as)
		c.call(400, "POST", "/api/v1/pipelines", none, map[string]any{"app_id": app, "name": "empty", "steps": []any{}}, as)
		c.call(200, "PATCH", "/api/v1/pipelines/{pipeline_id}", one(broken), map[string]any{"description": "fails at its first step"}, as)
		failedRun := c.call(201, "POST", "/api/v1/pipelines/{pipeline_id}/run", one(broken), map[string]any{"input": map[string]any{"subject": "s"}}, as).str("run_id")
		c.call(400, "POST", "/api/v1/pipelines/{pipeline_id}/run", one(broken), []byte(`{"input": `), as)
		for _, id := range []string{run, failedRun} {
			e.awaitRun(admin, id)
			c.call(200, "GET", "/api/v1/pipelines/runs/{run_id}", one(id), nil, as)
		}
		require.Equal(t, "completed", c.call(200, "GET", "/api/v1/pipelines/runs/{run_id}", one(run), nil, as).str("status"))
		failed := c.call(200, "GET", "/api/v1/pipelines/runs/{run_id}", one(failedRun), nil, as)
		require.Equal(t, "failed", failed.str("status"))
		require.Equal(t, "skipped", list(failed, "steps")[1]["status"])
		c.call(404, "GET", "/api/v1/pipelines/runs/{run_id}", one(run), nil, bearer(other))
		c.call(200, "GET", "/api/v1/pipelines/runs?pipeline_id="+intake, none, nil, as)
		c.call(404, "GET", "/api/v1/pipelines/runs?pipeline_id="+intake, none, nil, bearer(other))
		c.call(400, "GET", "/api/v1/pipelines/runs", none, nil, as)

		// Oversized headers, on any route.
		c.call(431, "GET", "/api/v1/users/me", none, nil, as, header("X-Pad", strings.Repeat("a", 65<<10)))
		c.call(200, "GET", "/api/v1/activations", none, nil, as)
		c.call(400, "GET", "/api/v1/activations?limit=0", none, nil, as)
		c.call(200, "GET", "/api/v1/agents/{agent_id}/activations", one(agent), nil, as)
		c.call(200, "GET", "/api/v1/apps/{app_id}/activations", one(app), nil, as)

		// Every event so far, then the answers to client messages.
		ws := c.oapi.Paths["/api/v1/ws"].Get.Responses["101"].Content["application/json"].Schema
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		seen := map[string]int{}
		for seen["activation_completed"] < len(ids) || seen["activation_failed"] == 0 || seen["pipeline_run_started"] < 2 ||
			seen["pipeline_run_completed"] == 0 || seen["pipeline_run_failed"] == 0 {
			_, data, err := socket.Read(ctx)
			require.NoError(t, err, "events seen: %v", seen)
			var msg map[string]any
			require.NoError(t, json.Unmarshal(data, &msg))
			c.valid(ws, msg, "WebSocket event")
			seen[msg["type"].(string)]++
		}
		for _, send := range []string{`{"type":"subscribe","app_id":"` + app + `"}`, `nope`} {
			require.NoError(t, socket.Write(ctx, websocket.MessageText, []byte(send)))
			_, data, err := socket.Read(ctx)
			require.NoError(t, err)
			var msg map[string]any
			require.NoError(t, json.Unmarshal(data, &msg))
			c.valid(ws, msg, "WebSocket answer to "+send)
		}
		socket.Close(websocket.StatusNormalClosure, "")

		// Webhooks and LLM providers.
		c.call(200, "GET", "/api/v1/apps/{app_id}/webhook-secret", one(app), nil, as)
		c.call(200, "POST", "/api/v1/apps/{app_id}/webhook-secret", one(app), nil, as)
		c.call(200, "GET", "/api/v1/llm-providers", none, nil, as)
		provider := c.call(201, "POST", "/api/v1/llm-providers", none, map[string]any{"name": "mine", "provider_type": "echo"}, as).str("id")
		c.call(409, "POST", "/api/v1/llm-providers", none, map[string]any{"name": "mine", "provider_type": "echo"}, as)
		c.call(200, "GET", "/api/v1/llm-providers/{id}", one(provider), nil, as)
		c.call(200, "PATCH", "/api/v1/llm-providers/{id}", one(provider), map[string]any{"models": []string{"a"}}, as)
		c.call(200, "POST", "/api/v1/llm-providers/{id}/test", one(provider), nil, as)
		c.call(200, "GET", "/api/v1/apps/{app_id}/model-providers", one(app), nil, as)
		c.call(204, "DELETE", "/api/v1/llm-providers/{id}", one(provider), nil, as)

		// The worker and operations.
		c.call(200, "GET", "/api/v1/worker/status", none, nil, as)
		c.call(200, "GET", "/api/v1/worker/jobs", none, nil, as)
		c.call(200, "POST", "/api/v1/worker/pause", none, nil, as)
		c.call(200, "POST", "/api/v1/worker/resume", none, nil, as)
		c.call(403, "GET", "/api/v1/worker/jobs", none, nil, bearer(other))
		c.call(200, "GET", "/api/v1/version", none, nil)
		c.call(200, "GET", "/healthz", none, nil)
		c.call(200, "GET", "/readyz", none, nil)

		// Deletions and the end of sessions.
		c.call(204, "DELETE", "/api/v1/apps/{app_id}/agents/{agent_id}", one(app, added), nil, as)
		c.call(204, "DELETE", "/api/v1/user/api-keys/{key_id}", one(itoa(int64(key.JSON["id"].(float64)))), nil, as)
		c.call(204, "DELETE", "/api/v1/apps/{app_id}", one(app), nil, as)
		c.call(204, "POST", "/api/v1/auth/logout", none, nil, bearer(other), acceptJSON)
		c.call(303, "POST", "/api/v1/auth/logout", none, nil, as)

		var missed []string
		for _, item := range c.oapi.Paths {
			for _, op := range []*huma.Operation{item.Get, item.Post, item.Patch, item.Delete} {
				if op != nil && !c.seen[op.OperationID] {
					missed = append(missed, op.OperationID)
				}
			}
		}
		slices.Sort(missed)
		t.Logf("operations not driven here: %v", missed)
	})
}
