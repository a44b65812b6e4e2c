package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/store"
)

// TokenEvent is one fragment of the LLM's answer as it arrives.
type TokenEvent struct {
	Delta string `json:"delta"`
}

// streamBuffer bounds the token fragments a slow SSE reader may lag behind.
const streamBuffer = 1024

// streamRoute registers GET /api/v1/activations/{activation_id}/stream:
// a huma operation (auth, 404s and docs as everywhere) whose answer is a
// Server-Sent Events stream.
func (a *API) streamRoute() {
	op := huma.Operation{
		OperationID: "stream-activation", Method: http.MethodGet, Path: "/api/v1/activations/{activation_id}/stream",
		Summary: "Stream an activation: its tokens as they arrive, then the final record", Tags: []string{"activations"},
		Description: "Server-Sent Events: `token` events `{delta}` while the LLM answers, then one `activation` event " +
			"with the full record (sent at once when the activation has already ended).",
		Responses: map[string]*huma.Response{"200": {Description: "text/event-stream", Content: map[string]*huma.MediaType{
			"text/event-stream": {Schema: &huma.Schema{Type: huma.TypeString,
				Description: "event: token, data: {\"delta\": \"…\"} … then event: activation, data: the activation"}},
		}}},
	}
	register(a, op, auth.AppUse, a.streamActivation)
}

func (a *API) streamActivation(ctx context.Context, in *activationIDInput) (*huma.StreamResponse, error) {
	c := mustCaller(ctx)
	if _, err := a.Activations.Get(ctx, c, in.ActivationID); err != nil {
		return nil, err
	}
	// Subscribe before reading the state again, so the end cannot slip by
	// between the two.
	sub := a.Events.Subscribe(c.UserID, events.Filter{ActivationID: in.ActivationID, Deltas: true}, streamBuffer)
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		defer sub.Close()
		defer a.metrics.ConnectionOpened("sse")()
		hctx.SetHeader("Content-Type", "text/event-stream")
		hctx.SetHeader("Cache-Control", "no-cache")
		_, w := humago.Unwrap(hctx)
		rc := http.NewResponseController(w)
		send := func(event string, data any) bool {
			b, err := json.Marshal(data)
			if err != nil {
				return false
			}
			_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
				return false
			}
			return rc.Flush() == nil
		}
		final := func() {
			if act, err := a.Activations.Get(ctx, c, in.ActivationID); err == nil {
				send("activation", activationOut(act))
			}
		}
		if act, err := a.Activations.Get(ctx, c, in.ActivationID); err != nil || ended(act) {
			final()
			return
		}
		keepAlive := time.NewTicker(15 * time.Second)
		defer keepAlive.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-keepAlive.C:
				// A comment line keeps proxies from closing an idle stream.
				if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
					return
				}
			case ev, ok := <-sub.C:
				if !ok {
					// Dropped (too slow) or the bus stopped: end with the
					// record as it stands.
					final()
					return
				}
				switch ev.Type {
				case events.Token:
					if !send("token", TokenEvent{Delta: ev.Delta}) {
						return
					}
				case events.ActivationCompleted, events.ActivationFailed:
					final()
					return
				}
			}
		}
	}}, nil
}

func ended(a *store.Activation) bool {
	return a.Status == store.StatusCompleted || a.Status == store.StatusFailed
}
