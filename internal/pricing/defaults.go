package pricing

func usd(v float64) *float64 { return &v }

// Defaults are the vendors' standard-tier list prices in USD per million
// tokens, checked on 2026-11-27 against stored copies of public sources
// (no live page could be read; a copy's date is given where it is known):
//
//   - OpenAI: the model pages under developers.openai.com/api/docs/models
//     (gpt-5-nano, gpt-5.6-sol, gpt-5.6-luna, gpt-6-luna, gpt-6.2-sol and the
//     models index, copies of 2026-08 to 2026-11), and for the models up to
//     GPT-5.5, whose own pages were not in the store, pydantic/genai-prices
//     prices/providers/openai.yml at commit 47df840a5 (2026-08-21; each price
//     there carries the date its maintainers checked it against OpenAI's
//     pricing page). Where no OpenAI page was found the price comes from
//     trackers that quote OpenAI's page (noted at the row).
//   - Anthropic: platform.claude.com/docs/en/about-claude/pricing (a copy
//     from between Claude Fable 5.1's and Opus 5.5's releases, 2026-09) and
//     the model overview pages under platform.claude.com/docs/*/models
//     (copies of 2026-07 to 2026-11), with pydantic/genai-prices
//     prices/providers/anthropic.yml (same commit, prices checked
//     2026-07-29) for the cache prices of the Claude 3 and 4.0–4.6 models.
//
// Every price held here before this check (then dated 2025-11-01, written
// from memory) matched these sources.
//
// Anthropic's CacheWrite is the 5-minute cache write; a 1-hour write
// costs 1.6 times that, which a Price cannot tell apart. OpenAI's
// CacheWrite (30-minute cache writes, from GPT-5.6 on) is stated where
// OpenAI publishes it. Prices that depend on a request's length are not
// held: above 272K input tokens OpenAI's GPT-5.4 and later models, and
// above 200K Claude Sonnet 4 and 4.5 on the 1M-context beta, bill the whole
// request at higher rates, which these prices understate; Claude Haiku 5.5
// is priced in two bands split at a 100K-token prompt ($0.10/$0.50 and
// $0.50/$2.50), so it has no default price at all rather than one that is
// wrong by five times for long prompts. Claude Mythos 5 and 5.1 (by
// invitation only) are left out: their model IDs were not found.
//
// They go stale: a provider's own prices override them per model
// (llm-providers' prices).
var Defaults = Table{
	// OpenAI. Cached input where OpenAI lists it.
	"gpt-6.2-astra": {Input: 8, CacheRead: usd(0.40), Output: 40}, // cached input: LiteLLM's launch notes (60% below GPT-6 Astra's $1); no cache-write price found
	"gpt-6.2-sol":   {Input: 2, CacheRead: usd(0.10), CacheWrite: usd(2.50), Output: 10},
	"gpt-6.1-sol":   {Input: 2, CacheRead: usd(0.10), Output: 10},                        // trackers quoting OpenAI's page; no cache-write price found
	"gpt-6.1-terra": {Input: 1, CacheRead: usd(0.05), CacheWrite: usd(1.25), Output: 5},  // input/output: OpenAI's models index; cache: LiteLLM's and trackers' launch notes
	"gpt-6-astra":   {Input: 10, CacheRead: usd(1), CacheWrite: usd(12.50), Output: 50},  // OpenAI's models index; cache: trackers quoting OpenAI's page
	"gpt-6-sol":     {Input: 2, CacheRead: usd(0.20), CacheWrite: usd(2.50), Output: 10}, // trackers quoting OpenAI's page of 2026-09-22
	"gpt-6-luna":    {Input: 0.10, CacheRead: usd(0.01), CacheWrite: usd(0.125), Output: 0.50},
	// GPT-5.6 Sol's $4/$20 is a promotion OpenAI said runs "at least until
	// 2026-11-21" (before: $5/$30); whether it still runs was not found.
	"gpt-5.6-sol":        {Input: 4, CacheRead: usd(0.40), CacheWrite: usd(5), Output: 20},
	"gpt-5.6":            {Input: 4, CacheRead: usd(0.40), CacheWrite: usd(5), Output: 20}, // alias of gpt-5.6-sol
	"gpt-5.6-terra":      {Input: 2, CacheRead: usd(0.20), CacheWrite: usd(2.50), Output: 12},
	"gpt-5.6-luna":       {Input: 0.20, CacheRead: usd(0.02), CacheWrite: usd(0.25), Output: 1.20},
	"gpt-5.5":            {Input: 5, CacheRead: usd(0.50), Output: 30},
	"gpt-5.5-pro":        {Input: 30, Output: 180},
	"gpt-5.4":            {Input: 2.50, CacheRead: usd(0.25), Output: 15},
	"gpt-5.4-pro":        {Input: 30, Output: 180},
	"gpt-5.4-mini":       {Input: 0.75, CacheRead: usd(0.075), Output: 4.50},
	"gpt-5.4-nano":       {Input: 0.20, CacheRead: usd(0.02), Output: 1.25},
	"gpt-5.2":            {Input: 1.75, CacheRead: usd(0.175), Output: 14},
	"gpt-5.2-pro":        {Input: 21, Output: 168},
	"gpt-5.1":            {Input: 1.25, CacheRead: usd(0.125), Output: 10},
	"gpt-5.1-codex-mini": {Input: 0.25, CacheRead: usd(0.025), Output: 2},
	"gpt-5":              {Input: 1.25, CacheRead: usd(0.125), Output: 10},
	"gpt-5-chat-latest":  {Input: 1.25, CacheRead: usd(0.125), Output: 10},
	"gpt-5-mini":         {Input: 0.25, CacheRead: usd(0.025), Output: 2},
	"gpt-5-nano":         {Input: 0.05, CacheRead: usd(0.005), Output: 0.40},
	"gpt-5-pro":          {Input: 15, Output: 120},
	"gpt-4.1":            {Input: 2, CacheRead: usd(0.50), Output: 8},
	"gpt-4.1-mini":       {Input: 0.40, CacheRead: usd(0.10), Output: 1.60},
	"gpt-4.1-nano":       {Input: 0.10, CacheRead: usd(0.025), Output: 0.40},
	"gpt-4o":             {Input: 2.50, CacheRead: usd(1.25), Output: 10},
	"gpt-4o-mini":        {Input: 0.15, CacheRead: usd(0.075), Output: 0.60},
	"gpt-4-turbo":        {Input: 10, Output: 30},
	"gpt-4":              {Input: 30, Output: 60},
	"gpt-3.5-turbo":      {Input: 0.50, Output: 1.50},
	"o1":                 {Input: 15, CacheRead: usd(7.50), Output: 60},
	"o1-mini":            {Input: 1.10, CacheRead: usd(0.55), Output: 4.40},
	"o3":                 {Input: 2, CacheRead: usd(0.50), Output: 8},
	"o3-pro":             {Input: 20, Output: 80},
	"o3-mini":            {Input: 1.10, CacheRead: usd(0.55), Output: 4.40},
	"o4-mini":            {Input: 1.10, CacheRead: usd(0.275), Output: 4.40},

	// Anthropic: cache reads a tenth of the input price and 5-minute cache
	// writes 1.25 times it, except where a row says otherwise.
	"claude-fable-5-2": {Input: 8, CacheRead: usd(0.20), CacheWrite: usd(10), Output: 40},     // input/output: Anthropic's model pages; cache: resellers and trackers quoting Anthropic's page (2026-11-10)
	"claude-fable-5-1": {Input: 10, CacheRead: usd(0.25), CacheWrite: usd(12.50), Output: 50}, // cache reads at 0.025 times input
	"claude-fable-5":   {Input: 10, CacheRead: usd(1), CacheWrite: usd(12.50), Output: 50},
	"claude-opus-5-5":  {Input: 4, CacheRead: usd(0.20), CacheWrite: usd(5), Output: 20}, // cache reads at 0.05 times input
	"claude-opus-5":    {Input: 5, CacheRead: usd(0.50), CacheWrite: usd(6.25), Output: 25},
	"claude-opus-4-8":  {Input: 5, CacheRead: usd(0.50), CacheWrite: usd(6.25), Output: 25},
	"claude-opus-4-7":  {Input: 5, CacheRead: usd(0.50), CacheWrite: usd(6.25), Output: 25},
	"claude-opus-4-6":  {Input: 5, CacheRead: usd(0.50), CacheWrite: usd(6.25), Output: 25},
	"claude-opus-4-5":  {Input: 5, CacheRead: usd(0.50), CacheWrite: usd(6.25), Output: 25},
	"claude-opus-4-1":  {Input: 15, CacheRead: usd(1.50), CacheWrite: usd(18.75), Output: 75},
	"claude-opus-4":    {Input: 15, CacheRead: usd(1.50), CacheWrite: usd(18.75), Output: 75},
	// Sonnet 5.5's cache reads: Anthropic's model page copy says $0.20; two
	// trackers checking the live pricing page report a cut to $0.10 (0.05
	// times input) on 2026-10-07, which is the newer word.
	"claude-sonnet-5-5": {Input: 2, CacheRead: usd(0.10), CacheWrite: usd(2.50), Output: 10},
	"claude-sonnet-5":   {Input: 2, CacheRead: usd(0.20), CacheWrite: usd(2.50), Output: 10},
	"claude-sonnet-4-6": {Input: 3, CacheRead: usd(0.30), CacheWrite: usd(3.75), Output: 15},
	"claude-sonnet-4-5": {Input: 3, CacheRead: usd(0.30), CacheWrite: usd(3.75), Output: 15},
	"claude-sonnet-4":   {Input: 3, CacheRead: usd(0.30), CacheWrite: usd(3.75), Output: 15},
	"claude-haiku-4-5":  {Input: 1, CacheRead: usd(0.10), CacheWrite: usd(1.25), Output: 5},
	"claude-3-7-sonnet": {Input: 3, CacheRead: usd(0.30), CacheWrite: usd(3.75), Output: 15},
	"claude-3-5-sonnet": {Input: 3, CacheRead: usd(0.30), CacheWrite: usd(3.75), Output: 15},
	"claude-3-5-haiku":  {Input: 0.80, CacheRead: usd(0.08), CacheWrite: usd(1), Output: 4},
	"claude-3-opus":     {Input: 15, CacheRead: usd(1.50), CacheWrite: usd(18.75), Output: 75},
	"claude-3-haiku":    {Input: 0.25, CacheRead: usd(0.03), CacheWrite: usd(0.30), Output: 1.25},
}
