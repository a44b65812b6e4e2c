package api

import (
	"context"
	"time"

	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/pricing"
)

// LLMProvider is a provider as the API shows it: never its API key.
type LLMProvider struct {
	ID           string                `json:"id" doc:"A UUID; system providers' ids are their names: echo, openai, anthropic"`
	Name         string                `json:"name"`
	ProviderType string                `json:"provider_type" enum:"openai,anthropic,openai_compatible,echo"`
	BaseURL      string                `json:"base_url" doc:"The server's base URL; empty: the provider type's public API"`
	HasAPIKey    bool                  `json:"has_api_key" doc:"Whether an API key is stored (the key itself is never returned)"`
	Models       []string              `json:"models"`
	DefaultModel string                `json:"default_model"`
	IsDefault    bool                  `json:"is_default" doc:"Used by agents and activations that name no provider_id"`
	IsSystem     bool                  `json:"is_system" doc:"Configured by the operator; cannot be changed or deleted"`
	Prices       map[string]modelPrice `json:"prices" doc:"The provider's own prices by model, USD per million tokens, over the built-in list prices of well-known models"`
	CreatedAt    time.Time             `json:"created_at"`
	UpdatedAt    time.Time             `json:"updated_at"`
}

func llmProviderOut(p *llm.Provider) LLMProvider {
	models := p.Models
	if models == nil {
		models = []string{}
	}
	return LLMProvider{ID: p.ID, Name: p.Name, ProviderType: p.Type, BaseURL: p.BaseURL, HasAPIKey: p.HasAPIKey,
		Models: models, DefaultModel: p.DefaultModel, IsDefault: p.IsDefault, IsSystem: p.IsSystem,
		Prices: pricesOut(p.Prices), CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// modelPrice is a model's price in USD per million tokens.
type modelPrice struct {
	Input      float64  `json:"input" minimum:"0"`
	Output     float64  `json:"output" minimum:"0"`
	CacheRead  *float64 `json:"cache_read,omitempty" required:"false" minimum:"0" doc:"Cached input; default: the input price"`
	CacheWrite *float64 `json:"cache_write,omitempty" required:"false" minimum:"0" doc:"Input written to the cache; default: the input price"`
}

func pricesOut(t pricing.Table) map[string]modelPrice {
	out := make(map[string]modelPrice, len(t))
	for m, p := range t {
		out[m] = modelPrice(p)
	}
	return out
}

func pricesIn(in *map[string]modelPrice) *pricing.Table {
	if in == nil {
		return nil
	}
	t := make(pricing.Table, len(*in))
	for m, p := range *in {
		t[m] = pricing.Price(p)
	}
	return &t
}

// llmProviderBody is the create and patch body: absent fields are not
// given (a patch keeps them).
type llmProviderBody struct {
	Name         *string                `json:"name,omitempty" required:"false" doc:"1 to 100 characters, unique among your providers"`
	ProviderType *string                `json:"provider_type,omitempty" required:"false" enum:"openai,anthropic,openai_compatible,echo" doc:"Required on create"`
	BaseURL      *string                `json:"base_url,omitempty" required:"false" doc:"Absolute http(s) URL; required for openai_compatible (e.g. http://localhost:11434/v1 for Ollama)"`
	APIKey       *string                `json:"api_key,omitempty" required:"false" writeOnly:"true" doc:"Write-only: stored encrypted, never returned; an empty string removes it"`
	Models       *[]string              `json:"models,omitempty" required:"false"`
	DefaultModel *string                `json:"default_model,omitempty" required:"false" doc:"One of models when models is not empty; defaults to the first"`
	IsDefault    *bool                  `json:"is_default,omitempty" required:"false" doc:"Make this your default provider (unmarks the others)"`
	Prices       *map[string]modelPrice `json:"prices,omitempty" required:"false" doc:"Your prices by model, USD per million tokens ({model: {input, output, cache_read}}), over the built-in list prices; they replace the provider's earlier ones. A model's name matches exactly, else as the longest name its own starts with followed by -"`
}

func (b *llmProviderBody) input() llm.Input {
	return llm.Input{Name: b.Name, Type: b.ProviderType, BaseURL: b.BaseURL, APIKey: b.APIKey,
		Models: b.Models, DefaultModel: b.DefaultModel, IsDefault: b.IsDefault, Prices: pricesIn(b.Prices)}
}

type llmProviderOutput struct{ Body LLMProvider }

type llmProviderListOutput struct {
	Body struct {
		Providers []LLMProvider `json:"providers" doc:"System providers first, then yours, oldest first"`
		Page
	}
}

func listOut(ps []llm.Provider, total int, p PageParams) *llmProviderListOutput {
	out := &llmProviderListOutput{}
	out.Body.Providers, out.Body.Page = mapAll(ps, llmProviderOut), p.page(total)
	return out
}

func (a *API) listLLMProviders(ctx context.Context, in *struct{ PageParams }) (*llmProviderListOutput, error) {
	ps, total, err := a.LLM.List(ctx, mustCaller(ctx), in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	return listOut(ps, total, in.PageParams), nil
}

type llmProviderIDInput struct {
	ID string `path:"id" doc:"The provider's id"`
}

func (a *API) getLLMProvider(ctx context.Context, in *llmProviderIDInput) (*llmProviderOutput, error) {
	p, err := a.LLM.Get(ctx, mustCaller(ctx), in.ID)
	if err != nil {
		return nil, err
	}
	return &llmProviderOutput{llmProviderOut(p)}, nil
}

func (a *API) createLLMProvider(ctx context.Context, in *struct{ Body NewLLMProviderBody }) (*llmProviderOutput, error) {
	p, err := a.LLM.Create(ctx, mustCaller(ctx), (*llmProviderBody)(&in.Body).input())
	if err != nil {
		return nil, err
	}
	return &llmProviderOutput{llmProviderOut(p)}, nil
}

type updateLLMProviderInput struct {
	ID   string `path:"id" doc:"The provider's id"`
	Body llmProviderBody
}

func (a *API) updateLLMProvider(ctx context.Context, in *updateLLMProviderInput) (*llmProviderOutput, error) {
	p, err := a.LLM.Update(ctx, mustCaller(ctx), in.ID, in.Body.input())
	if err != nil {
		return nil, err
	}
	return &llmProviderOutput{llmProviderOut(p)}, nil
}

func (a *API) deleteLLMProvider(ctx context.Context, in *llmProviderIDInput) (*struct{}, error) {
	return nil, a.LLM.Delete(ctx, mustCaller(ctx), in.ID)
}

type testLLMProviderOutput struct {
	Body struct {
		OK        bool   `json:"ok"`
		Model     string `json:"model" doc:"The model that answered (the provider's default model)"`
		LatencyMS int64  `json:"latency_ms"`
		Error     string `json:"error" doc:"Why the test failed; empty when ok"`
	}
}

func (a *API) testLLMProvider(ctx context.Context, in *llmProviderIDInput) (*testLLMProviderOutput, error) {
	r, err := a.LLM.Test(ctx, mustCaller(ctx), in.ID)
	if err != nil {
		return nil, err
	}
	out := &testLLMProviderOutput{}
	out.Body.OK, out.Body.Model, out.Body.LatencyMS, out.Body.Error = r.OK, r.Model, r.LatencyMS, r.Error
	return out, nil
}

type appModelProvidersInput struct {
	AppID string `path:"app_id" doc:"The app's id"`
	PageParams
}

func (a *API) appModelProviders(ctx context.Context, in *appModelProvidersInput) (*llmProviderListOutput, error) {
	ps, total, err := a.LLM.ListForApp(ctx, mustCaller(ctx), in.AppID, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	return listOut(ps, total, in.PageParams), nil
}
