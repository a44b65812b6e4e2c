package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// What the platform POSTs out is in the document's `webhooks` section
// (DESIGN §4 Operations, issue 17 item 8): the activation-ended delivery
// to metadata.webhook_url (or the agent's webhook_url), and the request a
// webhook custom agent receives.

// documentedWebhooks are the webhooks the document must describe, with
// the schema of their body: written out in the webhook, not a component of
// its own (generators prune what no path reaches).
var documentedWebhooks = map[string]string{
	"activation-ended":  "ActivationWebhookEvent",
	"webhook-agent-run": "WebhookAgentRequest",
}

// standardWebhookHeaders are the Standard Webhooks headers every POST
// carries.
var standardWebhookHeaders = []string{"webhook-id", "webhook-timestamp", "webhook-signature"}

// servedJSON is a document the server serves, decoded.
func servedJSON(t *testing.T, e *env, path string) map[string]any {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(e.do("GET", path, nil).expect(t, 200).Body, &doc))
	return doc
}

// TestOpenAPIWebhooks: each webhook is a POST whose JSON body is written
// out in it (every $ref under it resolves to a component), with the
// Standard Webhooks headers as required header parameters and its answers
// said. The 3.0 variant, which has no `webhooks`, carries the same under
// `x-webhooks`.
func TestOpenAPIWebhooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	doc := servedJSON(t, e, "/api/v1/openapi.json")
	schemas := mapOf(mapOf(doc["components"])["schemas"])
	hooks := mapOf(doc["webhooks"])
	require.Len(t, hooks, len(documentedWebhooks), "webhooks: %v", hooks)
	bodies := map[string]map[string]any{}
	for name, component := range documentedWebhooks {
		op := mapOf(mapOf(hooks[name])["post"])
		require.NotEmpty(t, op, "webhooks.%s.post", name)
		require.NotEmpty(t, op["operationId"], name)
		require.NotEmpty(t, op["summary"], name)
		require.NotEmpty(t, op["description"], name)
		require.NotEmpty(t, op["tags"], name)
		body := mapOf(op["requestBody"])
		require.Equal(t, true, body["required"], name)
		schema := mapOf(mapOf(mapOf(body["content"])["application/json"])["schema"])
		require.NotContains(t, schema, "$ref", "%s: the body is written out in the webhook", name)
		require.NotContains(t, schemas, component, "%s: no component only a webhook uses (generators prune it)", name)
		walkSchemas(schema, name, func(where string, s map[string]any) {
			if r, ok := s["$ref"].(string); ok {
				require.Contains(t, schemas, strings.TrimPrefix(r, "#/components/schemas/"), "%s: $ref %s", where, r)
			}
		})
		bodies[name] = schema

		params := map[string]map[string]any{}
		for _, p := range sliceOf(op["parameters"]) {
			p := mapOf(p)
			require.Equal(t, "header", p["in"], "%s: %v", name, p)
			params[p["name"].(string)] = p
		}
		for _, h := range standardWebhookHeaders {
			require.Contains(t, params, h, name)
			require.Equal(t, true, params[h]["required"], "%s: %s", name, h)
			require.NotEmpty(t, params[h]["description"], "%s: %s", name, h)
			require.Equal(t, "string", mapOf(params[h]["schema"])["type"], "%s: %s", name, h)
		}
		responses := mapOf(op["responses"])
		require.Contains(t, responses, "2XX", name)
		for status, r := range responses {
			require.NotEmpty(t, mapOf(r)["description"], "%s %s", name, status)
		}
	}
	ended := bodies["activation-ended"]
	var union []string
	for _, s := range sliceOf(ended["oneOf"]) {
		union = append(union, mapOf(s)["$ref"].(string))
	}
	require.ElementsMatch(t, []string{"#/components/schemas/ActivationCompletedEvent", "#/components/schemas/ActivationFailedEvent",
		"#/components/schemas/ActivationWaitingEvent"}, union,
		"the two events that end an activation and a run's wait, the WebSocket's own schemas")
	require.Equal(t, "type", mapOf(ended["discriminator"])["propertyName"])

	agentReq := bodies["webhook-agent-run"]
	require.ElementsMatch(t, []any{"activation_id", "agent_id", "app_id", "input_data", "context", "agent_key", "base_url"}, agentReq["required"])
	require.Equal(t, false, agentReq["additionalProperties"], "only the platform writes it: exactly these fields")
	for _, id := range []string{"activation_id", "agent_id", "app_id"} {
		require.Equal(t, "uuid", prop(t, agentReq, id)["format"], id)
	}
	require.Equal(t, map[string]any{"$ref": "#/components/schemas/ActivationContext"}, prop(t, agentReq, "context"))

	old := servedJSON(t, e, "/api/v1/openapi-3.0.json")
	require.NotContains(t, old, "webhooks", "OpenAPI 3.0 has no webhooks keyword")
	require.Len(t, mapOf(old["x-webhooks"]), len(documentedWebhooks), "3.0 keeps them as the x-webhooks extension")
	for name := range documentedWebhooks {
		require.NotEmpty(t, mapOf(mapOf(old["x-webhooks"])[name])["post"], name)
	}
	// The YAML forms say the same.
	require.Regexp(t, `(?m)^webhooks:`, string(e.do("GET", "/api/v1/openapi.yaml", nil).expect(t, 200).Body))
	oldYAML := string(e.do("GET", "/api/v1/openapi-3.0.yaml", nil).expect(t, 200).Body)
	require.Regexp(t, `(?m)^x-webhooks:`, oldYAML)
	require.NotRegexp(t, `(?m)^webhooks:`, oldYAML)
}

// webhookSchemas validates what a receiver gets against the served
// document with an independent JSON Schema 2020-12 validator (formats
// asserted: uuids, date-times), not huma's.
type webhookSchemas struct {
	bodies  map[string]*jsonschema.Schema
	headers map[string]map[string]*jsonschema.Schema // webhook → header name → schema
}

func compileWebhooks(t *testing.T, raw []byte) *webhookSchemas {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	const base = "https://ap.test/openapi.json"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	require.NoError(t, c.AddResource(base, doc))
	ws := &webhookSchemas{bodies: map[string]*jsonschema.Schema{}, headers: map[string]map[string]*jsonschema.Schema{}}
	hooks := mapOf(doc.(map[string]any)["webhooks"])
	for name := range documentedWebhooks {
		where := base + "#/webhooks/" + name + "/post"
		ws.bodies[name], err = c.Compile(where + "/requestBody/content/application~1json/schema")
		require.NoError(t, err, name)
		ws.headers[name] = map[string]*jsonschema.Schema{}
		for i, p := range sliceOf(mapOf(mapOf(hooks[name])["post"])["parameters"]) {
			ws.headers[name][mapOf(p)["name"].(string)], err = c.Compile(where + "/parameters/" + strconv.Itoa(i) + "/schema")
			require.NoError(t, err, name)
		}
	}
	return ws
}

// check says whether a POST the platform sent matches webhook name.
func (ws *webhookSchemas) check(t *testing.T, name string, h http.Header, body []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	require.NoError(t, err, "%s: %s", name, body)
	require.NoError(t, ws.bodies[name].Validate(v), "%s: the body the platform sent does not match the document: %s", name, body)
	for header, s := range ws.headers[name] {
		require.NotEmpty(t, h.Get(header), "%s: no %s header", name, header)
		require.NoError(t, s.Validate(h.Get(header)), "%s: header %s: %q", name, header, h.Get(header))
	}
	require.Equal(t, "application/json", h.Get("Content-Type"), name)
}

// TestWebhookBodiesMatchTheDocument: what the platform really POSTs — a
// webhook agent's request, and the activation-ended deliveries of a
// completed and of a failed run — matches the served document's webhooks,
// bodies and headers, on both databases.
func TestWebhookBodiesMatchTheDocument(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		ws := compileWebhooks(t, e.do("GET", "/api/v1/openapi.json", nil).expect(t, 200).Body)
		rc := newAgentReceiver(t, e)
		type delivery struct {
			header http.Header
			body   []byte
		}
		deliveries := make(chan delivery, 4)
		hook := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			deliveries <- delivery{r.Header.Clone(), b}
		}))
		owner := e.signup("owner@example.com")
		app := e.newApp(owner, "desk")

		for what, ended := range map[string]string{"run": "activation_completed", "fail": "activation_failed"} {
			agent := rc.webhookAgent(t, owner, app, "hook-"+what, what, 30)
			id := e.do("POST", "/api/v1/agents/"+agent+"/activate", map[string]any{"input_data": map[string]any{"calls": []string{}},
				"context": map[string]any{"chat_id": "c1", "mine": 1}, "metadata": map[string]any{"webhook_url": hook.URL + "/ended"}},
				bearer(owner)).expect(t, 201).str("activation_id")
			e.await(owner, id)

			body, sigErr := rc.request(t, id)
			require.NoError(t, sigErr)
			raw, err := json.Marshal(body)
			require.NoError(t, err)
			rc.mu.Lock()
			h := rc.headers[id]
			rc.mu.Unlock()
			ws.check(t, "webhook-agent-run", h, raw)
			// Not vacuous: a field the document does not list is refused.
			unlisted := maps.Clone(body)
			unlisted["unlisted"] = true
			require.Error(t, ws.bodies["webhook-agent-run"].Validate(unlisted))

			select {
			case dl := <-deliveries:
				ws.check(t, "activation-ended", dl.header, dl.body)
				var ev map[string]any
				require.NoError(t, json.Unmarshal(dl.body, &ev))
				require.Equal(t, ended, ev["type"], "%s", dl.body)
				require.Equal(t, id, ev["activation_id"])
			case <-time.After(30 * time.Second):
				t.Fatalf("no delivery of %s's end", what)
			}
		}
	})
}
