package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// mcpAccept is the Accept header Streamable HTTP requires.
var mcpAccept = header("Accept", "application/json, text/event-stream")

// rpcError is the JSON-RPC error of an MCP answer: the JSON body, or the
// one message of an event stream; nil when the answer is no error.
func rpcError(t *testing.T, r *resp) map[string]any {
	t.Helper()
	body := r.Body
	if strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range bytes.Split(body, []byte("\n")) {
			if rest, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				body = rest
				break
			}
		}
	} else {
		require.Equal(t, "application/json", r.Header.Get("Content-Type"), "%d %s", r.Status, r.Body)
	}
	var msg struct {
		JSONRPC string         `json:"jsonrpc"`
		Error   map[string]any `json:"error"`
		Result  map[string]any `json:"result"`
	}
	require.NoError(t, json.Unmarshal(body, &msg), "%d %s", r.Status, r.Body)
	require.Equal(t, "2.0", msg.JSONRPC, string(r.Body))
	if msg.Error != nil {
		require.IsType(t, 0.0, msg.Error["code"], string(r.Body))
		require.NotEmpty(t, msg.Error["message"], string(r.Body))
	}
	return msg.Error
}

// TestMCPBadInput: whatever a client sends to either MCP route, the answer
// is a JSON-RPC error (over HTTP 4xx, or 200 when the SDK answers the
// message), never a 500 and never plain text; a tools/call's bad
// arguments are the call's result (isError), as a model reads them.
func TestMCPBadInput(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		session := e.signup("ada@example.com")
		key := e.keyWith(session, "read:all", "write:all")
		appID := e.importManifest(key, exampleManifest(t)).expect(t, 201).str("app_id")
		call := func(tool, args string) string {
			return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
		}

		for _, route := range []struct{ path, prefix string }{
			{"/api/v1/apps/" + appID + "/mcp", ""},
			{"/api/v1/mcp", "support-desk__"},
		} {
			for name, c := range map[string]struct {
				body   string
				status int
				code   float64 // the JSON-RPC error code; 0: any
			}{
				"malformed JSON":           {`{"jsonrpc":"2.0","id":1,"method":`, 400, -32700},
				"not JSON":                 {`hello`, 400, -32700},
				"an empty body":            {``, 400, -32600},
				"a batch":                  {`[` + call(route.prefix+"triage", `{"prompt":"x"}`) + `]`, 400, -32600},
				"an empty batch":           {`[]`, 400, -32600},
				"a number":                 {`7`, 400, -32600},
				"null":                     {`null`, 400, -32600},
				"no jsonrpc member":        {`{"id":1,"method":"tools/list"}`, 400, -32600},
				"another jsonrpc version":  {`{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, 400, -32600},
				"an object id":             {`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, 400, -32600},
				"an unknown method":        {`{"jsonrpc":"2.0","id":1,"method":"nope/nope"}`, 400, -32601},
				"params an array":          {`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}`, 200, -32602},
				"params a string":          {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}`, 200, -32602},
				"a tool name not a string": {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}`, 200, -32602},
				"an unknown tool":          {call(route.prefix+"nope", `{}`), 200, -32602},
				// Deep enough to overflow a recursive reader's stack; deeper
				// than the SDK reads.
				"nested 400,000 deep": {call(route.prefix+"triage", strings.Repeat("[", 400_000)+strings.Repeat("]", 400_000)), 400, -32700},
				"nested 5,000 deep":   {call(route.prefix+"triage", `{"prompt":"x","a":`+strings.Repeat("[", 5000)+strings.Repeat("]", 5000)+`}`), 400, -32600},
			} {
				r := e.do("POST", route.path, []byte(c.body), bearer(key), mcpAccept)
				require.Equal(t, c.status, r.Status, "%s %s: %s", route.path, name, r.Body)
				rpcErr := rpcError(t, r)
				require.NotNil(t, rpcErr, "%s %s: an error: %s", route.path, name, r.Body)
				require.Equal(t, c.code, rpcErr["code"], "%s %s: %s", route.path, name, r.Body)
			}

			// Refusals of the transport are JSON-RPC errors too.
			r := e.do("POST", route.path, []byte(`{"jsonrpc":"2.0","id":"x","method":"tools/list"}`), bearer(key))
			require.Equal(t, http.StatusBadRequest, r.Status, "no Accept")
			require.Equal(t, "x", r.JSON["id"])
			require.Contains(t, rpcError(t, r)["message"], "Accept")
			r = e.do("POST", route.path, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, bearer(key), mcpAccept)
			require.Equal(t, http.StatusUnsupportedMediaType, r.Status, "a form's Content-Type")
			require.NotNil(t, rpcError(t, r))

			// Arguments the tool's schema refuses: the call's result.
			for _, args := range []string{`{"prompt": 7}`, `[1]`, `"x"`, `{}`} {
				r := e.do("POST", route.path, []byte(call(route.prefix+"triage", args)), bearer(key), mcpAccept)
				require.Equal(t, http.StatusOK, r.Status, "%s: %s", args, r.Body)
				if rpcErr := rpcError(t, r); rpcErr != nil {
					require.Equal(t, -32602.0, rpcErr["code"], "%s: %s", args, r.Body)
					continue
				}
				require.Contains(t, string(r.Body), `"isError":true`, "%s: %s", args, r.Body)
			}

			// Over the body cap: the router's 413, JSON.
			big := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"` + strings.Repeat("a", 1<<20) + `"}}`
			e.do("POST", route.path, []byte(big), bearer(key), mcpAccept).expectError(t, http.StatusRequestEntityTooLarge, "PayloadTooLargeError", "")
			// Chunked (no length to refuse it by), in a type the router
			// does not read: the handler meets the cap.
			req, err := http.NewRequest("POST", e.url+route.path, io.MultiReader(strings.NewReader(big)))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/octet-stream")
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Accept", "application/json, text/event-stream")
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, string(b))
			require.Equal(t, "application/json", res.Header.Get("Content-Type"))
		}

		// Nothing above ran anything, and the server still answers.
		acts := list(e.do("GET", "/api/v1/apps/"+appID+"/activations", nil, bearer(key)).expect(t, 200), "activations")
		require.Empty(t, acts)
		r := e.do("POST", "/api/v1/mcp", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), bearer(key), mcpAccept)
		require.Equal(t, http.StatusOK, r.Status)
		require.Nil(t, rpcError(t, r))
	})
}

// TestMCPReadOnlyCannotSlipACall: a read-only key's tools/call is refused
// however the message is dressed: in a batch (which the SDK would
// otherwise take, one message past the route's check), or with a member
// spelt twice in two cases (which Go's decoder and the SDK's read
// differently).
func TestMCPReadOnlyCannotSlipACall(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		session := e.signup("ada@example.com")
		key := e.keyWith(session, "read:all", "write:all")
		readOnly := e.keyWith(session, "read:all")
		appID := e.importManifest(key, exampleManifest(t)).expect(t, 201).str("app_id")
		call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"triage","arguments":{"prompt":"sneaky"}}}`
		for _, body := range []string{
			`[` + call + `]`,
			`[{"jsonrpc":"2.0","id":0,"method":"tools/list"},` + call + `]`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"tools/list","params":{"name":"triage","arguments":{"prompt":"sneaky"}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"triage","NAME":"x","arguments":{"prompt":"sneaky"}}}`,
		} {
			r := e.do("POST", "/api/v1/apps/"+appID+"/mcp", []byte(body), bearer(readOnly), mcpAccept)
			require.Less(t, r.Status, 500, body)
			require.NotNil(t, rpcError(t, r), "%s: %s", body, r.Body)
			require.NotContains(t, string(r.Body), "sneaky", body)
		}
		acts := list(e.do("GET", "/api/v1/apps/"+appID+"/activations", nil, bearer(key)).expect(t, 200), "activations")
		require.Empty(t, acts, "a read-only key ran nothing")
	})
}

// TestMCPAndOpenAIAreRateLimited: the per-user rate limit applies to the
// MCP and OpenAI routes as to the rest of the API (each answers its 429 in
// its own shape, with Retry-After).
func TestMCPAndOpenAIAreRateLimited(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, method, path string
		body               []byte
	}{
		{"mcp", "POST", "/api/v1/mcp", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)},
		{"openai", "GET", "/api/v1/openai/models", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			const limit = 6
			e := newEnv(t, store.SQLite, map[string]string{"AP_RATE_LIMIT": "6"})
			session := e.signup("ada@example.com")
			key := e.keyWith(session, "read:all", "write:all")
			var last *resp
			for i := 0; i <= limit; i++ {
				var body any
				if c.body != nil {
					body = c.body
				}
				last = e.do(c.method, c.path, body, bearer(key), mcpAccept)
				if last.Status == http.StatusTooManyRequests {
					break
				}
				require.Equal(t, http.StatusOK, last.Status, "request %d: %s", i, last.Body)
			}
			require.Equal(t, http.StatusTooManyRequests, last.Status, "more than %d a minute", limit)
			require.Equal(t, "60", last.Header.Get("Retry-After"))
			require.Equal(t, "application/json", last.Header.Get("Content-Type"))
			if c.name == "openai" {
				require.Equal(t, "rate_limit_exceeded", last.JSON["error"].(map[string]any)["code"])
			} else {
				require.Equal(t, "RateLimitError", last.str("error_type"))
			}
		})
	}
}

// TestMCPToolSchemaAnnotations: a function's input_schema may carry the
// `x-mcp-header` keyword MCP gives a meaning (a parameter sent as an HTTP
// header), right or wrong: the SDK panics on a tool whose annotation is
// wrong, which must cost neither the list nor the call, nor anyone's
// other tools.
func TestMCPToolSchemaAnnotations(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		session := e.signup("ada@example.com")
		key := e.keyWith(session, "read:all", "write:all")
		appID := e.importManifest(key, exampleManifest(t)).expect(t, 201).str("app_id")
		for name, prop := range map[string]any{
			"on_an_object": map[string]any{"type": "object", "x-mcp-header": "Region"},
			"a_number":     map[string]any{"type": "string", "x-mcp-header": 7},
			"bad_header":   map[string]any{"type": "string", "x-mcp-header": "not a header"},
			"good":         map[string]any{"type": "string", "x-mcp-header": "Region"},
		} {
			e.do("POST", "/api/v1/functions", map[string]any{"app_id": appID, "name": name, "code": "async function run(input) { return input; }",
				"input_schema": map[string]any{"type": "object", "properties": map[string]any{"region": prop}}}, bearer(key)).expect(t, 201)
		}
		for _, path := range []string{"/api/v1/apps/" + appID + "/mcp", "/api/v1/mcp"} {
			r := e.do("POST", path, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), bearer(key), mcpAccept)
			require.Equal(t, http.StatusOK, r.Status, "%s: %s", path, r.Body)
			require.Nil(t, rpcError(t, r), string(r.Body))
			require.Contains(t, string(r.Body), "triage", "the app's other tools are listed")
			require.Contains(t, string(r.Body), "good", "a right annotation is kept")
		}
		for _, name := range []string{"a_number", "good"} {
			r := e.do("POST", "/api/v1/apps/"+appID+"/mcp", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":{"region":"eu"}}}`),
				bearer(key), mcpAccept)
			require.Equal(t, http.StatusOK, r.Status, "%s: %s", name, r.Body)
			require.Nil(t, rpcError(t, r), string(r.Body))
			require.Contains(t, string(r.Body), `eu`, name)
		}
	})
}

// TestMCPStatelessProtocol: a client of protocol revision 2026-07-28
// (no session, no initialize; each call names its version in its _meta
// and in the Mcp-* headers) gets its answer, and the HTTP status the
// revision gives each refusal (SEP-2575): 400 for a tool that is not
// there and for headers that disagree with the body, 404 for an unknown
// method.
func TestMCPStatelessProtocol(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		e := newEnv(t, d, nil)
		key := e.keyWith(e.signup("ada@example.com"), "read:all", "write:all")
		appID := e.importManifest(key, exampleManifest(t)).expect(t, 201).str("app_id")
		const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
		post := func(method, name, params string) *resp {
			opts := []opt{bearer(key), mcpAccept, header("Mcp-Protocol-Version", "2026-07-28"), header("Mcp-Method", method)}
			if name != "" {
				opts = append(opts, header("Mcp-Name", name))
			}
			return e.do("POST", "/api/v1/apps/"+appID+"/mcp", []byte(`{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":{`+params+`}}`), opts...)
		}

		r := post("tools/call", "triage", `"name":"triage","arguments":{"prompt":"My invoice is wrong"},`+meta)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		require.Nil(t, rpcError(t, r), "%s", r.Body)
		require.Equal(t, 7.0, r.JSON["id"])
		require.Contains(t, string(r.Body), "echo: My invoice is wrong")

		r = post("tools/list", "", meta)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		require.Contains(t, string(r.Body), `"name":"triage"`)

		for name, c := range map[string]struct {
			r      *resp
			status int
			code   float64
		}{
			"an unknown tool":            {post("tools/call", "nope", `"name":"nope","arguments":{},`+meta), 400, -32602},
			"a name the header disowns":  {post("tools/call", "other", `"name":"triage","arguments":{"prompt":"x"},`+meta), 400, -32020},
			"an unknown method":          {post("nope/nope", "", meta), 404, -32601},
			"no version in the _meta":    {post("tools/call", "triage", `"name":"triage","arguments":{"prompt":"x"}`), 400, -32602},
			"arguments the schema fails": {post("tools/call", "triage", `"name":"triage","arguments":{"prompt":7},`+meta), 200, 0},
		} {
			require.Equal(t, c.status, c.r.Status, "%s: %s", name, c.r.Body)
			if c.code == 0 {
				require.Contains(t, string(c.r.Body), `"isError":true`, "%s: %s", name, c.r.Body)
				continue
			}
			rpcErr := rpcError(t, c.r)
			require.NotNil(t, rpcErr, "%s: %s", name, c.r.Body)
			require.Equal(t, c.code, rpcErr["code"], "%s: %s", name, c.r.Body)
		}
	})
}
