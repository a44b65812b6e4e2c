package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/openaicompat"
	"github.com/agentplatform/agentplatform/internal/store"
)

// The OpenAI-compatible endpoint (internal/openaicompat): plain handlers,
// not huma operations, because OpenAI's SDKs expect OpenAI's error shape,
// not the API's. The front door (auth, rate, body limits) applies as
// everywhere; refusals under openaicompat.Prefix take OpenAI's shape there
// too.

// openaiRoutes mounts the endpoint and documents it by hand.
func (a *API) openaiRoutes() {
	a.mux.HandleFunc("GET "+openaicompat.Prefix+"models", a.openaiModels)
	a.mux.HandleFunc("POST "+openaicompat.Prefix+"chat/completions", a.openaiChat)
	a.documentOpenAI()
}

func (a *API) catalog() *openaicompat.Catalog {
	return &openaicompat.Catalog{Apps: a.Apps, Store: a.Store}
}

// openaiCaller applies activate's rule (auth.AppUse) to the request, as
// the huma middleware does for operations.
func openaiCaller(r *http.Request) (*auth.Caller, error) {
	return auth.Check(auth.IdentityFrom(r.Context()), auth.AppUse, r.Method)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (a *API) openaiModels(w http.ResponseWriter, r *http.Request) {
	c, err := openaiCaller(r)
	if err != nil {
		openaicompat.WriteError(w, r, err)
		return
	}
	entries, err := a.catalog().Models(r.Context(), c)
	if err != nil {
		openaicompat.WriteError(w, r, err)
		return
	}
	list := openaicompat.ModelList{Object: "list", Data: make([]openaicompat.Model, len(entries))}
	for i, e := range entries {
		list.Data[i] = e.Model
	}
	writeJSON(w, list)
}

// errFailed is the answer of a run that failed: a 500 the SDKs must not
// retry (x-should-retry: false), since the platform already retried what
// was transient, and each try would be another run.
func errFailed(act *store.Activation) error {
	msg := "The agent's run failed"
	if act.Error != nil {
		msg = *act.Error
	}
	return &openaicompat.Error{Status: http.StatusInternalServerError, Body: openaicompat.ErrorBody{Error: openaicompat.ErrorDetail{
		Message: fmt.Sprintf("%s (activation %s)", msg, act.ID), Type: "server_error", Code: ptrTo("activation_failed"),
	}}}
}

// errWaiting answers a run that waits for a person's approval: the
// endpoint cannot hold the request that long.
func errWaiting(act *store.Activation) error {
	return &openaicompat.Error{Status: http.StatusConflict, Body: openaicompat.ErrorBody{Error: openaicompat.ErrorDetail{
		Message: "The agent's run waits for an answer (activation " + act.ID + "): answer it at /api/v1/activations/" +
			act.ID + "/waitpoints/{waitpoint_id}", Type: "invalid_request_error", Code: ptrTo("activation_waiting"),
	}}}
}

func (a *API) openaiChat(w http.ResponseWriter, r *http.Request) {
	fail := func(err error) {
		var oe *openaicompat.Error
		if errors.As(err, &oe) && oe.Status >= 500 {
			w.Header().Set("X-Should-Retry", "false")
		}
		openaicompat.WriteError(w, r, err)
	}
	c, err := openaiCaller(r)
	if err != nil {
		fail(err)
		return
	}
	ctx := auth.WithCaller(r.Context(), c)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		fail(err) // over the cap: 413 (httperr.Body)
		return
	}
	req, err := openaicompat.ParseChatRequest(body)
	if err != nil {
		fail(err)
		return
	}
	agent, err := a.catalog().Resolve(ctx, c, req.Model)
	if err != nil {
		fail(err)
		return
	}
	if req.Stream {
		// Opened first: a stream refused (too many) creates nothing.
		sctx, release, err := a.openStream(ctx, c)
		if err != nil {
			fail(err)
			return
		}
		defer release()
		ctx = sctx
	}
	act, _, err := a.Activations.Create(ctx, c, req.Activation(agent))
	if err != nil {
		fail(openaicompat.FromActivate(err))
		return
	}
	if req.Stream {
		a.openaiStream(ctx, w, r, act, req)
		return
	}
	act, err = a.awaitEnd(ctx, act)
	if err != nil {
		fail(err)
		return
	}
	if act.Status == store.StatusFailed {
		fail(errFailed(act))
		return
	}
	writeJSON(w, openaicompat.Completion(act, req.Model))
}

// awaitEnd waits for act's end as long as the caller waits: a client that
// goes away cancels the run (nobody would read its answer).
func (a *API) awaitEnd(ctx context.Context, act *store.Activation) (*store.Activation, error) {
	for !activation.Ended(act) {
		if act.Waiting != nil {
			return nil, errWaiting(act)
		}
		cur, err := a.Activations.Wait(ctx, act, activation.MaxWait)
		if err != nil {
			return nil, err
		}
		act = cur
		if ctx.Err() != nil {
			a.cancelAbandoned(ctx, act)
			return nil, ctx.Err()
		}
	}
	return act, nil
}

// cancelAbandoned cancels act, whose caller has gone, unless it has ended.
func (a *API) cancelAbandoned(ctx context.Context, act *store.Activation) {
	stop := context.WithoutCancel(ctx)
	if cur, err := a.Store.ActivationGet(stop, act.ID); err == nil && !activation.Ended(cur) {
		if _, err := a.Activations.Cancel(stop, cur); err != nil {
			a.log.Warn("openai: cancelling an abandoned activation", "activation_id", act.ID, "error", err)
		}
	}
}

// openaiStream answers with OpenAI's chunk stream of act: the role, one
// chunk per token, the finish reason, the usage when asked, then [DONE].
// A run that fails ends the stream with an error event, as OpenAI's does.
func (a *API) openaiStream(ctx context.Context, w http.ResponseWriter, r *http.Request, act *store.Activation, req *openaicompat.ChatRequest) {
	// Unless the stream reaches the run's end, its caller is gone: the run
	// is cancelled, however early that happens (it may already be calling
	// the model before the stream's first write).
	done := false
	defer func() {
		if !done {
			a.cancelAbandoned(ctx, act)
		}
	}()
	rc := http.NewResponseController(w)
	sub, toks, cur, stop, err := a.watch(ctx, act)
	if err != nil {
		openaicompat.WriteError(w, r, err)
		return
	}
	defer stop()
	startEventStream(w, http.StatusOK)
	write := func(line string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := io.WriteString(w, line); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	data := func(v any) bool {
		b, err := json.Marshal(v)
		return err == nil && write("data: "+string(b)+"\n\n")
	}
	chunks := openaicompat.NewChunks(act, req.Model)
	if !data(chunks.Role()) {
		return
	}
	a.follow(ctx, act, cur, sub, toks, 0, streamSink{
		token:     func(_ int, frag string) bool { return data(chunks.Token(frag)) },
		live:      func(int, string, json.RawMessage) bool { return true },
		keepAlive: func() bool { return write(": keep-alive\n\n") },
		final: func(final *store.Activation) {
			done = true
			if final.Status == store.StatusFailed {
				var oe *openaicompat.Error
				errors.As(errFailed(final), &oe)
				data(oe.Body)
				return
			}
			if data(chunks.Finish(final)) && (!req.IncludeUsage() || data(chunks.Usage(final))) {
				write("data: [DONE]\n\n")
			}
		},
	})
}

// openaiTag is the endpoint's tag in the OpenAPI document, listed after
// MCP's.
var openaiTag = &huma.Tag{Name: "openai", Description: "The OpenAI-compatible endpoint: any OpenAI SDK with base URL " +
	"`{public_url}/api/v1/openai` and an API key calls LLM agents as models. Its answers and errors are OpenAI's shapes, not the API's."}

// documentOpenAI adds the endpoint to the OpenAPI document by hand, in
// OpenAI's shapes (a subset of OpenAI's own reference: the fields the
// platform reads and answers). Its errors are OpenAI's {error: {message,
// type, param, code}}, the only operations whose errors are not ErrorBody.
func (a *API) documentOpenAI() {
	oapi := a.huma.OpenAPI()
	if i := slices.IndexFunc(oapi.Tags, func(t *huma.Tag) bool { return t.Name == "mcp" }); i >= 0 {
		oapi.Tags = slices.Insert(oapi.Tags, i+1, openaiTag)
	} else {
		oapi.Tags = append(oapi.Tags, openaiTag)
	}
	schemas := oapi.Components.Schemas.Map()
	ref := func(name string, s *huma.Schema) *huma.Schema {
		schemas[name] = s
		return &huma.Schema{Ref: "#/components/schemas/" + name}
	}
	str := func(desc string, enum ...any) *huma.Schema {
		return &huma.Schema{Type: huma.TypeString, Description: desc, Enum: enum}
	}
	integer := func(desc string) *huma.Schema { return &huma.Schema{Type: huma.TypeInteger, Description: desc} }
	closed := func(desc string, props map[string]*huma.Schema, optional ...string) *huma.Schema {
		s := &huma.Schema{Type: huma.TypeObject, Description: desc, Properties: props, AdditionalProperties: false}
		for name := range props {
			if !slices.Contains(optional, name) {
				s.Required = append(s.Required, name)
			}
		}
		slices.Sort(s.Required)
		return s
	}
	nullable := func(s *huma.Schema) *huma.Schema { s.Nullable = true; return s }

	errBody := ref("OpenAIError", closed("An error in OpenAI's shape, which OpenAI's SDKs parse", map[string]*huma.Schema{
		"error": closed("", map[string]*huma.Schema{
			"message": str("What went wrong"),
			"type":    str("OpenAI's error type: invalid_request_error, permission_error, requests, insufficient_quota, server_error"),
			"param":   nullable(str("The request parameter at fault (`messages[1].role`), for a 400")),
			"code":    nullable(str("OpenAI's error code: invalid_value, invalid_api_key, model_not_found, rate_limit_exceeded, activation_failed…")),
		}),
	}))
	model := ref("OpenAIModel", closed("An LLM agent as a model", map[string]*huma.Schema{
		"id":       str("`<app slug>/<agent name>`, or a system agent's name"),
		"object":   str("", "model"),
		"created":  integer("When the agent was created (Unix seconds)"),
		"owned_by": str("The app's slug, or `system`"),
	}))
	modelList := ref("OpenAIModelList", closed("The LLM agents the caller reaches", map[string]*huma.Schema{
		"object": str("", "list"),
		"data":   {Type: huma.TypeArray, Items: model},
	}))
	toolCall := ref("OpenAIToolCall", closed("A call of one of the caller's tools", map[string]*huma.Schema{
		"index": integer("The call's place (stream chunks only)"),
		"id":    str("The call's id, which the tool message answering it names as tool_call_id"),
		"type":  str("", "function"),
		"function": closed("", map[string]*huma.Schema{
			"name":      str("The tool's name"),
			"arguments": str("The arguments, a JSON object as text"),
		}),
	}, "index"))
	usage := closed("The run's token usage", map[string]*huma.Schema{
		"prompt_tokens": integer(""), "completion_tokens": integer(""), "total_tokens": integer(""),
	})
	completion := ref("OpenAIChatCompletion", closed("The agent's answer: one choice", map[string]*huma.Schema{
		"id":      str("`chatcmpl-<activation id>`: the activation is in history"),
		"object":  str("", "chat.completion"),
		"created": integer("When the activation was created (Unix seconds)"),
		"model":   str("The model as requested"),
		"choices": {Type: huma.TypeArray, Items: closed("", map[string]*huma.Schema{
			"index": integer(""),
			"message": closed("", map[string]*huma.Schema{
				"role":       str("", "assistant"),
				"content":    nullable(str("The answer's text; null when it only calls tools")),
				"tool_calls": {Type: huma.TypeArray, Items: toolCall, Description: "The caller's tools the model calls (finish_reason tool_calls)"},
			}, "tool_calls"),
			"finish_reason": str("", "stop", "length", "tool_calls", "content_filter"),
		})},
		"usage": usage,
	}))
	// Nullable on the string alternative: a schema without a type cannot be.
	text := nullable(str(""))
	content := &huma.Schema{Description: "A string, or an array of text parts; null for an assistant turn that only calls tools",
		AnyOf: []*huma.Schema{text, {Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeObject, Required: []string{"type", "text"},
			Properties: map[string]*huma.Schema{"type": str("", "text"), "text": str("")}}}}}
	request := ref("OpenAIChatCompletionRequest", &huma.Schema{Type: huma.TypeObject,
		Description: "OpenAI's chat completion request: the fields the platform reads (others are ignored)",
		Required:    []string{"messages", "model"},
		Properties: map[string]*huma.Schema{
			"model": str("`<app slug>/<agent name>`, or the agent's id"),
			"messages": {Type: huma.TypeArray, MinItems: ptrTo(1), Description: "The conversation, after the agent's system message",
				Items: &huma.Schema{Type: huma.TypeObject, Required: []string{"role"}, Properties: map[string]*huma.Schema{
					"role":         str("`developer` is taken as system", "system", "developer", "user", "assistant", "tool"),
					"content":      content,
					"tool_calls":   {Type: huma.TypeArray, Items: toolCall, Description: "An assistant turn's calls of the caller's tools"},
					"tool_call_id": str("The call a tool turn answers (required for role tool)"),
				}}},
			"temperature":           {Type: huma.TypeNumber, Minimum: ptrTo(0.0), Maximum: ptrTo(2.0), Description: "Overrides the agent's"},
			"max_tokens":            {Type: huma.TypeInteger, Minimum: ptrTo(1.0), Description: "Overrides the agent's"},
			"max_completion_tokens": {Type: huma.TypeInteger, Minimum: ptrTo(1.0), Description: "OpenAI's newer name for max_tokens; wins over it"},
			"stream":                {Type: huma.TypeBoolean, Description: "Answer OpenAI's chunk stream (text/event-stream), `data: [DONE]` last"},
			"stream_options": {Type: huma.TypeObject, Properties: map[string]*huma.Schema{
				"include_usage": {Type: huma.TypeBoolean, Description: "End the stream with a chunk of the run's usage (no choices)"}}},
			"tools": {Type: huma.TypeArray, Description: "The caller's function tools, offered to the model beside the agent's own; " +
				"when the model calls one, the answer has finish_reason tool_calls and the caller continues with a new request holding the results",
				Items: &huma.Schema{Type: huma.TypeObject, Required: []string{"type", "function"}, Properties: map[string]*huma.Schema{
					"type": str("", "function"),
					"function": {Type: huma.TypeObject, Required: []string{"name"}, Properties: map[string]*huma.Schema{
						"name":        str("Unique among the tools, and no name of the agent's own tools"),
						"description": str(""),
						"parameters":  {Type: huma.TypeObject, Description: "A JSON Schema of the arguments", AdditionalProperties: true},
					}},
				}}},
		}})

	// errs are the endpoint's error answers, in OpenAI's words.
	errs := map[int]string{
		http.StatusUnauthorized:                "No credentials, or an invalid, expired or revoked one (code `invalid_api_key`).",
		http.StatusForbidden:                   "The credential may not do this (code `insufficient_permissions`).",
		http.StatusRequestEntityTooLarge:       "The request body is over 1 MiB (code `payload_too_large`).",
		http.StatusTooManyRequests:             "Rate limit exceeded (code `rate_limit_exceeded`): wait `Retry-After` seconds.",
		http.StatusRequestHeaderFieldsTooLarge: "The request line and headers are over 64 KiB.",
		http.StatusInternalServerError:         "Internal error: the `X-Request-ID` header identifies it in the server's log.",
	}
	for _, e := range []struct {
		id, method, path, summary, desc string
		body, ok                        *huma.Schema
		more                            map[int]string
	}{
		{"openai-list-models", http.MethodGet, openaicompat.Prefix + "models", "The LLM agents you reach, as OpenAI models",
			"OpenAI's `GET /models`: each LLM agent the caller reaches (only its app's for a bound key) is a model named `<app slug>/<agent name>`.",
			nil, modelList, nil},
		{"openai-chat-completions", http.MethodPost, openaicompat.Prefix + "chat/completions", "Call an LLM agent as an OpenAI chat completion",
			"OpenAI's `POST /chat/completions`: `model` names the agent; all `messages` follow the agent's system message; " +
				"`temperature` and `max_tokens` override the agent's. Each call is an activation (`context.source: \"openai\"`, in history, " +
				"its usage recorded). The agent's own tools run inside; a call of one of the caller's `tools` ends the answer with " +
				"`finish_reason: \"tool_calls\"`, and the caller continues with a new request holding the results. " +
				"With `stream: true` the answer is OpenAI's chunk stream (`data: [DONE]` last; a usage chunk before it with " +
				"`stream_options.include_usage`; a failed run ends the stream with an error event). A client that goes away cancels the run.",
			request, completion, map[int]string{
				http.StatusBadRequest: "Invalid request (code `invalid_value`): `param` names the parameter at fault.",
				http.StatusNotFound:   "The model is no agent the caller reaches (code `model_not_found`).",
				http.StatusConflict:   "The run waits for a person's approval (code `activation_waiting`): answer its waitpoint.",
				http.StatusInternalServerError: "The agent's run failed (code `activation_failed`, header `X-Should-Retry: false`: " +
					"every retry would be another run), or an internal error.",
			}},
	} {
		op := &huma.Operation{
			OperationID: e.id, Method: e.method, Path: e.path, Summary: e.summary, Description: e.desc,
			Tags:      []string{openaiTag.Name},
			Responses: map[string]*huma.Response{},
			Security:  []map[string][]string{{"bearer": {}}, {"cookie": {}}},
			Metadata:  map[string]any{ruleKey: auth.AppUse},
		}
		ok := &huma.Response{Description: "The answer", Content: map[string]*huma.MediaType{"application/json": {Schema: e.ok}}}
		if e.body != nil {
			op.RequestBody = &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{"application/json": {Schema: e.body}}}
			ok.Description = "The answer; with `stream: true`, OpenAI's chunk stream"
			ok.Content["text/event-stream"] = &huma.MediaType{Schema: &huma.Schema{Type: huma.TypeString,
				Description: "`data: <chat.completion.chunk>` events, `data: [DONE]` last"}}
		}
		op.Responses["200"] = ok
		for status, desc := range errs {
			if more, ok := e.more[status]; ok {
				desc = more
			}
			op.Responses[strconv.Itoa(status)] = &huma.Response{Description: desc, Content: map[string]*huma.MediaType{"application/json": {Schema: errBody}}}
		}
		for status, desc := range e.more {
			if op.Responses[strconv.Itoa(status)] == nil {
				op.Responses[strconv.Itoa(status)] = &huma.Response{Description: desc, Content: map[string]*huma.MediaType{"application/json": {Schema: errBody}}}
			}
		}
		oapi.AddOperation(op)
		// The rule in words and the 429's Retry-After; an error answer it
		// adds (none today) takes OpenAI's shape too, as the router's
		// refusals on these paths do.
		documentOperation(oapi, op)
		for status, r := range op.Responses {
			if status >= "400" {
				r.Content = map[string]*huma.MediaType{"application/json": {Schema: errBody}}
			}
		}
	}
}
