// Package pricing owns what an LLM call costs: the list prices of
// well-known OpenAI and Anthropic models built into the binary, a
// provider's own prices over them, and the cost of one call's tokens in
// micro-USD (DESIGN §4 "Usage, cost and budgets"). A model without a price
// has no cost (nil), never a cost of 0: a report must not pass an unknown
// spend off as free.
package pricing

import (
	"math"
	"strings"
)

// Price is a model's price in USD per million tokens. CacheRead and
// CacheWrite are nil when the model has no price of their own for them:
// those tokens then cost the input price.
type Price struct {
	Input      float64  `json:"input"`
	Output     float64  `json:"output"`
	CacheRead  *float64 `json:"cache_read,omitempty"`
	CacheWrite *float64 `json:"cache_write,omitempty"`
}

// Table is prices by model name.
type Table map[string]Price

// Tokens are one call's tokens, input including the cached ones (read and
// written), as llm.Usage counts them.
type Tokens struct {
	Input, Output, CacheRead, CacheWrite int64
}

// Cost is what tokens cost at p, in micro-USD (a price per million tokens
// is a price in micro-USD per token): the input that was not cached at the
// input price, cache reads and writes at theirs, output at the output
// price, rounded to the nearest micro-USD.
func (p Price) Cost(t Tokens) int64 {
	read, write := p.Input, p.Input
	if p.CacheRead != nil {
		read = *p.CacheRead
	}
	if p.CacheWrite != nil {
		write = *p.CacheWrite
	}
	uncached := max(t.Input-t.CacheRead-t.CacheWrite, 0)
	return int64(math.Round(float64(uncached)*p.Input + float64(t.CacheRead)*read +
		float64(t.CacheWrite)*write + float64(t.Output)*p.Output))
}

// Lookup finds model's price in t: its exact name, else the longest name
// in t that model is a snapshot of — the name, "-" and a date or "latest"
// (gpt-4o-2024-08-06, claude-sonnet-4-5-20250929, gpt-4-0613 cost what
// their model does). Any other extension is another model with prices of
// its own (o3-deep-research, claude-opus-4-6): no price rather than its
// prefix's.
func (t Table) Lookup(model string) (Price, bool) {
	if p, ok := t[model]; ok {
		return p, true
	}
	best, found := "", false
	for name := range t {
		if len(name) > len(best) && strings.HasPrefix(model, name) && model[len(name)] == '-' && snapshot(model[len(name)+1:]) {
			best, found = name, true
		}
	}
	if !found {
		return Price{}, false
	}
	return t[best], true
}

// snapshot tells whether s names a model's snapshot: "latest" or a date
// as the vendors write them (YYYY-MM-DD, YYYYMMDD, MMDD).
func snapshot(s string) bool {
	if s == "latest" {
		return true
	}
	switch len(s) {
	case 4, 8:
		return digits(s)
	case 10:
		return digits(s[:4]) && s[4] == '-' && digits(s[5:7]) && s[7] == '-' && digits(s[8:])
	}
	return false
}

func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Echo is the provider type whose answers cost nothing to anyone and so
// have no default price: only prices its provider states.
const Echo = "echo"

// CostOf is the cost of a call of model with tokens on a provider of type
// providerType with its own prices own (nil for none): own's price of the
// model if it has one, else the default's (never for echo), else nil.
func CostOf(providerType string, own Table, model string, t Tokens) *int64 {
	p, ok := own.Lookup(model)
	if !ok && providerType != Echo {
		p, ok = Defaults.Lookup(model)
	}
	if !ok {
		return nil
	}
	c := p.Cost(t)
	return &c
}
