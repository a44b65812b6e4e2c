package pricing

func usd(v float64) *float64 { return &v }

// Defaults are list prices as published by the vendors on 2025-11-01
// (https://openai.com/api/pricing, https://platform.openai.com/docs/pricing
// standard tier; https://www.anthropic.com/pricing and
// https://docs.anthropic.com/en/docs/about-claude/pricing, cache writes at
// the 5-minute rate), in USD per million tokens. They go stale: a
// provider's own prices override them per model
// (llm-providers' prices).
var Defaults = Table{
	// OpenAI. Cached input where OpenAI lists it; none is written.
	"gpt-5":             {Input: 1.25, CacheRead: usd(0.125), Output: 10},
	"gpt-5.1":           {Input: 1.25, CacheRead: usd(0.125), Output: 10},
	"gpt-5-chat-latest": {Input: 1.25, CacheRead: usd(0.125), Output: 10},
	"gpt-5-mini":        {Input: 0.25, CacheRead: usd(0.025), Output: 2},
	"gpt-5-nano":        {Input: 0.05, CacheRead: usd(0.005), Output: 0.40},
	"gpt-5-pro":         {Input: 15, Output: 120},
	"gpt-4.1":           {Input: 2, CacheRead: usd(0.50), Output: 8},
	"gpt-4.1-mini":      {Input: 0.40, CacheRead: usd(0.10), Output: 1.60},
	"gpt-4.1-nano":      {Input: 0.10, CacheRead: usd(0.025), Output: 0.40},
	"gpt-4o":            {Input: 2.50, CacheRead: usd(1.25), Output: 10},
	"gpt-4o-mini":       {Input: 0.15, CacheRead: usd(0.075), Output: 0.60},
	"gpt-4-turbo":       {Input: 10, Output: 30},
	"gpt-4":             {Input: 30, Output: 60},
	"gpt-3.5-turbo":     {Input: 0.50, Output: 1.50},
	"o1":                {Input: 15, CacheRead: usd(7.50), Output: 60},
	"o1-mini":           {Input: 1.10, CacheRead: usd(0.55), Output: 4.40},
	"o3":                {Input: 2, CacheRead: usd(0.50), Output: 8},
	"o3-pro":            {Input: 20, Output: 80},
	"o3-mini":           {Input: 1.10, CacheRead: usd(0.55), Output: 4.40},
	"o4-mini":           {Input: 1.10, CacheRead: usd(0.275), Output: 4.40},

	// Anthropic: cache reads at a tenth of the input price, cache writes
	// (5 minutes) at 1.25 times it.
	"claude-opus-4-5":   {Input: 5, CacheRead: usd(0.50), CacheWrite: usd(6.25), Output: 25},
	"claude-opus-4-1":   {Input: 15, CacheRead: usd(1.50), CacheWrite: usd(18.75), Output: 75},
	"claude-opus-4":     {Input: 15, CacheRead: usd(1.50), CacheWrite: usd(18.75), Output: 75},
	"claude-sonnet-4-5": {Input: 3, CacheRead: usd(0.30), CacheWrite: usd(3.75), Output: 15},
	"claude-sonnet-4":   {Input: 3, CacheRead: usd(0.30), CacheWrite: usd(3.75), Output: 15},
	"claude-haiku-4-5":  {Input: 1, CacheRead: usd(0.10), CacheWrite: usd(1.25), Output: 5},
	"claude-3-7-sonnet": {Input: 3, CacheRead: usd(0.30), CacheWrite: usd(3.75), Output: 15},
	"claude-3-5-sonnet": {Input: 3, CacheRead: usd(0.30), CacheWrite: usd(3.75), Output: 15},
	"claude-3-5-haiku":  {Input: 0.80, CacheRead: usd(0.08), CacheWrite: usd(1), Output: 4},
	"claude-3-opus":     {Input: 15, CacheRead: usd(1.50), CacheWrite: usd(18.75), Output: 75},
	"claude-3-haiku":    {Input: 0.25, CacheRead: usd(0.03), CacheWrite: usd(0.30), Output: 1.25},
}
