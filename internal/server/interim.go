package server

// Interim adapters for the activation core while the apps, llm and events
// packages are being merged; each is replaced by the real service on merge.

import (
	"context"
	"strings"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/llm"
)

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
