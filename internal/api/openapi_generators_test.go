package api_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
)

// The document's shape for client generators (DESIGN §4 Operations, issue
// 17 items 4–7): what openapi-typescript + openapi-fetch and oapi-codegen
// need to type every call without casts.

// rawDoc is the served document as generic JSON, walked whole.
func rawDoc(t *testing.T) map[string]any {
	t.Helper()
	e := newEnv(t, store.SQLite, nil)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(e.do("GET", "/api/v1/openapi.json", nil).expect(t, 200).Body, &doc))
	return doc
}

// notUUIDIds are id-named properties and parameters whose values are not
// UUIDs, each with the reason. Keyed by property name, or by
// "Schema.property", or by "path param" for path parameters.
var notUUIDIds = map[string]string{
	"chat_id":               "chosen by the caller: any string groups a chat",
	"session_id":            "chosen by the caller",
	"client_id":             "the OAuth client id the provider issued",
	"provider_user_id":      "the user's id at the OAuth provider",
	"tool_call_id":          "the model's own id of a call (OpenAI's call_…, Anthropic's toolu_…)",
	"provider_id":           "an LLM provider: system providers' ids are their names (echo, openai, anthropic)",
	"webhook_id":            "the Standard Webhooks message id: msg_<uuid>",
	"resource_id":           "any audited resource's id, an LLM provider's (a name for system ones) included",
	"scope_id":              "a budget's: a user's or an app's uuid, or an API key's number",
	"LLMProvider.id":        "system providers' ids are their names (echo, openai, anthropic)",
	"Step.id":               "a pipeline step's id is a name its author chose, referenced by templates",
	"StepState.id":          "the step's id: a name its author chose",
	"/api/v1/llm-providers": "system providers' ids are their names (echo, openai, anthropic)",
}

func isIDName(name string) bool {
	return name == "id" || strings.HasSuffix(name, "_id") || strings.HasSuffix(name, "Id")
}

// walkSchemas calls fn for every schema in v (the document or a part of
// it) with a path saying where it is.
func walkSchemas(v any, where string, fn func(where string, s map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		if _, isSchema := x["type"]; isSchema || x["properties"] != nil || x["anyOf"] != nil || x["oneOf"] != nil || x["$ref"] != nil {
			fn(where, x)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkSchemas(x[k], where+"/"+k, fn)
		}
	case []any:
		for i, y := range x {
			walkSchemas(y, where+"/"+strconv.Itoa(i), fn)
		}
	}
}

// TestOpenAPIFreeFormNumbersAndIds: free-form values are `{}`, never the
// recursive JSONValue (or any $ref cycle through one); numbers are double;
// ids are uuids, but for the documented exceptions.
func TestOpenAPIFreeFormNumbersAndIds(t *testing.T) {
	t.Parallel()
	doc := rawDoc(t)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	_, recursive := schemas["JSONValue"]
	require.False(t, recursive, "a JSONValue schema: free-form values must be {} (openapi-fetch cannot type a recursive one)")

	// No $ref cycle through a schema that is not an object with
	// properties (a free-form value).
	refsOf := func(s any) []string {
		var out []string
		walkSchemas(s, "", func(_ string, x map[string]any) {
			if r, ok := x["$ref"].(string); ok {
				out = append(out, strings.TrimPrefix(r, "#/components/schemas/"))
			}
		})
		return out
	}
	for name, s := range schemas {
		if m, _ := s.(map[string]any); m["properties"] != nil {
			continue
		}
		seen := map[string]bool{}
		stack := refsOf(s)
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			require.NotEqual(t, name, n, "a $ref cycle through the free-form schema %s", name)
			if !seen[n] {
				seen[n] = true
				stack = append(stack, refsOf(schemas[n])...)
			}
		}
	}

	var bad []string
	walkSchemas(doc, "", func(where string, s map[string]any) {
		if s["type"] == "number" && s["format"] != "double" {
			bad = append(bad, where+": type number without format double")
		}
		props, _ := s["properties"].(map[string]any)
		schemaName := ""
		if parts := strings.Split(where, "/"); len(parts) == 4 && parts[1] == "components" {
			schemaName = parts[3]
		}
		for name, p := range props {
			ps, _ := p.(map[string]any)
			if !isIDName(name) || ps["type"] != "string" || ps["enum"] != nil || ps["format"] == "uuid" {
				continue
			}
			if _, ok := notUUIDIds[name]; ok {
				continue
			}
			if _, ok := notUUIDIds[schemaName+"."+name]; ok && schemaName != "" {
				continue
			}
			bad = append(bad, where+"/"+name+": an id without format uuid")
		}
	})
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			params, _ := op.(map[string]any)["parameters"].([]any)
			for _, p := range params {
				pm := p.(map[string]any)
				name, _ := pm["name"].(string)
				schema, _ := pm["schema"].(map[string]any)
				// API keys' ids are integers (key_id): only string ids are uuids.
				if pm["in"] == "header" || !isIDName(name) || schema["type"] != "string" || schema["format"] == "uuid" {
					continue
				}
				if _, ok := notUUIDIds[name]; ok {
					continue
				}
				if _, ok := notUUIDIds[strings.TrimSuffix(path[:max(strings.Index(path, "/{"), 0)], "/")]; ok && pm["in"] == "path" {
					continue
				}
				bad = append(bad, method+" "+path+": parameter "+name+" without format uuid")
			}
		}
	}
	sort.Strings(bad)
	require.Empty(t, bad)
}

// TestOpenAPIRecordFilterParameter: the record lists document
// filter[field]=value as a deepObject parameter.
func TestOpenAPIRecordFilterParameter(t *testing.T) {
	t.Parallel()
	doc := serveDoc(t, "")
	for _, path := range []string{"/api/v1/data/{app_id}/{slug}", "/api/apps/{appId}/{modelSlug}"} {
		item := doc.Paths[path]
		require.NotNil(t, item, path)
		op := item["get"]
		require.NotNil(t, op, path)
		var filter map[string]any
		for _, p := range op.Parameters {
			if p["name"] == "filter" {
				filter = p
			}
		}
		require.NotNil(t, filter, "%s: no filter parameter", path)
		require.Equal(t, "query", filter["in"])
		require.Equal(t, "deepObject", filter["style"])
		require.Equal(t, true, filter["explode"])
		schema := filter["schema"].(map[string]any)
		require.Equal(t, "object", schema["type"])
		require.Equal(t, map[string]any{"type": "string"}, schema["additionalProperties"])
	}
}

// TestOpenAPIBodyTypesAccepted: every body type an operation advertises
// is one it takes: a request of each advertised type is never refused 415
// (it may fail later: unknown ids, missing fields). No handler takes raw
// bytes, so application/octet-stream is never right.
func TestOpenAPIBodyTypesAccepted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	token := e.signup("body-types@example.com")
	var doc oaDoc
	require.NoError(t, json.Unmarshal(e.do("GET", "/api/v1/openapi.json", nil).expect(t, 200).Body, &doc))
	bodies := map[string]string{"application/json": "{}", "application/yaml": "{}", "application/x-www-form-urlencoded": "x=y"}
	param := regexp.MustCompile(`\{[^}]+\}`)
	for _, op := range doc.operations() {
		if op.RequestBody == nil || op.OperationID == "logout" {
			continue
		}
		path := param.ReplaceAllStringFunc(op.path, func(string) string { return uuid.NewString() })
		for ct := range op.RequestBody["content"].(map[string]any) {
			body, ok := bodies[ct]
			require.True(t, ok, "%s %s advertises %s: no handler takes it", op.method, op.path, ct)
			r := e.do(op.method, path, []byte(body), bearer(token), header("Content-Type", ct), acceptJSON)
			require.NotEqual(t, 415, r.Status, "%s %s refuses the %s it advertises: %s", op.method, op.path, ct, r.Body)
		}
	}
}

// TestOpenAPIAuthenticatorPath: the spec's two authenticator routes are one
// path in the document, each operation saying which id it takes; the
// routes still answer under their patterns.
func TestOpenAPIAuthenticatorPath(t *testing.T) {
	t.Parallel()
	doc := serveDoc(t, "")
	require.NotContains(t, doc.Paths, "/api/v1/oauth/authenticators/{app_id}")
	require.NotContains(t, doc.Paths, "/api/v1/oauth/authenticators/{authenticator_id}")
	item := doc.Paths["/api/v1/oauth/authenticators/{id}"]
	require.NotNil(t, item)
	for method, want := range map[string]string{"post": "app", "get": "authenticator", "patch": "authenticator", "delete": "authenticator"} {
		op := item[method]
		require.NotNil(t, op, method)
		var id map[string]any
		for _, p := range op.Parameters {
			if p["in"] == "path" {
				require.Equal(t, "id", p["name"])
				id = p
			}
		}
		require.NotNil(t, id, method)
		require.Contains(t, id["description"], "The "+want+"'s id", method)
		require.Contains(t, op.Description, "`id` is the "+want+"'s id", method)
	}
}

// TestOpenAPI30HasNoNullType: the OpenAPI 3.0 variant has no `type: null`
// (3.0 knows nullable only; validators refuse it).
func TestOpenAPI30HasNoNullType(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(e.do("GET", "/api/v1/openapi-3.0.json", nil).expect(t, 200).Body, &doc))
	require.Equal(t, "3.0.3", doc["openapi"])
	var bad []string
	walkSchemas(doc, "", func(where string, s map[string]any) {
		if typ, ok := s["type"].([]any); ok || s["type"] == "null" {
			bad = append(bad, where+": type "+fmt.Sprint(s["type"], typ))
		}
	})
	require.Empty(t, bad)
}

// TestOpenAPIAccountEmailFormat: the account's email has one format in
// the document, the answers' as register's and login's (format email), so
// that a generated client compares the address it registered with the one
// it gets back without a conversion (oapi-codegen types format email as
// openapi_types.Email, a plain string as string).
func TestOpenAPIAccountEmailFormat(t *testing.T) {
	t.Parallel()
	doc := rawDoc(t)
	user := doc["components"].(map[string]any)["schemas"].(map[string]any)["User"].(map[string]any)
	require.Equal(t, "email", user["properties"].(map[string]any)["email"].(map[string]any)["format"], "User.email")
	for _, op := range []string{"register", "login"} {
		body := doc["paths"].(map[string]any)["/api/v1/auth/"+op].(map[string]any)["post"].(map[string]any)["requestBody"].(map[string]any)
		schema := body["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
		require.Equal(t, "email", schema["properties"].(map[string]any)["email"].(map[string]any)["format"], op)
	}
}
