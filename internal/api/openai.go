package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/httperr"
	"github.com/agentplatform/agentplatform/internal/openaicompat"
	"github.com/agentplatform/agentplatform/internal/store"
)

// The OpenAI-compatible endpoint (internal/openaicompat): plain handlers,
// not huma operations, because OpenAI's SDKs expect OpenAI's error shape,
// not the API's. The front door (auth, rate, body limits) applies as
// everywhere; refusals under openaicompat.Prefix take OpenAI's shape there
// too.

// openaiRoutes mounts the endpoint. It is not in the OpenAPI document,
// whose every error is the API's ErrorBody: OpenAI's own reference
// describes it.
func (a *API) openaiRoutes() {
	a.mux.HandleFunc("GET "+openaicompat.Prefix+"models", a.openaiModels)
	a.mux.HandleFunc("POST "+openaicompat.Prefix+"chat/completions", a.openaiChat)
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
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			err = apperr.New(apperr.PayloadTooLarge, httperr.DetailTooLarge)
		}
		fail(err)
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
	act, _, err := a.Activations.Create(ctx, c, req.Activation(agent.ID))
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
