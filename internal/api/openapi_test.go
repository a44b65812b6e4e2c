package api_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/oauth"
	"github.com/agentplatform/agentplatform/internal/store"
)

// oaDoc is the served OpenAPI document, read as plain JSON: what a client
// generator sees.
type oaDoc struct {
	Info       map[string]any                     `json:"info"`
	Servers    []map[string]any                   `json:"servers"`
	Tags       []map[string]any                   `json:"tags"`
	Paths      map[string]map[string]*oaOperation `json:"paths"`
	Components struct {
		Schemas map[string]map[string]any `json:"schemas"`
	} `json:"components"`
}

type oaOperation struct {
	OperationID string                    `json:"operationId"`
	Description string                    `json:"description"`
	Tags        []string                  `json:"tags"`
	Security    *[]map[string][]string    `json:"security"`
	Parameters  []map[string]any          `json:"parameters"`
	RequestBody map[string]any            `json:"requestBody"`
	Responses   map[string]map[string]any `json:"responses"`
	method      string
	path        string
}

func serveDoc(t *testing.T, publicURL string) *oaDoc {
	t.Helper()
	e := newEnv(t, store.SQLite, map[string]string{"AP_PUBLIC_URL": publicURL})
	r := e.do("GET", "/api/v1/openapi.json", nil).expect(t, 200)
	var doc oaDoc
	require.NoError(t, json.Unmarshal(r.Body, &doc))
	return &doc
}

func (d *oaDoc) operations() []*oaOperation {
	var ops []*oaOperation
	for path, item := range d.Paths {
		for method, op := range item {
			op.method, op.path = strings.ToUpper(method), path
			ops = append(ops, op)
		}
	}
	slices.SortFunc(ops, func(a, b *oaOperation) int { return strings.Compare(a.OperationID, b.OperationID) })
	return ops
}

func (d *oaDoc) op(t *testing.T, id string) *oaOperation {
	t.Helper()
	for _, op := range d.operations() {
		if op.OperationID == id {
			return op
		}
	}
	t.Fatalf("no operation %q", id)
	return nil
}

// schemaRef is the $ref of an answer's JSON body, "" when it has none.
func (op *oaOperation) schemaRef(status string) string {
	content, _ := op.Responses[status]["content"].(map[string]any)
	mt, _ := content["application/json"].(map[string]any)
	schema, _ := mt["schema"].(map[string]any)
	ref, _ := schema["$ref"].(string)
	return ref
}

func (d *oaDoc) schema(t *testing.T, name string) map[string]any {
	t.Helper()
	s, ok := d.Components.Schemas[name]
	require.True(t, ok, "schema %s", name)
	return s
}

func prop(t *testing.T, s map[string]any, path ...string) map[string]any {
	t.Helper()
	for _, p := range path {
		if p == "[]" {
			s, _ = s["items"].(map[string]any)
		} else {
			props, _ := s["properties"].(map[string]any)
			s, _ = props[p].(map[string]any)
		}
		require.NotNil(t, s, "property %v", path)
	}
	return s
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestOpenAPIIsExact checks mechanically what DESIGN §4 Operations asks of
// the document: real statuses, a 4xx with the error body on every
// operation, security, descriptions, enums, required fields, no nullable
// arrays, no shapeless payloads, closed answers, servers and tags.
func TestOpenAPIIsExact(t *testing.T) {
	t.Parallel()
	doc := serveDoc(t, "https://ap.example.org")

	require.Len(t, doc.Servers, 1)
	require.Equal(t, "https://ap.example.org", doc.Servers[0]["url"], "servers come from AP_PUBLIC_URL")
	tags := map[string]bool{}
	for _, tag := range doc.Tags {
		require.NotEmpty(t, tag["description"], "tag %v", tag["name"])
		tags[tag["name"].(string)] = true
	}

	public := []string{"register", "login", "logout", "version", "healthz", "readyz", "oauth-callback"}
	for _, op := range doc.operations() {
		where := op.method + " " + op.path
		require.NotEmpty(t, op.OperationID, where)
		require.Contains(t, op.Description, "**Authentication:**", "%s states the rule its caller needs", where)
		require.NotEmpty(t, op.Tags, where)
		for _, tag := range op.Tags {
			require.True(t, tags[tag], "%s: tag %s is defined", where, tag)
		}
		require.NotNil(t, op.Security, "%s declares its security", where)
		if slices.Contains(public, op.OperationID) {
			require.Empty(t, *op.Security, "%s is public: security []", where)
			require.Contains(t, op.Description, "**Authentication:** none.")
		} else {
			require.Equal(t, []map[string][]string{{"bearer": {}}, {"cookie": {}}}, *op.Security, where)
		}

		require.NotContains(t, op.Responses, "default", "%s: each answer by its status", where)
		var success, clientError bool
		for status := range op.Responses {
			switch {
			case status == "101" || status[0] == '2' || status[0] == '3':
				success = true
			case status[0] == '4' || status[0] == '5':
				errBody := "#/components/schemas/ErrorBody"
				if slices.Contains(op.Tags, "openai") {
					errBody = "#/components/schemas/OpenAIError" // OpenAI's SDKs read only theirs
				}
				require.Equal(t, errBody, op.schemaRef(status), "%s %s has the error body", where, status)
				clientError = clientError || status[0] == '4'
			}
		}
		require.True(t, success, "%s documents its success", where)
		require.True(t, clientError, "%s documents a 4xx", where)
		require.Contains(t, op.Responses, "500", where)
		if !slices.Contains(public, op.OperationID) {
			require.Contains(t, op.Responses, "401", where)
			require.Contains(t, op.Responses, "403", where)
		}
		if op.RequestBody != nil {
			require.Contains(t, op.Responses, "400", where)
			require.Contains(t, op.Responses, "413", where)
		}
		for _, p := range op.Parameters {
			if p["in"] == "path" {
				require.Contains(t, op.Responses, "404", where)
			}
		}
		if op.OperationID != "healthz" && op.OperationID != "readyz" && op.OperationID != "version" {
			require.Contains(t, op.Responses, "429", where)
		}
		require.Contains(t, op.Responses, "431", "%s: every route refuses oversized headers", where)
		if r := op.Responses["429"]; r != nil {
			require.Contains(t, r["headers"], "Retry-After", where)
		}
	}

	// What the hashing bound, the failed-login limit and the connection
	// cap answer.
	for _, id := range []string{"register", "login", "change-password"} {
		require.Contains(t, doc.op(t, id).Responses["429"]["description"], "password", id)
	}
	require.Contains(t, doc.op(t, "login").Responses["429"]["description"], "AP_LOGIN_FAILURE_LIMIT")
	for _, id := range []string{"stream-activation", "events-websocket", "activate-agent", "activate-app-agent", "create-activation"} {
		require.Contains(t, doc.op(t, id).Responses["429"]["description"], "connections", id)
	}
	for _, id := range []string{"stream-activation", "events-websocket"} {
		require.Contains(t, doc.op(t, id).Description, "within a second", "%s says it ends with its credential", id)
	}
	require.Contains(t, doc.Info["description"], "AP_CORS_ORIGINS")
	// A header is documented only where it is sent.
	for _, id := range []string{"get-activation", "cancel-activation", "get-app-activation"} {
		require.NotContains(t, doc.op(t, id).Responses["200"], "headers", id)
	}

	// The answers whose status the request chooses.
	statuses := func(id string) []string {
		var out []string
		for s := range doc.op(t, id).Responses {
			if s < "400" {
				out = append(out, s)
			}
		}
		return out
	}
	require.ElementsMatch(t, []string{"201", "303"}, statuses("register"))
	require.Equal(t, "#/components/schemas/User", doc.op(t, "register").schemaRef("201"))
	require.Contains(t, doc.op(t, "register").Responses["303"]["headers"], "Location")
	require.ElementsMatch(t, []string{"200", "303"}, statuses("login"))
	require.Equal(t, "#/components/schemas/LoginResult", doc.op(t, "login").schemaRef("200"))
	require.Contains(t, doc.op(t, "login").Responses["303"]["headers"], "Set-Cookie")
	require.ElementsMatch(t, []string{"204", "303"}, statuses("logout"))
	require.Nil(t, doc.op(t, "logout").Responses["204"]["content"], "logout answers 204 without a body")
	require.ElementsMatch(t, []string{"200", "201"}, statuses("import-manifest"))
	require.Equal(t, doc.op(t, "import-manifest").schemaRef("201"), doc.op(t, "import-manifest").schemaRef("200"))
	require.ElementsMatch(t, []string{"101"}, statuses("events-websocket"))
	for id, status := range map[string]string{"create-app": "201", "create-api-key": "201", "activate-agent": "201",
		"revoke-api-key": "204", "delete-app": "204", "change-password": "204", "get-app": "200",
		"create-authenticator": "201", "add-service-provider": "201", "delete-authenticator": "204", "update-authenticator": "200"} {
		require.ElementsMatch(t, []string{status}, statuses(id), id)
	}
	for id, status := range map[string]string{"register": "409", "create-app": "409", "import-manifest": "409",
		"activate-app-agent": "409", "login": "401", "readyz": "503", "create-activation": "404"} {
		require.Contains(t, doc.op(t, id).Responses, status, id)
	}

	// Closed sets are enums.
	var kinds []string
	for _, k := range []apperr.Kind{apperr.Validation, apperr.Authentication, apperr.Permission, apperr.NotFound, apperr.Conflict,
		apperr.RateLimit, apperr.PayloadTooLarge, apperr.QuotaExceeded, apperr.Internal, apperr.CredentialNotFound, apperr.TokenExpired,
		apperr.InvalidScope, apperr.AuthFailed, apperr.ProviderUnsupported, apperr.BudgetExceeded} {
		kinds = append(kinds, string(k))
	}
	require.ElementsMatch(t, kinds, strs(prop(t, doc.schema(t, "ErrorBody"), "error_type")["enum"]))
	var scopes []string
	for _, s := range auth.Scopes {
		scopes = append(scopes, string(s))
	}
	for _, s := range []string{"CreateAPIKeyInputBody", "CreateAPIKeyOutputBody", "APIKey"} {
		require.ElementsMatch(t, scopes, strs(prop(t, doc.schema(t, s), "scopes", "[]")["enum"]), s)
	}
	statusEnum := []string{"queued", "running", "completed", "failed"}
	require.ElementsMatch(t, statusEnum, strs(prop(t, doc.schema(t, "Activation"), "status")["enum"]))
	require.ElementsMatch(t, []string{"pending", "processing", "completed", "failed"}, strs(prop(t, doc.schema(t, "ActivateSimpleOutputBody"), "status")["enum"]))
	for _, p := range doc.op(t, "list-activations").Parameters {
		if p["name"] == "status" {
			require.ElementsMatch(t, append(statusEnum, "waiting", "pending", "processing"), strs(p["schema"].(map[string]any)["enum"]))
		}
	}
	providerTypes := []string{"openai", "anthropic", "openai_compatible", "echo"}
	require.ElementsMatch(t, providerTypes, strs(prop(t, doc.schema(t, "LLMProvider"), "provider_type")["enum"]))
	require.ElementsMatch(t, providerTypes, strs(prop(t, doc.schema(t, "LlmProviderBody"), "provider_type")["enum"]))
	for _, s := range []string{"App", "UpdateAppInputBody"} {
		require.ElementsMatch(t, []string{"private", "published"}, strs(prop(t, doc.schema(t, s), "marketplace_status")["enum"]), s)
		require.ElementsMatch(t, []string{"active", "disabled"}, strs(prop(t, doc.schema(t, s), "status")["enum"]), s)
	}
	require.ElementsMatch(t, []string{"llm", "custom"}, strs(prop(t, doc.schema(t, "Agent"), "agent_type_id")["enum"]))
	require.ElementsMatch(t, []string{"activation_completed", "activation_failed"}, strs(prop(t, doc.schema(t, "WebhookDelivery"), "event_type")["enum"]))
	require.NotEmpty(t, prop(t, doc.schema(t, "Job"), "state")["enum"])
	require.ElementsMatch(t, []string{"completed", "failed"}, strs(prop(t, doc.schema(t, "Execution"), "status")["enum"]))
	require.ElementsMatch(t, statusEnum, strs(prop(t, doc.schema(t, "Run"), "status")["enum"]))
	require.ElementsMatch(t, append(statusEnum, "skipped"), strs(prop(t, doc.schema(t, "StepState"), "status")["enum"]))
	require.ElementsMatch(t, []string{"agent", "function"}, strs(prop(t, doc.schema(t, "Step"), "type")["enum"]))
	require.ElementsMatch(t, []string{"debug", "info", "warn", "error"}, strs(prop(t, doc.schema(t, "LogLine"), "level")["enum"]))
	require.Contains(t, doc.op(t, "list-pipeline-runs").Responses, "404", "another user's pipeline_id")
	require.Equal(t, []any{"bearer"}, prop(t, doc.schema(t, "LoginResult"), "token_type")["enum"])
	for _, s := range []string{"OAuthAuthenticator", "AuthenticatorCreate", "AuthenticatorPatch", "Authenticator"} {
		require.ElementsMatch(t, oauth.Types(), strs(prop(t, doc.schema(t, s), "authenticator_type")["enum"]), s)
	}
	for _, id := range []string{"create-authenticator", "add-service-provider", "update-authenticator"} {
		require.Contains(t, doc.op(t, id).Responses, "409", id)
	}

	// The event union: one schema per type, told apart by type.
	ws := doc.op(t, "events-websocket").Responses["101"]["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
	require.Equal(t, "#/components/schemas/WebSocketMessage", ws["$ref"])
	union := doc.schema(t, "WebSocketMessage")
	mapping := union["discriminator"].(map[string]any)["mapping"].(map[string]any)
	for typ, status := range map[string]string{"activation_created": "queued", "activation_started": "running",
		"activation_completed": "completed", "activation_failed": "failed"} {
		name := strings.TrimPrefix(mapping[typ].(string), "#/components/schemas/")
		ev := doc.schema(t, name)
		require.Equal(t, []any{typ}, prop(t, ev, "type")["enum"])
		require.Equal(t, []any{status}, prop(t, ev, "status")["enum"])
		require.Subset(t, strs(ev["required"]), []string{"type", "seq", "activation_id", "agent_id", "status", "context", "timestamp"}, name)
	}
	for typ, status := range map[string]string{"pipeline_run_started": "running", "pipeline_run_completed": "completed", "pipeline_run_failed": "failed"} {
		name := strings.TrimPrefix(mapping[typ].(string), "#/components/schemas/")
		ev := doc.schema(t, name)
		require.Equal(t, []any{typ}, prop(t, ev, "type")["enum"])
		require.Equal(t, []any{status}, prop(t, ev, "status")["enum"])
		require.Subset(t, strs(ev["required"]), []string{"type", "seq", "run_id", "pipeline_id", "status", "context", "timestamp"}, name)
	}
	require.Contains(t, strs(doc.schema(t, "PipelineRunCompletedEvent")["required"]), "output_data")
	require.Contains(t, strs(doc.schema(t, "PipelineRunFailedEvent")["required"]), "error")
	require.Contains(t, strs(doc.schema(t, "ActivationCompletedEvent")["required"]), "output_data")
	require.Contains(t, strs(doc.schema(t, "ActivationFailedEvent")["required"]), "error")

	// Required fields.
	require.Subset(t, strs(doc.schema(t, "CreateActivationInputBody")["required"]), []string{"agent_id", "input_data"})
	require.Contains(t, strs(doc.schema(t, "ActivateSimpleInputBody")["required"]), "input_data")
	require.Subset(t, strs(doc.schema(t, "CreateAPIKeyInputBody")["required"]), []string{"name", "scopes"})
	require.ElementsMatch(t, []string{"name", "provider_type"}, strs(doc.schema(t, "NewLLMProviderBody")["required"]))
	require.Empty(t, doc.schema(t, "LlmProviderBody")["required"], "a patch needs nothing")
	require.ElementsMatch(t, []string{"name", "authenticator_type", "client_id", "client_secret", "scopes"}, strs(doc.schema(t, "AuthenticatorCreate")["required"]))
	require.Empty(t, doc.schema(t, "AuthenticatorPatch")["required"], "a patch needs nothing")
	require.NotContains(t, mapOf(doc.schema(t, "OAuthAuthenticator")["properties"]), "client_secret", "never answered")
	for _, name := range []string{"Activation", "App", "User", "ErrorBody", "LoginResult", "LLMOutput", "APIKey", "LLMProvider",
		"Function", "Execution", "Pipeline", "Run", "AppModel", "DataRecord", "LogLine", "ActivationLogsOutputBody", "OAuthAuthenticator"} {
		s := doc.schema(t, name)
		var all []string
		for p := range s["properties"].(map[string]any) {
			all = append(all, p)
		}
		require.ElementsMatch(t, all, strs(s["required"]), "every field of %s is always there", name)
		require.Equal(t, false, s["additionalProperties"], "%s is closed", name)
	}
	for _, name := range []string{"CreateActivationInputBody", "CreateAPIKeyInputBody", "Manifest", "AgentSpec"} {
		require.NotContains(t, doc.schema(t, name), "additionalProperties", "%s: unknown request fields are ignored", name)
	}

	// The well-known payloads have their shapes.
	out := prop(t, doc.schema(t, "Activation"), "output_data")
	require.Equal(t, "#/components/schemas/LLMOutput", out["anyOf"].([]any)[0].(map[string]any)["$ref"])
	require.Equal(t, "#/components/schemas/Usage", prop(t, doc.schema(t, "LLMOutput"), "usage")["$ref"])
	require.Equal(t, "#/components/schemas/AgentConfig", prop(t, doc.schema(t, "AgentDetail"), "agent_config")["$ref"])

	// No nullable array and no shapeless schema anywhere.
	var walk func(where string, s map[string]any)
	walk = func(where string, s map[string]any) {
		if s == nil {
			return
		}
		if s["$ref"] != nil {
			require.Len(t, s, 1, "%s: a $ref has no siblings (OpenAPI 3.0 ignores them)", where)
		}
		if typ, ok := s["type"].([]any); ok {
			require.False(t, slices.Contains(typ, "array") && slices.Contains(typ, "null"), "%s: an array is never null", where)
		}
		shaped := false
		for _, k := range []string{"type", "$ref", "anyOf", "oneOf", "allOf", "enum"} {
			shaped = shaped || s[k] != nil
		}
		// A free-form value is `{}` on purpose (DESIGN §4: generators
		// cannot type a recursive "any JSON" schema), and says so.
		desc, _ := s["description"].(string)
		freeForm := strings.HasPrefix(desc, "Any JSON value")
		require.True(t, shaped || freeForm, "%s has a shape, or says it is any JSON value: %v", where, s)
		for _, name := range sliceOf(s["required"]) {
			require.Contains(t, mapOf(s["properties"]), name, "%s: a required field is a property", where)
		}
		for name, p := range mapOf(s["properties"]) {
			walk(where+"."+name, p.(map[string]any))
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(where+"[]", items)
		}
		for _, k := range []string{"anyOf", "oneOf", "allOf"} {
			for i, sub := range sliceOf(s[k]) {
				walk(where+"/"+k+string(rune('0'+i)), sub.(map[string]any))
			}
		}
	}
	for name, s := range doc.Components.Schemas {
		walk(name, s)
	}
	for _, op := range doc.operations() {
		for status, r := range op.Responses {
			for ct, mt := range mapOf(r["content"]) {
				walk(op.OperationID+" "+status+" "+ct, mt.(map[string]any)["schema"].(map[string]any))
			}
		}
		for _, p := range op.Parameters {
			walk(op.OperationID+" "+p["name"].(string), p["schema"].(map[string]any))
		}
	}
}

func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }
func sliceOf(v any) []any        { s, _ := v.([]any); return s }
