package server

// Interim adapters for the activation core while the apps, llm and events
// packages are being merged; each is replaced by the real service on merge.

import (
	"context"
	"errors"
	"strings"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/store"
)

type interimAgents struct {
	store *store.Store
	auth  *auth.Service
}

func (a interimAgents) VisibleAgent(ctx context.Context, c *auth.Caller, id string) (*store.Agent, error) {
	notFound := apperr.NotFoundf("Agent not found")
	ag, err := a.store.AgentGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !ag.IsSystem && ag.UserID != c.UserID) {
		return nil, notFound
	}
	return ag, err
}

func (a interimAgents) OwnedApp(ctx context.Context, c *auth.Caller, id string) (*store.App, error) {
	notFound := apperr.NotFoundf("App not found")
	app, err := a.store.AppGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	return app, a.auth.Reach(ctx, c, auth.Resource{Type: "app", ID: app.ID, OwnerID: app.UserID}, "app.read", notFound)
}

type echoClient struct{}

func (echoClient) Complete(_ context.Context, r llm.Request) (*llm.Response, error) {
	text := "echo: " + r.Messages[len(r.Messages)-1].Content
	if r.OnDelta != nil {
		r.OnDelta(text)
	}
	n := len(strings.Fields(text))
	return &llm.Response{Text: text, Model: "echo", Provider: "echo", FinishReason: "stop",
		Usage: llm.Usage{PromptTokens: n - 1, CompletionTokens: n, TotalTokens: 2*n - 1}}, nil
}

func interimResolve(_ context.Context, _, providerID string) (llm.Client, string, string, error) {
	if providerID != "" && providerID != "echo" {
		return nil, "", "", apperr.Invalid("provider_id", "Unknown LLM provider: "+providerID)
	}
	return echoClient{}, "echo", "echo", nil
}
