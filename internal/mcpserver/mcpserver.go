// Package mcpserver makes every app an MCP server (DESIGN §4 "MCP
// server"): the app's agents, functions and pipelines are its tools, and a
// call runs an activation, an execution or a pipeline run exactly as the
// API's routes do, so it is in history like theirs.
//
// The transport is the go-sdk's Streamable HTTP in stateless mode: the
// server is built for each request from what its caller reaches and
// thrown away after it, so any node answers any request and nothing is
// kept in memory between requests. What a route requires of its caller
// (authentication, the app's existence) is the API's business; this
// package is handed the caller.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkjson "github.com/segmentio/encoding/json"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/function"
	"github.com/agentplatform/agentplatform/internal/httperr"
	"github.com/agentplatform/agentplatform/internal/pipeline"
	"github.com/agentplatform/agentplatform/internal/version"
	"github.com/agentplatform/agentplatform/internal/warm"
)

// Deps are the services a tool call goes through: the same the API's
// routes use.
type Deps struct {
	Apps        *apps.Service
	Activations *activation.Service
	Functions   *function.Service
	Pipelines   *pipeline.Service
}

// Service serves the MCP endpoints.
type Service struct {
	Deps
	// plain answers a message in one JSON body; streaming answers it as
	// an event stream, for a call whose client asked for progress.
	plain, streaming *mcp.StreamableHTTPHandler
	calls            callServers
	// pipelinePoll is how often a pipeline call reads its run's state.
	pipelinePoll time.Duration
	warm         *warm.Pool
}

// Close ends the goroutines kept warm for calls.
func (s *Service) Close() { s.warm.Close() }

// CallTimeout bounds how long a tool call waits for its run to end. An
// activation also ends by its own timeout; a pipeline run has none.
const CallTimeout = 15 * time.Minute

// warmCalls bounds the warm goroutines kept for the SDK's next requests
// (warm.Pool).
const warmCalls = 256

// New builds the service.
func New(d Deps) *Service {
	s := &Service{Deps: d, pipelinePoll: 100 * time.Millisecond, warm: warm.New(10*time.Second, warmCalls)}
	s.plain, s.streaming = newHandler(true, s.warm), newHandler(false, s.warm)
	return s
}

func newHandler(jsonResponse bool, pool *warm.Pool) *mcp.StreamableHTTPHandler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		srv, _ := r.Context().Value(serverKey{}).(*mcp.Server)
		return srv
	}, &mcp.StreamableHTTPOptions{
		Stateless: true,
		// One write of the answer, where an event stream costs a write and a
		// flush per message; progress needs the stream (Serve picks).
		JSONResponse: jsonResponse,
		// The front door limits bodies already (internal/router), and the
		// platform is often served behind a proxy on a loopback address
		// with the public Host: the SDK's DNS-rebinding guard would refuse
		// every request there. Credentials are bearer tokens or a cookie the
		// router's CSRF check guards, which a rebound name never carries.
		DisableLocalhostProtection:   true,
		MaxRequestBodyBytes:          -1,
		PropagateRequestCancellation: true,
		// A call answered in JSON runs on the request's goroutine (the
		// fork's serveInline); anything else, a call answered as an event
		// stream included, on goroutines of the SDK's, and the handler's
		// run goes deep (down to the database driver): their stacks grew,
		// copying themselves, on every call (~50 µs of a tools/call on
		// PostgreSQL). Warm ones have grown already.
		Go: pool.Go,
	})
}

type serverKey struct{}

// Serve answers one MCP request of caller: the tools of app appID, or of
// every app the caller reaches (prefixed with the app's slug) when appID
// is empty. An app the caller does not reach is the API's 404.
//
// tools/list needs what reading needs (the route checked it); tools/call
// runs things, so it needs the scopes of activate: a read-only key gets a
// 403 whose body is both the API's error body and a JSON-RPC error answer
// to the call, which MCP clients read as the call's error without
// dropping the connection.
func (s *Service) Serve(w http.ResponseWriter, r *http.Request, caller *auth.Caller, appID string) {
	ctx := r.Context()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		httperr.Write(w, r, err)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	// One message per request: MCP dropped JSON-RPC batches in 2025-06-18,
	// and the checks below read one message (a batch would slip a
	// tools/call past them). What is not JSON is refused here in JSON-RPC's
	// terms, as the SDK's own refusals are (rpcErrors).
	switch trimmed := bytes.TrimSpace(body); {
	case len(trimmed) == 0:
		writeRPCError(w, nil, jsonrpc.CodeInvalidRequest, invalid("The body is empty: send one JSON-RPC message"))
		return
	case trimmed[0] == '[':
		writeRPCError(w, nil, jsonrpc.CodeInvalidRequest, invalid("JSON-RPC batches are not supported: send one message per request"))
		return
	case !json.Valid(trimmed): // iterative, and 10,000 levels at most: what is parsed below is bounded
		writeRPCError(w, nil, jsonrpc.CodeParseError, invalid("The body is not JSON: send one JSON-RPC message"))
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
			Meta struct {
				ProgressToken any `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	// Read as the SDK reads it (its decoder, its flags): what is checked
	// here is what the SDK then runs.
	if _, err := sdkjson.Parse(body, &msg, sdkjson.DontMatchCaseInsensitiveStructFields); err == nil && msg.Method == "tools/call" {
		if err := auth.Allow(caller, auth.AppUse, http.MethodPost); err != nil {
			writeRPCError(w, msg.ID, jsonrpc.CodeInvalidRequest, httperr.Body(ctx, err))
			return
		}
	}
	var srv *mcp.Server
	if msg.Method == "tools/call" {
		srv, ctx, err = s.callServer(ctx, caller, appID, msg.Params.Name)
	} else {
		srv, err = s.server(ctx, caller, appID)
	}
	if err != nil {
		httperr.Write(w, r, err)
		return
	}
	h := s.plain
	if msg.Params.Meta.ProgressToken != nil {
		h = s.streaming
	}
	rw := &rpcErrors{ResponseWriter: w}
	h.ServeHTTP(rw, r.WithContext(context.WithValue(ctx, serverKey{}, srv)))
	rw.answer(msg.ID)
}

// invalid is the body of a 400 refusal of the message.
func invalid(detail string) *httperr.ErrorBody {
	return &httperr.ErrorBody{Detail: detail, StatusCode: http.StatusBadRequest, ErrorType: string(apperr.Validation)}
}

// rpcErrors holds back the SDK's plain-text refusals (http.Error: a
// missing Accept, no jsonrpc member, an unknown method…), which
// Serve answers as JSON-RPC errors instead: every refusal of the
// endpoint is then JSON a client can read. Anything else passes through,
// flushes included (event streams).
type rpcErrors struct {
	http.ResponseWriter
	status int // the refusal's, 0 when passing through
	text   bytes.Buffer
}

func (w *rpcErrors) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = code
		w.Header().Del("Content-Type")
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rpcErrors) Write(b []byte) (int, error) {
	if w.status != 0 {
		return w.text.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// Flush sends what the SDK wrote so far (a progress notification before
// the call's answer). The writer beneath is the router's, which flushes
// through its Unwrap: asking it for http.Flusher directly finds none, and
// the notifications waited for the answer.
func (w *rpcErrors) Flush() {
	if w.status == 0 {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

func (w *rpcErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// answer writes the refusal held back, if any, as a JSON-RPC error to
// request id (when it is one: a string or a number).
func (w *rpcErrors) answer(id json.RawMessage) {
	if w.status == 0 {
		return
	}
	code := int64(jsonrpc.CodeInvalidRequest)
	if strings.HasPrefix(w.text.String(), "JSON RPC not handled") {
		code = jsonrpc.CodeMethodNotFound
	}
	var v any
	if json.Unmarshal(id, &v) != nil {
		id = nil
	}
	switch v.(type) {
	case string, float64:
	default:
		id = nil
	}
	writeRPCError(w.ResponseWriter, id, code, &httperr.ErrorBody{Detail: strings.TrimSpace(w.text.String()), StatusCode: w.status,
		ErrorType: string(httperr.KindOfStatus(w.status))})
}

// writeRPCError answers a refused request with the HTTP status of the
// refusal and a body that is both the API's error body and a JSON-RPC
// error answer (code) to request id (JSON-RPC readers ignore the other
// members).
func writeRPCError(w http.ResponseWriter, id json.RawMessage, code int64, b *httperr.ErrorBody) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	out, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
		*httperr.ErrorBody
	}{"2.0", id, jsonrpc.Error{Code: code, Message: b.Detail}, b})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(b.StatusCode)
	_, _ = w.Write(out)
}

// server builds the MCP server of one request with the tools caller
// reaches.
func (s *Service) server(ctx context.Context, caller *auth.Caller, appID string) (*mcp.Server, error) {
	tools, err := s.tools(ctx, caller, appID)
	if err != nil {
		return nil, err
	}
	srv := newServer()
	for _, t := range tools {
		addTool(srv, &mcp.Tool{Name: t.name, Description: t.description, InputSchema: t.schema}, s.handle(caller, t))
	}
	return srv, nil
}

// addTool adds t to srv. A stored input_schema may carry any keyword,
// x-mcp-header too (a parameter a client also sends as a header), and
// the SDK panics on a tool whose such annotations are wrong: that tool
// is listed without them rather than costing the caller every tool.
func addTool(srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) {
	defer func() {
		if recover() != nil {
			t.InputSchema = withoutHeaderAnnotations(t.InputSchema)
			srv.AddTool(t, h)
		}
	}()
	srv.AddTool(t, h)
}

// withoutHeaderAnnotations is schema (a JSON value) without its
// x-mcp-header members, at any depth.
func withoutHeaderAnnotations(schema any) any {
	switch v := schema.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if k != "x-mcp-header" {
				out[k] = withoutHeaderAnnotations(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutHeaderAnnotations(e)
		}
		return out
	}
	return schema
}

func newServer() *mcp.Server {
	return mcp.NewServer(&mcp.Implementation{Name: "agentplatform", Version: version.Version}, &mcp.ServerOptions{
		// A tool list is what this caller reaches: no shared cache may
		// hand it to another (the protocol's default scope is public).
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" },
	})
}

// handle is the tool handler of t: its run's failure, bad input
// included, is the call's result (isError), for the model to read.
func (s *Service) handle(caller *auth.Caller, t tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// Serve refused a read-only caller's tools/call already; this holds
		// should its reading of the message ever differ from the SDK's.
		if err := auth.Allow(caller, auth.AppUse, http.MethodPost); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: httperr.Body(ctx, err).Detail}
		}
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		// The SDK calls this on the request's goroutine or a warm one
		// (newHandler).
		out, err := t.run(ctx, s, caller, args, progressOf(req))
		if err != nil {
			return failed(httperr.Body(ctx, err).Detail), nil
		}
		return out, nil
	}
}

// progress tells the client how far a call is: done of total (0: not
// known), and what happened.
type progress func(ctx context.Context, done, total float64, message string)

// progressOf is the progress of req: notifications on the call's own
// stream when the client gave a progress token (the only way a stateless
// server reaches it), nothing otherwise. A notification that cannot be
// sent is dropped: the call goes on.
func progressOf(req *mcp.CallToolRequest) progress {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func(context.Context, float64, float64, string) {}
	}
	return func(ctx context.Context, done, total float64, message string) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: done, Total: total, Message: message})
	}
}

// failed is a call's error result.
func failed(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// answer is a call's result for a run's output: the output as structured
// content (an object; anything else is wrapped as {"result": output}),
// and text, which is the answer itself when there is one (an LLM agent's
// response) and the output's JSON otherwise.
func answer(output json.RawMessage, text string) *mcp.CallToolResult {
	if len(output) == 0 {
		output = json.RawMessage("null")
	}
	var structured any = output
	if len(bytes.TrimSpace(output)) == 0 || bytes.TrimSpace(output)[0] != '{' {
		structured = map[string]json.RawMessage{"result": output}
	}
	if text == "" {
		text = string(output)
	}
	return &mcp.CallToolResult{StructuredContent: structured, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
