package api

import (
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
)

// mcpEndpoint is POST /api/v1/apps/{app_id}/mcp (the app's tools) and POST
// /api/v1/mcp (every app's): a plain net/http route, since MCP's
// Streamable HTTP is JSON-RPC, not an operation huma can describe. The
// router's layers applied (auth, rate, body limits); listing tools is
// reading, so the route asks what a GET asks, and internal/mcpserver asks
// more of a tools/call.
func (a *API) mcpEndpoint(w http.ResponseWriter, r *http.Request) {
	caller, err := auth.Check(auth.IdentityFrom(r.Context()), auth.AppUse, http.MethodGet)
	if err != nil {
		if apperr.Is(err, apperr.Authentication) {
			// MCP clients look for the challenge to know a token is wanted.
			w.Header().Set("WWW-Authenticate", "Bearer")
		}
		writeError(w, r, err)
		return
	}
	a.mcp.Serve(w, r, caller, r.PathValue("app_id"))
}

// documentMCP adds the MCP endpoints to the OpenAPI document by hand: one
// JSON-RPC message in, its answer out (JSON, or an event stream).
func (a *API) documentMCP() {
	oapi := a.huma.OpenAPI()
	message := &huma.Schema{Type: huma.TypeObject, Description: "A JSON-RPC 2.0 message of MCP (initialize, tools/list, tools/call, notifications)",
		Required: []string{"jsonrpc", "method"}, AdditionalProperties: true, Properties: map[string]*huma.Schema{
			"jsonrpc": {Type: huma.TypeString, Enum: []any{"2.0"}},
			"id":      {Description: "The request's id (none for a notification)"},
			"method":  {Type: huma.TypeString},
			"params":  {Type: huma.TypeObject, AdditionalProperties: true},
		}}
	answer := &huma.Schema{Type: huma.TypeObject, Description: "The JSON-RPC answer", AdditionalProperties: true}
	for _, e := range []struct{ id, path, summary, tools string }{
		{"app-mcp", "/api/v1/apps/{app_id}/mcp", "The app as an MCP server (Streamable HTTP)", "the app's agents, functions and pipelines, each named by its name (`_agent`, `_function` or `_pipeline` appended when two kinds share a name)"},
		{"mcp", "/api/v1/mcp", "Every app you reach as one MCP server (Streamable HTTP)", "the agents, functions and pipelines of every app the caller reaches (only its app for a bound key), named `<app slug>__<name>`"},
	} {
		op := &huma.Operation{
			OperationID: e.id,
			Method:      http.MethodPost,
			Path:        e.path,
			Summary:     e.summary,
			Tags:        []string{"mcp"},
			Description: "An MCP server over Streamable HTTP, stateless: any node answers any request and no session is kept " +
				"(no `Mcp-Session-Id`; GET and DELETE are not served). Point an MCP client at this URL with `Authorization: Bearer <key>`.\n\n" +
				"Tools: " + e.tools + ". LLM agents take `{prompt, chat_id?}`, custom agents their input_schema, functions theirs, pipelines `{input}`; " +
				"descriptions are the manifest's. A call runs an activation (`context.source: \"mcp\"`, in history), a function execution or a pipeline run " +
				"exactly as the API does, and answers its output as structured content and text (an LLM agent's `response`); " +
				"a failed run or an input its schema refuses is `isError: true` with the error; a cancelled call cancels its activation. " +
				"A call with a progress token gets progress notifications: its activation's id, or its pipeline run's id and each step's end.\n\n" +
				"One JSON-RPC message per request: batches (arrays) are refused, as MCP has refused them since 2025-06-18. " +
				"Every refusal is a JSON-RPC error answer: a message the server answers (bad params, an unknown tool) over 200; " +
				"one it cannot take (not JSON: -32700; a batch, no `jsonrpc: \"2.0\"`, a missing `Accept: application/json, text/event-stream`, " +
				"another Content-Type: -32600; an unknown method: -32601) over a 4xx whose JSON body is also the API's error body.",
			RequestBody: &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{"application/json": {Schema: message}}},
			Responses: map[string]*huma.Response{
				"200": {Description: "The answer: JSON, or an event stream of JSON-RPC messages", Content: map[string]*huma.MediaType{
					"application/json": {Schema: answer}, "text/event-stream": {Schema: &huma.Schema{Type: huma.TypeString}}}},
				"202": {Description: "A notification or a response was accepted"},
			},
			Security: []map[string][]string{{"bearer": {}}, {"cookie": {}}},
			Metadata: map[string]any{ruleKey: auth.AppUse},
		}
		if e.id == "app-mcp" {
			op.Parameters = []*huma.Param{{Name: "app_id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeString}}}
		}
		oapi.AddOperation(op)
		documentOperation(oapi, op)
		// The route is a reader's (tools/list); tools/call asks more.
		op.Description = strings.Replace(op.Description, ruleText(auth.AppUse, http.MethodPost), ruleText(auth.AppUse, http.MethodGet)+
			" `tools/call` runs things and needs the scopes of activate: a `read:all` key gets 403, whose body is also a JSON-RPC error answer. "+
			"Without credentials the answer is 401 with `WWW-Authenticate: Bearer`.", 1)
	}
}
