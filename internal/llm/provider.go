package llm

import (
	"fmt"
	"net/http"
)

// The provider types.
const (
	TypeEcho             = "echo"
	TypeOpenAI           = "openai"
	TypeOpenAICompatible = "openai_compatible"
	TypeAnthropic        = "anthropic"
)

// Types lists every provider type.
var Types = []string{TypeOpenAI, TypeAnthropic, TypeOpenAICompatible, TypeEcho}

// Config is what a client is built from.
type Config struct {
	ID string // the provider id, reported in Response.Provider
	// Name is the provider's name as its user knows it, shown in errors
	// (Error.Provider); "" falls back to ID.
	Name    string
	Type    string // one of Types
	BaseURL string // "" for the type's public API
	APIKey  string
	// HTTPClient overrides the shared client (tests, users' providers
	// through the egress guard, the system providers' with room for many
	// idle connections); it must not retry.
	HTTPClient *http.Client
}

// New builds the client of a provider.
func New(cfg Config) (Client, error) {
	switch cfg.Type {
	case TypeEcho:
		return Echo(cfg.ID), nil
	case TypeOpenAI, TypeOpenAICompatible:
		return newOpenAI(cfg), nil
	case TypeAnthropic:
		return newAnthropic(cfg), nil
	}
	return nil, fmt.Errorf("llm: unknown provider type %q", cfg.Type)
}

// CanCallTools says whether providers of providerType take tools: an agent
// with tools on one that cannot is refused when saved. Every type today
// can (OpenAI-compatible and Anthropic through their SDKs, echo by its
// "call <tool> <json>" convention); a type added later that cannot says so
// here.
func CanCallTools(providerType string) bool {
	switch providerType {
	case TypeEcho, TypeOpenAI, TypeOpenAICompatible, TypeAnthropic:
		return true
	}
	return false
}
