package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/store"
)

// TokenEvent is one fragment of the LLM's answer as it arrives.
type TokenEvent struct {
	Delta string `json:"delta"`
}

const (
	// finalEventID is the id of a stream's last event (the activation). A
	// client reconnecting with it is answered 204: nothing more will come.
	finalEventID = "end"
	// endWait bounds how long a stream whose activation has ended waits
	// for the last tokens to reach this node before the final event.
	endWait = 2 * time.Second
	// keepAliveEvery sends a comment line so that proxies keep an idle
	// stream open.
	keepAliveEvery = 15 * time.Second
	// streamWriteTimeout bounds one write to a stream's client.
	streamWriteTimeout = 10 * time.Second
)

const sseDoc = "Server-Sent Events. `event: token` with `data: {\"delta\": \"…\"}` for each fragment of the LLM's answer, " +
	"numbered from 1 in `id:`; then one `event: activation` with the full record in `data:` and `id: end`. " +
	"Every token since the first is sent (they are kept until the activation ends and " +
	"30 s after; later, a stream has only the final event, whose record holds the whole answer). " +
	"The tokens are a live preview: should the run be retried, the final record alone is authoritative."

// streamRoute registers GET /api/v1/activations/{activation_id}/stream:
// a huma operation (auth, 404s and docs as everywhere) whose answer is a
// Server-Sent Events stream.
func (a *API) streamRoute() {
	op := huma.Operation{
		OperationID: "stream-activation", Method: http.MethodGet, Path: "/api/v1/activations/{activation_id}/stream",
		Summary: "Stream an activation: its tokens as they arrive, then the final record", Tags: []string{"activations"},
		Description: sseDoc + "\n\n" +
			"Authenticate with `Authorization: Bearer`, the session cookie, or `?token=` (EventSource cannot send headers). " +
			"A reconnect with `Last-Event-ID` (EventSource sends it by itself) resumes after that event; " +
			"one after the final event (`Last-Event-ID: end`) is answered 204, which tells EventSource to stop. " +
			"When the server stops, or a client falls behind, the stream ends without the final event: reconnect.",
		Responses: map[string]*huma.Response{
			"200": {Description: "The stream", Content: map[string]*huma.MediaType{"text/event-stream": {Schema: sseSchema()}}},
			"204": {Description: "The client already has the final event (`Last-Event-ID: end`)"},
			// As huma documents the errors of the other operations.
			"default": {Description: "Error", Content: map[string]*huma.MediaType{"application/json": {
				Schema: a.huma.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(ErrorBody{}), true, "ErrorBody")}}},
		},
	}
	register(a, op, auth.AppUse, a.streamActivation)
}

func sseSchema() *huma.Schema {
	return &huma.Schema{Type: huma.TypeString, Description: "event: token / id: 1, 2, … / data: {\"delta\": \"…\"}; " +
		"event: step / data: an ended step of a run that calls tools (as GET …/steps lists it); " +
		"event: waiting / data: the activation's waiting, when its run starts to wait; " +
		"then event: activation / id: end / data: the Activation"}
}

type streamInput struct {
	ActivationID string `path:"activation_id"`
	LastEventID  string `header:"Last-Event-ID" doc:"Resume after this event: a token's number, or end (answered 204)"`
	Token        string `query:"token" doc:"A session token or API key, for clients that cannot send headers (EventSource)"`
}

func (a *API) streamActivation(ctx context.Context, in *streamInput) (*huma.StreamResponse, error) {
	c := mustCaller(ctx)
	act, err := a.Activations.Get(ctx, c, in.ActivationID)
	if err != nil {
		return nil, err
	}
	after, end, err := parseLastEventID(in.LastEventID)
	if err != nil {
		return nil, err
	}
	if end && activation.Ended(act) {
		return &huma.StreamResponse{Body: func(hctx huma.Context) { hctx.SetStatus(http.StatusNoContent) }}, nil
	}
	sctx, release, err := a.openStream(ctx, c)
	if err != nil {
		return nil, err
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		defer release()
		a.serveStream(sctx, hctx, act, after, http.StatusOK)
	}}, nil
}

// parseLastEventID reads where a reconnecting client left off: after token
// n, or after the final event (end).
func parseLastEventID(s string) (after int, end bool, err error) {
	s = strings.TrimSpace(s)
	switch s {
	case "":
		return 0, false, nil
	case finalEventID:
		return 0, true, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, false, apperr.Invalid("Last-Event-ID", "Invalid value for header Last-Event-ID: expected an event id of this stream (a number, or end)")
	}
	return n, false, nil
}

// openStream makes the context a stream runs in: the one place for what
// every stream needs when it opens. It ends with the request, or when the
// server shuts down (CloseStreams): clients then reconnect with
// Last-Event-ID, here after a restart or on another node. release frees it.
func (a *API) openStream(ctx context.Context, c *auth.Caller) (_ context.Context, release func(), _ error) {
	// The hold takes one of the user's connection places and ends the
	// stream with its credential (logout, revocation, disable).
	hold, err := a.Auth.Hold(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	closed := a.metrics.ConnectionOpened("sse")
	ctx, cancel := context.WithCancel(hold.Context())
	stop := context.AfterFunc(a.streamsCtx, cancel)
	return ctx, func() { stop(); cancel(); hold.Release(); closed() }, nil
}

// CloseStreams ends every open SSE stream; the HTTP server calls it when it
// shuts down, since it would otherwise wait for them until its drain
// timeout.
func (a *API) CloseStreams() { a.endStreams() }

// Close releases what the API keeps between requests (the MCP calls'
// warm goroutines); the server calls it as it closes.
func (a *API) Close() { a.mcp.Close() }

// watch opens activation act's events and tokens, then reads its state:
// in that order, so that neither a token nor the end can slip by in
// between. stop closes what it opened.
func (a *API) watch(ctx context.Context, act *store.Activation) (*events.Subscription, *events.TokenReader, *store.Activation, func(), error) {
	sub := a.Events.Subscribe(act.UserID, events.Filter{ActivationID: act.ID}, 16)
	toks := a.Events.ReadTokens(act.UserID, act.ID)
	stop := func() { toks.Close(); sub.Close() }
	cur, err := a.Store.ActivationGet(ctx, act.ID)
	if err != nil {
		stop()
		return nil, nil, nil, nil, err
	}
	return sub, toks, cur, stop, nil
}

// startEventStream writes the head of a text/event-stream answer.
func startEventStream(w http.ResponseWriter, status int) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(status)
}

// serveStream writes activation act's events to hctx with status: its
// tokens numbered after `after`, then the final record.
func (a *API) serveStream(ctx context.Context, hctx huma.Context, act *store.Activation, after, status int) {
	r, w := humago.Unwrap(hctx)
	rc := http.NewResponseController(w)
	sub, toks, cur, stop, err := a.watch(ctx, act)
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer stop()
	startEventStream(w, status)
	if rc.Flush() != nil {
		return
	}
	write := func(format string, args ...any) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	send := func(id, event string, data any) bool {
		b, err := json.Marshal(data)
		return err == nil && write("id: %s\nevent: %s\ndata: %s\n\n", id, event, b)
	}

	a.follow(ctx, act, cur, sub, toks, after, streamSink{
		token: func(n int, frag string) bool { return send(strconv.Itoa(n), "token", TokenEvent{Delta: frag}) },
		live: func(after int, name string, data json.RawMessage) bool {
			return write("id: %d\nevent: %s\ndata: %s\n\n", after, name, data)
		},
		keepAlive: func() bool { return write(": keep-alive\n\n") },
		final:     func(final *store.Activation) { send(finalEventID, "activation", activationOut(final)) },
	})
}

// streamSink is where follow sends what it reads; a false answer ends the
// stream (the client is gone).
type streamSink struct {
	// token is the n-th fragment of the answer.
	token func(n int, frag string) bool
	// live is a step or waiting event (name step or waiting), numbered
	// with the last token's number.
	live      func(after int, name string, data json.RawMessage) bool
	keepAlive func() bool
	// final is the ended activation, once all its tokens are out.
	final func(final *store.Activation)
}

// follow sends activation act's tokens after `after`, its live events and
// finally its ended record to sink. sub and toks were opened before cur
// was read, so that neither a token nor the end can slip by in between.
func (a *API) follow(ctx context.Context, act, cur *store.Activation, sub *events.Subscription, toks *events.TokenReader, after int, sink streamSink) {
	ended := activation.Ended(cur)
	// Past its retention no node has the tokens: no use waiting for them.
	gaveUp := ended && cur.CompletedAt != nil && time.Since(*cur.CompletedAt) > events.TokenRetention+endWait
	var giveUp <-chan time.Time
	keepAlive := time.NewTicker(keepAliveEvery)
	defer keepAlive.Stop()
	for {
		t := toks.After(after)
		for _, f := range t.Frags {
			after++
			if !sink.token(after, f) {
				return
			}
		}
		if ended && (t.Done || gaveUp) {
			if final, err := a.Store.ActivationGet(ctx, act.ID); err == nil {
				sink.final(final)
			}
			return
		}
		if ended && giveUp == nil {
			if final, err := a.Store.ActivationGet(ctx, act.ID); err == nil && final.StartedAt == nil {
				gaveUp = true // ended before it ran (cancelled): no tokens anywhere
				continue
			}
			// Ended, but the last tokens are not here (yet): ask the node
			// that ran it once more, and wait a little.
			toks.Rewatch()
			timer := time.NewTimer(endWait)
			defer timer.Stop()
			giveUp = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-t.Changed:
		case <-giveUp:
			gaveUp = true
		case <-keepAlive.C:
			if !sink.keepAlive() {
				return
			}
		case ev, ok := <-sub.C:
			if !ok {
				// Fell behind, or the bus stopped: the client reconnects
				// with Last-Event-ID.
				return
			}
			switch ev.Type {
			case events.ActivationStarted:
				// It may run on another node, which may have missed the
				// watch while it was queued.
				toks.Rewatch()
			case events.ActivationCompleted, events.ActivationFailed:
				ended = true
			case events.ActivationStep, events.ActivationWaiting:
				// Live only: GET …/steps has them all. Their id is the
				// last token's, so a reconnect resumes the tokens after it.
				name, data := "step", ev.Step
				if ev.Type == events.ActivationWaiting {
					name, data = "waiting", ev.Waiting
				}
				if !sink.live(after, name, data) {
					return
				}
			}
		}
	}
}

// Create-and-stream: an activate call with Accept: text/event-stream is
// answered 201 with the new activation's stream.

// streams lets an activate operation answer with the activation's stream:
// its middleware and its documentation.
func (a *API) streams(op huma.Operation) huma.Operation {
	op.Middlewares = append(op.Middlewares, a.createAndStream)
	if op.Responses == nil {
		op.Responses = map[string]*huma.Response{}
	}
	// huma fills in the JSON schema of the application/json entry.
	op.Responses[strconv.Itoa(http.StatusCreated)] = &huma.Response{
		Description: "The activation (application/json), or with `Accept: text/event-stream` its stream " +
			"from its first token (as GET /api/v1/activations/{activation_id}/stream sends it)",
		Content: map[string]*huma.MediaType{
			"application/json":  {},
			"text/event-stream": {Schema: sseSchema()},
		},
	}
	if op.Description != "" {
		op.Description += "\n\n"
	}
	op.Description += "Create-and-wait: with `Prefer: wait=N` (RFC 7240; whole seconds, at most 60 — a larger N is taken as 60) " +
		"the answer comes once the activation has ended or waits for an answer (`waiting`: an approval, client tool results), " +
		"or after N s with the activation as it stands then; " +
		"`Preference-Applied: wait=N` says so. " +
		"Create-and-stream: with `Accept: text/event-stream` the answer (201) is the activation's stream from its first token " +
		"(`event: token`, then `event: activation` with the full record), and `Prefer` is not applied; " +
		"a client that loses it reconnects to `{Location}/stream` with `Last-Event-ID`. " +
		"`Location` is the activation's URL. An `Idempotency-Key` replay waits for, or streams, the first activation."
	return op
}

type streamSlotKey struct{}

// streamSlot is where an activate handler leaves the activation for
// createAndStream to stream.
type streamSlot struct{ act *store.Activation }

// streaming hands act to createAndStream when the request asked for its
// stream; the handler then answers as usual and its answer is dropped.
func streaming(ctx context.Context, act *store.Activation) bool {
	slot, ok := ctx.Value(streamSlotKey{}).(*streamSlot)
	if ok {
		slot.act = act
	}
	return ok
}

// createAndStream is the middleware of the activate operations: with Accept:
// text/event-stream the handler's JSON answer is held back and, if it
// created (or replayed) an activation, replaced by that activation's
// stream; an error goes out as it is.
func (a *API) createAndStream(hctx huma.Context, next func(huma.Context)) {
	if !acceptsEventStream(hctx.Header("Accept")) {
		next(hctx)
		return
	}
	// Opened first: a stream refused (e.g. too many) creates nothing.
	ctx, release, err := a.openStream(hctx.Context(), mustCaller(hctx.Context()))
	if err != nil {
		body := errorBody(hctx.Context(), err)
		_ = huma.WriteErr(a.huma, hctx, body.StatusCode, body.Detail, body)
		return
	}
	defer release()
	slot := &streamSlot{}
	held := &heldAnswer{humaContext: huma.WithValue(hctx, streamSlotKey{}, slot)}
	next(held)
	if slot.act == nil || held.status >= 300 {
		held.send(hctx)
		return
	}
	a.serveStream(ctx, hctx, slot.act, 0, http.StatusCreated)
}

// acceptsEventStream reports whether an Accept header lists
// text/event-stream (with a non-zero q).
func acceptsEventStream(accept string) bool {
	if !strings.Contains(accept, "text/event-stream") {
		return false
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && mt == "text/event-stream" {
			q, err := strconv.ParseFloat(params["q"], 64)
			return params["q"] == "" || (err == nil && q > 0)
		}
	}
	return false
}

// humaContext lets heldAnswer embed a huma.Context (whose Context method
// would clash with the field's name).
type humaContext huma.Context

// heldAnswer is a huma.Context whose status and body are kept instead of
// sent; headers go to the real answer.
type heldAnswer struct {
	humaContext
	status int
	body   bytes.Buffer
}

func (h *heldAnswer) SetStatus(code int)    { h.status = code }
func (h *heldAnswer) Status() int           { return h.status }
func (h *heldAnswer) BodyWriter() io.Writer { return &h.body }

// send sends what was held.
func (h *heldAnswer) send(to huma.Context) {
	if h.status != 0 {
		to.SetStatus(h.status)
	}
	_, _ = to.BodyWriter().Write(h.body.Bytes())
}
