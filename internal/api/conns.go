package api

import (
	"context"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/agentplatform/agentplatform/internal/auth"
)

// holdStream takes one of the caller's long-lived connection places for a
// streamed answer (SSE) whose context, ctx's values kept, must end with the
// credential (see auth.Hold). When it cannot, it has answered the error
// itself (429 at the cap) and reports false.
func (a *API) holdStream(ctx context.Context, hctx huma.Context, c *auth.Caller) (*auth.Hold, bool) {
	h, err := a.Auth.Hold(ctx, c)
	if err != nil {
		r, w := humago.Unwrap(hctx)
		writeError(w, r, err)
		return nil, false
	}
	return h, true
}
