package pricing_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/pricing"
)

func TestLookupExactThenLongestDatedPrefix(t *testing.T) {
	for model, want := range map[string]string{
		"gpt-4o":                     "gpt-4o",
		"gpt-4o-2024-08-06":          "gpt-4o",
		"gpt-4o-mini-2024-07-18":     "gpt-4o-mini",
		"claude-sonnet-4-5-20250929": "claude-sonnet-4-5",
		"claude-sonnet-4-20250514":   "claude-sonnet-4",
		"claude-opus-4-5-20251101":   "claude-opus-4-5",
		"o3-mini-2025-01-31":         "o3-mini",
		"gpt-4-0613":                 "gpt-4",
		"claude-3-5-sonnet-latest":   "claude-3-5-sonnet",
	} {
		got, ok := pricing.Defaults.Lookup(model)
		require.True(t, ok, model)
		require.Equal(t, pricing.Defaults[want], got, model)
	}
	// A name that extends a model's with anything but a snapshot's date is
	// another model, with prices of its own: not priced as its prefix.
	for _, model := range []string{"echo", "gpt-4ox", "llama3", "o", "claude", "", "openai/gpt-4o",
		"o3-deep-research", "o4-mini-deep-research", "gpt-4o-mini-realtime-preview", "claude-opus-4-9"} {
		_, ok := pricing.Defaults.Lookup(model)
		require.False(t, ok, model)
	}
}

func TestCost(t *testing.T) {
	// gpt-4o: $2.50 in, $1.25 cached, $10 out per million: 1000 input of
	// which 400 cached, 200 output.
	c := pricing.CostOf("openai", nil, "gpt-4o-2024-08-06", pricing.Tokens{Input: 1000, CacheRead: 400, Output: 200})
	require.NotNil(t, c)
	require.Equal(t, int64(600*2.5+400*1.25+200*10), *c)

	// Anthropic's cache writes at their price: $3 in, $0.30 read, $3.75 write, $15 out.
	c = pricing.CostOf("anthropic", nil, "claude-sonnet-4-5", pricing.Tokens{Input: 1300, CacheRead: 200, CacheWrite: 100, Output: 10})
	require.Equal(t, int64(1000*3+200*0.3+100*3.75+10*15), *c)

	// Unknown model: no cost, not 0.
	require.Nil(t, pricing.CostOf("openai", nil, "my-finetune", pricing.Tokens{Input: 10}))
	// Echo: unpriced whatever the model, unless its provider prices it.
	require.Nil(t, pricing.CostOf("echo", nil, "gpt-4o", pricing.Tokens{Input: 10}))
	own := pricing.Table{"echo": {Input: 1, Output: 2}}
	require.Equal(t, int64(10*1+5*2), *pricing.CostOf("echo", own, "echo", pricing.Tokens{Input: 10, Output: 5}))

	// A provider's price wins over the default; cache reads without a
	// price of their own cost the input price.
	own = pricing.Table{"gpt-4o": {Input: 1, Output: 1}}
	require.Equal(t, int64(100+50), *pricing.CostOf("openai", own, "gpt-4o", pricing.Tokens{Input: 100, CacheRead: 60, Output: 50}))
	// Rounded to the micro-USD.
	require.Equal(t, int64(1), *pricing.CostOf("openai", nil, "gpt-5-nano", pricing.Tokens{Input: 10})) // 0.5
}

// A newer model whose name extends an older one's must not take the older
// one's price through the dated-snapshot prefix: Claude Opus 4.6 is not
// Claude Opus 4 ($15/$75) but $5/$25, Opus 5.5 not Opus 5. Claude Haiku 5.5,
// priced by prompt length, has no default price.
func TestNewerModelsNotPricedAsTheirPrefix(t *testing.T) {
	for model, input := range map[string]float64{
		"claude-opus-4-6": 5, "claude-opus-4-7": 5, "claude-opus-4-8-20260501": 5,
		"claude-opus-5-5": 4, "claude-sonnet-5-5": 2, "claude-fable-5-2": 8,
		"gpt-5.6-luna": 0.20, "gpt-5.4-nano-2026-03-17": 0.20, "gpt-5.1-codex-mini": 0.25,
	} {
		got, ok := pricing.Defaults.Lookup(model)
		require.True(t, ok, model)
		require.Equal(t, input, got.Input, model)
	}
	_, ok := pricing.Defaults.Lookup("claude-haiku-5-5")
	require.False(t, ok)
}
