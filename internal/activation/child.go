package activation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/store"
)

// MaxChildDepth bounds how deep agents calling agents as tools may nest:
// two agents that call each other would otherwise go on until the
// account's quota.
const MaxChildDepth = 5

// RunChild runs agent as a tool of parent: an activation of the parent's
// user with context.parent_activation_id, created under the call's
// idempotency key (so every try of the call finds the same child, at most
// one), and waited for. Its output_data is the result; its failure is the
// call's error. When ctx ends (the parent is cancelled or times out), the
// child is cancelled too.
func (s *Service) RunChild(ctx context.Context, parent *executor.Run, agent *store.Agent, key string, input json.RawMessage) (json.RawMessage, error) {
	var pctx struct {
		Depth int `json:"agent_depth"`
	}
	_ = json.Unmarshal(parent.Context, &pctx)
	if pctx.Depth+1 > MaxChildDepth {
		return nil, fmt.Errorf("Agents may call agents %d deep at most", MaxChildDepth)
	}
	// The child's calls count to the key the parent was made with.
	caller := &auth.Caller{UserID: parent.UserID, Kind: auth.KindSession, AppID: parent.AppID, KeyID: parent.APIKeyID}
	a, _, err := s.Create(ctx, caller, Request{AgentID: agent.ID, AppID: parent.AppID, InputData: input,
		Context:        map[string]any{"parent_activation_id": parent.ID, "agent_depth": pctx.Depth + 1},
		IdempotencyKey: key})
	if err != nil {
		return nil, err
	}
	for !Ended(a) {
		if a, err = s.wait(ctx, a, MaxWait, false); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			// The parent's end is the child's: cancel it, whatever ctx is.
			stop := context.WithoutCancel(ctx)
			if cur, err := s.Store.ActivationGet(stop, a.ID); err == nil && !Ended(cur) {
				_, _ = s.Cancel(stop, cur)
			}
			return nil, ctx.Err()
		}
	}
	if a.Status == store.StatusFailed {
		msg := "the agent failed"
		if a.Error != nil {
			msg = *a.Error
		}
		return nil, errors.New(msg)
	}
	return a.OutputData, nil
}
