package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/metrics"
	"github.com/agentplatform/agentplatform/internal/pricing"
	"github.com/agentplatform/agentplatform/internal/secret"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/telemetry"
)

// The system providers' ids: their names.
const (
	SystemEcho      = "echo"
	SystemOpenAI    = "openai"
	SystemAnthropic = "anthropic"
)

// Default models of the system providers when the configuration names none;
// agents usually name their model anyway.
const (
	DefaultOpenAIModel    = "gpt-4o-mini"
	DefaultAnthropicModel = "claude-sonnet-4-5"
)

// Options configure the system providers (from config.Config).
type Options struct {
	OpenAIAPIKey  string
	OpenAIBaseURL string // "" for OpenAI itself
	OpenAIModel   string // "" for DefaultOpenAIModel
	// The openai system provider exists when OpenAIAPIKey or OpenAIBaseURL
	// is set: a local OpenAI-compatible server may need no key.

	AnthropicAPIKey  string
	AnthropicBaseURL string // "" for Anthropic itself (tests point it at llmtest)
	AnthropicModel   string // "" for DefaultAnthropicModel

	// Egress guards users' providers: their base_url is user-supplied, so
	// it is checked at create and every call goes through the guard. The
	// system providers' URLs come from the operator and are not guarded.
	// Nil is a guard that allows no private address.
	Egress *egress.Guard
	// Metrics counts every call, its latency and tokens; nil counts nothing.
	Metrics *metrics.Metrics
	// IdleConns is how many idle connections the system providers'
	// client keeps, per host and in all (0: Go's defaults, 2 per host):
	// the calls in flight at once (AP_MAX_INFLIGHT). Users' providers
	// keep Egress's IdleConns.
	IdleConns int
}

// Provider is a provider as its user sees it: a system one or their own.
// The API key itself never leaves the service.
type Provider struct {
	ID           string
	UserID       string // "" for system providers
	Name         string
	Type         string
	BaseURL      string
	HasAPIKey    bool
	Models       []string
	DefaultModel string
	IsDefault    bool
	IsSystem     bool
	// Prices are the provider's own, over pricing.Defaults; nil for none.
	Prices    pricing.Table
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Resolved is the provider an activation calls.
type Resolved struct {
	Client       Client
	ProviderID   string
	ProviderType string
	DefaultModel string
}

// system is a configured system provider with its client.
type system struct {
	Provider
	client Client
}

// cached is a built client of a user's provider, valid while the row's
// updated_at is unchanged.
type cached struct {
	resolved  Resolved
	userID    string
	updatedAt time.Time
}

// Service owns the providers: the system ones, users' own (stored with
// their API keys sealed), and which one a call resolves to.
type Service struct {
	store   *store.Store
	secrets *secret.Box
	auth    *auth.Service
	systems []system // echo first, then openai and anthropic when configured
	now     func() time.Time
	egress  *egress.Guard
	// userHTTP is the guarded client of every user provider: one
	// transport, so one connection pool, for all of them.
	userHTTP *http.Client
	metrics  *metrics.Metrics

	mu    sync.RWMutex
	cache map[string]cached
}

// NewService builds the service and the system providers' clients.
func NewService(st *store.Store, secrets *secret.Box, a *auth.Service, opts Options) (*Service, error) {
	s := &Service{store: st, secrets: secrets, auth: a, now: store.Now, cache: map[string]cached{}, egress: opts.Egress, metrics: opts.Metrics}
	if s.egress == nil {
		s.egress = egress.New(nil)
	}
	s.userHTTP = s.egress.Client(egress.Options{Field: "base_url"})
	var systemHTTP *http.Client // nil: the shared default client
	if opts.IdleConns > 0 {
		systemHTTP = &http.Client{Transport: transport(opts.IdleConns)}
	}
	started := store.Now()
	add := func(id, name, typ, baseURL, apiKey, model string) error {
		c, err := New(Config{ID: id, Name: name, Type: typ, BaseURL: baseURL, APIKey: apiKey, HTTPClient: systemHTTP})
		if err != nil {
			return err
		}
		s.systems = append(s.systems, system{client: s.meter(c, typ, nil), Provider: Provider{
			ID: id, Name: name, Type: typ, BaseURL: baseURL, HasAPIKey: apiKey != "", Models: []string{model},
			DefaultModel: model, IsSystem: true, CreatedAt: started, UpdatedAt: started}})
		return nil
	}
	if err := add(SystemEcho, "Echo", TypeEcho, "", "", "echo"); err != nil {
		return nil, err
	}
	if opts.OpenAIAPIKey != "" || opts.OpenAIBaseURL != "" {
		base := opts.OpenAIBaseURL
		if base == "" {
			base = OpenAIBaseURL
		}
		if err := add(SystemOpenAI, "OpenAI", TypeOpenAI, base, opts.OpenAIAPIKey, cmp(opts.OpenAIModel, DefaultOpenAIModel)); err != nil {
			return nil, err
		}
	}
	if opts.AnthropicAPIKey != "" {
		base := cmp(opts.AnthropicBaseURL, AnthropicBaseURL)
		if err := add(SystemAnthropic, "Anthropic", TypeAnthropic, base, opts.AnthropicAPIKey, cmp(opts.AnthropicModel, DefaultAnthropicModel)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func cmp(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func (s *Service) systemByID(id string) *system {
	for i := range s.systems {
		if s.systems[i].ID == id {
			return &s.systems[i]
		}
	}
	return nil
}

func (sys *system) resolved() *Resolved {
	return &Resolved{Client: sys.client, ProviderID: sys.ID, ProviderType: sys.Type, DefaultModel: sys.DefaultModel}
}

func unknownProvider(id string) error {
	return apperr.Invalid("provider_id", "Unknown LLM provider: "+id)
}

// Resolve returns the provider a call of userID uses. providerID "" is the
// user's default provider, else openai when configured, else echo. Anything
// that is not a system provider or one of the user's own is an unknown
// provider (400 naming provider_id).
//
// It runs on every activation: one primary-key read, and the built client
// (API key opened, SDK configured) is reused while the row is unchanged.
// Checking updated_at rather than trusting the cache alone keeps every node
// right after a change made on another node.
func (s *Service) Resolve(ctx context.Context, userID, providerID string) (*Resolved, error) {
	if providerID == "" {
		p, err := s.store.LLMProviderGetDefault(ctx, userID)
		switch {
		case err == nil:
			return s.resolveRow(p)
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
		if sys := s.systemByID(SystemOpenAI); sys != nil {
			return sys.resolved(), nil
		}
		return s.systemByID(SystemEcho).resolved(), nil
	}
	if sys := s.systemByID(providerID); sys != nil {
		return sys.resolved(), nil
	}
	p, err := s.userRow(ctx, providerID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && p.UserID != userID) {
		return nil, unknownProvider(providerID)
	}
	if err != nil {
		return nil, err
	}
	return s.resolveRow(p)
}

// userRow reads a user provider; ids that are not UUIDs cannot exist (and
// PostgreSQL would refuse them as UUIDs).
func (s *Service) userRow(ctx context.Context, id string) (*store.LLMProvider, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, store.ErrNotFound
	}
	return s.store.LLMProviderGet(ctx, id)
}

func (s *Service) resolveRow(p *store.LLMProvider) (*Resolved, error) {
	s.mu.RLock()
	c, ok := s.cache[p.ID]
	s.mu.RUnlock()
	if ok && c.userID == p.UserID && c.updatedAt.Equal(p.UpdatedAt) {
		r := c.resolved
		return &r, nil
	}
	key, err := s.secrets.Open(p.APIKeyEnc)
	if err != nil {
		return nil, fmt.Errorf("llm: open the API key of provider %s: %w", p.ID, err)
	}
	client, err := New(Config{ID: p.ID, Name: p.Name, Type: p.ProviderType, BaseURL: p.BaseURL, APIKey: key, HTTPClient: s.userHTTP})
	if err != nil {
		return nil, err
	}
	model := defaultModel(p.DefaultModel, p.Models)
	if model == "" && p.ProviderType == TypeEcho {
		model = "echo" // echo answers whatever the model; give it its name
	}
	var prices pricing.Table
	if len(p.Prices) > 0 {
		if err := json.Unmarshal(p.Prices, &prices); err != nil {
			return nil, fmt.Errorf("llm: the prices of provider %s: %w", p.ID, err)
		}
	}
	r := Resolved{Client: s.meter(client, p.ProviderType, prices), ProviderID: p.ID, ProviderType: p.ProviderType, DefaultModel: model}
	s.mu.Lock()
	s.cache[p.ID] = cached{resolved: r, userID: p.UserID, updatedAt: p.UpdatedAt}
	s.mu.Unlock()
	return &r, nil
}

// meter prices the answers of c, a provider of type typ with its own
// prices (nil for none), counts its calls, tokens and cost, and traces
// each call as a GenAI chat span (trace.go). The
// metrics' label is the provider type, not the provider: users' providers
// would make the label set grow without bound.
func (s *Service) meter(c Client, typ string, prices pricing.Table) Client {
	return &metered{Client: c, typ: typ, prices: prices, obs: s.metrics.LLM(typ)}
}

type metered struct {
	Client
	typ    string
	prices pricing.Table
	obs    *metrics.LLMObserver // nil: no metrics
}

func (m *metered) Complete(ctx context.Context, req Request) (*Response, error) {
	start := time.Now()
	ctx, span := telemetry.StartChat(ctx, m.typ, req.Model)
	res, err := m.Client.Complete(ctx, req)
	var u Usage
	if res != nil {
		u = res.Usage
		t := u.Tokens()
		res.CostMicroUSD = pricing.CostOf(m.typ, m.prices, res.Model, t)
		m.obs.Usage(res.Model, t.Input, t.Output, t.CacheRead, t.CacheWrite, res.CostMicroUSD)
	}
	m.obs.Call(time.Since(start), err, u.PromptTokens, u.CompletionTokens)
	if span.Capture() {
		in, out := spanMessages(req, res)
		span.SetContent(req.System, in, out)
	}
	span.EndChat(chatResult(res), err)
	return res, err
}

func (s *Service) forget(id string) {
	s.mu.Lock()
	delete(s.cache, id)
	s.mu.Unlock()
}

func defaultModel(model string, models []string) string {
	if model == "" && len(models) > 0 {
		return models[0]
	}
	return model
}

func providerOf(p *store.LLMProvider) Provider {
	var prices pricing.Table
	_ = json.Unmarshal(p.Prices, &prices) // written by apply: valid
	return Provider{Prices: prices, ID: p.ID, UserID: p.UserID, Name: p.Name, Type: p.ProviderType, BaseURL: p.BaseURL,
		HasAPIKey: p.APIKeyEnc != "", Models: p.Models, DefaultModel: p.DefaultModel, IsDefault: p.IsDefault,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

var errProviderNotFound = apperr.NotFoundf("LLM provider not found")

// List returns a page of the providers c may use: the system ones first,
// then c's own, oldest first.
func (s *Service) List(ctx context.Context, c *auth.Caller, limit, offset int) ([]Provider, int, error) {
	return s.listFor(ctx, c.UserID, limit, offset)
}

// ListForApp is List for the owner of an app c may reach: what the app's
// agents may use. Another user's app is 404.
func (s *Service) ListForApp(ctx context.Context, c *auth.Caller, appID string, limit, offset int) ([]Provider, int, error) {
	notFound := apperr.NotFoundf("App not found")
	if _, err := uuid.Parse(appID); err != nil {
		return nil, 0, notFound
	}
	app, err := s.store.AppGet(ctx, appID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, notFound
	}
	if err != nil {
		return nil, 0, err
	}
	if err := s.auth.Reach(ctx, c, auth.Resource{Type: "app", ID: app.ID, OwnerID: app.UserID, AppID: app.ID}, "app.model_providers", notFound); err != nil {
		return nil, 0, err
	}
	return s.listFor(ctx, app.UserID, limit, offset)
}

// listFor pages over the system providers followed by userID's rows.
func (s *Service) listFor(ctx context.Context, userID string, limit, offset int) ([]Provider, int, error) {
	out := []Provider{}
	for i := offset; i < len(s.systems) && len(out) < limit; i++ {
		out = append(out, s.systems[i].Provider)
	}
	rows, total, err := s.store.LLMProviderListByUser(ctx, userID, limit-len(out), max(0, offset-len(s.systems)))
	if err != nil {
		return nil, 0, err
	}
	for i := range rows {
		out = append(out, providerOf(&rows[i]))
	}
	return out, len(s.systems) + total, nil
}

// Get returns a system provider or one of c's own.
func (s *Service) Get(ctx context.Context, c *auth.Caller, id string) (*Provider, error) {
	if sys := s.systemByID(id); sys != nil {
		p := sys.Provider
		return &p, nil
	}
	row, err := s.owned(ctx, c, id, "llm_provider.read")
	if err != nil {
		return nil, err
	}
	p := providerOf(row)
	return &p, nil
}

// owned reads a user provider c may act on (Auth.Reach: another user's is
// 404, an admin with a stated reason is audited).
func (s *Service) owned(ctx context.Context, c *auth.Caller, id, action string) (*store.LLMProvider, error) {
	row, err := s.userRow(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errProviderNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := s.auth.Reach(ctx, c, auth.Resource{Type: "llm_provider", ID: row.ID, OwnerID: row.UserID}, action, errProviderNotFound); err != nil {
		return nil, err
	}
	return row, nil
}

// Input is a create or patch request; nil fields are not given (a patch
// keeps them). An empty APIKey in a patch removes the key.
type Input struct {
	Name         *string
	Type         *string
	BaseURL      *string
	APIKey       *string
	Models       *[]string
	DefaultModel *string
	IsDefault    *bool
	// Prices replace the provider's own prices (USD per million tokens);
	// an empty table removes them.
	Prices *pricing.Table
}

// Limits of the fields.
const (
	maxNameLen   = 100
	maxModels    = 200
	maxModelLen  = 200
	maxAPIKeyLen = 4096
	maxURLLen    = 2048
)

// apply validates in over p (a new row or a copy of the stored one).
func (s *Service) apply(p *store.LLMProvider, in Input) error {
	if in.Name != nil {
		name := strings.TrimSpace(*in.Name)
		if name == "" || len([]rune(name)) > maxNameLen {
			return apperr.Invalid("name", fmt.Sprintf("Invalid value for field name: must be 1 to %d characters", maxNameLen))
		}
		p.Name = name
	}
	if in.Type != nil {
		if !slices.Contains(Types, *in.Type) {
			return apperr.Invalid("provider_type", "Invalid value for field provider_type: must be one of "+strings.Join(Types, ", "))
		}
		p.ProviderType = *in.Type
	}
	if in.BaseURL != nil {
		p.BaseURL = strings.TrimSpace(*in.BaseURL)
	}
	if p.BaseURL != "" {
		if len(p.BaseURL) > maxURLLen {
			return apperr.Invalid("base_url", "Invalid value for field base_url: must be an absolute http or https URL")
		}
		if err := s.egress.CheckURL("base_url", p.BaseURL); err != nil {
			return err
		}
	} else if p.ProviderType == TypeOpenAICompatible {
		return apperr.Invalid("base_url", "Missing required field: base_url (an openai_compatible provider needs its server's URL, e.g. http://localhost:11434/v1)")
	}
	if in.APIKey != nil {
		key := strings.TrimSpace(*in.APIKey)
		if len(key) > maxAPIKeyLen {
			return apperr.Invalid("api_key", "Invalid value for field api_key: too long")
		}
		sealed, err := s.secrets.Seal(key)
		if err != nil {
			return err
		}
		p.APIKeyEnc = sealed
	}
	if in.Models != nil {
		if len(*in.Models) > maxModels {
			return apperr.Invalid("models", fmt.Sprintf("Invalid value for field models: at most %d models", maxModels))
		}
		models := make([]string, 0, len(*in.Models))
		for i, m := range *in.Models {
			m = strings.TrimSpace(m)
			if m == "" || len(m) > maxModelLen {
				return apperr.Invalid(fmt.Sprintf("models[%d]", i), fmt.Sprintf("Invalid value for field models[%d]: must be 1 to %d characters", i, maxModelLen))
			}
			if !slices.Contains(models, m) {
				models = append(models, m)
			}
		}
		p.Models = models
	}
	if in.DefaultModel != nil {
		p.DefaultModel = strings.TrimSpace(*in.DefaultModel)
	} else if in.Models != nil && !slices.Contains(p.Models, p.DefaultModel) {
		// New models without a new default: the old default is gone with
		// them, so the first model takes its place below.
		p.DefaultModel = ""
	}
	if p.DefaultModel == "" && len(p.Models) > 0 {
		p.DefaultModel = p.Models[0]
	}
	if len(p.Models) > 0 && !slices.Contains(p.Models, p.DefaultModel) {
		return apperr.Invalid("default_model", "Invalid value for field default_model: must be one of models")
	}
	if in.IsDefault != nil {
		p.IsDefault = *in.IsDefault
	}
	if in.Prices != nil {
		if err := checkPrices(*in.Prices); err != nil {
			return err
		}
		b, err := json.Marshal(*in.Prices)
		if err != nil {
			return err
		}
		p.Prices = b
	}
	return nil
}

// checkPrices refuses a price that is negative or not a finite number,
// naming it (prices.<model>.input), and more models than a provider has.
func checkPrices(t pricing.Table) error {
	if len(t) > maxModels {
		return apperr.Invalid("prices", fmt.Sprintf("Invalid value for field prices: at most %d models", maxModels))
	}
	for _, model := range slices.Sorted(maps.Keys(t)) {
		if strings.TrimSpace(model) == "" || len(model) > maxModelLen {
			return apperr.Invalid("prices", fmt.Sprintf("Invalid value for field prices: a model name must be 1 to %d characters", maxModelLen))
		}
		p := t[model]
		for _, f := range []struct {
			name string
			v    *float64
		}{{"input", &p.Input}, {"output", &p.Output}, {"cache_read", p.CacheRead}, {"cache_write", p.CacheWrite}} {
			if f.v != nil && (*f.v < 0 || math.IsNaN(*f.v) || math.IsInf(*f.v, 0)) {
				field := "prices." + model + "." + f.name
				return apperr.Invalid(field, "Invalid value for field "+field+": must be a number >= 0 (USD per million tokens)")
			}
		}
	}
	return nil
}

// write runs save (the insert or update of p) in a transaction that first
// unmarks the user's other default when p is marked. The user's lock makes
// concurrent markings take turns, so the last one wins; a unique index
// guarantees one default per user whatever happens.
func (s *Service) write(ctx context.Context, p *store.LLMProvider, save func(tx *store.Store) error) error {
	return s.store.InTx(ctx, func(tx *store.Store) error {
		if p.IsDefault {
			if err := tx.LLMProviderLockUser(ctx, p.UserID); err != nil {
				return err
			}
			if err := tx.LLMProviderClearDefault(ctx, p.UserID, p.ID, p.UpdatedAt); err != nil {
				return err
			}
		}
		return save(tx)
	})
}

func duplicateName(name string) error {
	return apperr.Newf(apperr.Conflict, "An LLM provider named %q already exists", name)
}

// Create adds a provider of c's. Marking it is_default unmarks the others
// in the same transaction.
func (s *Service) Create(ctx context.Context, c *auth.Caller, in Input) (*Provider, error) {
	if in.Name == nil {
		return nil, apperr.Invalid("name", "Missing required field: name")
	}
	if in.Type == nil {
		return nil, apperr.Invalid("provider_type", "Missing required field: provider_type")
	}
	now := s.now()
	p := &store.LLMProvider{ID: uuid.Must(uuid.NewV7()).String(), UserID: c.UserID, CreatedAt: now, UpdatedAt: now}
	if err := s.apply(p, in); err != nil {
		return nil, err
	}
	err := s.write(ctx, p, func(tx *store.Store) error { return tx.LLMProviderCreate(ctx, p) })
	if errors.Is(err, store.ErrConflict) {
		return nil, duplicateName(p.Name)
	}
	if err != nil {
		return nil, err
	}
	out := providerOf(p)
	return &out, nil
}

func errSystemReadOnly(id string) error {
	return apperr.Newf(apperr.Permission, "System LLM provider %s cannot be changed or deleted", id)
}

// Update patches a provider of c's.
func (s *Service) Update(ctx context.Context, c *auth.Caller, id string, in Input) (*Provider, error) {
	if s.systemByID(id) != nil {
		return nil, errSystemReadOnly(id)
	}
	// Read and check outside the transaction: Reach may write an audit row,
	// and SQLite has one writer connection, which the transaction holds.
	row, err := s.owned(ctx, c, id, "llm_provider.update")
	if err != nil {
		return nil, err
	}
	if err := s.apply(row, in); err != nil {
		return nil, err
	}
	row.UpdatedAt = s.now()
	err = s.write(ctx, row, func(tx *store.Store) error { return tx.LLMProviderUpdate(ctx, row) })
	if errors.Is(err, store.ErrNotFound) {
		return nil, errProviderNotFound // deleted meanwhile
	}
	if errors.Is(err, store.ErrConflict) && in.Name != nil {
		return nil, duplicateName(strings.TrimSpace(*in.Name))
	}
	if err != nil {
		return nil, err
	}
	s.forget(id)
	p := providerOf(row)
	return &p, nil
}

// Delete removes a provider of c's. Agents that name it then fail to
// resolve it (400 provider_id), which is what their owner asked for.
func (s *Service) Delete(ctx context.Context, c *auth.Caller, id string) error {
	if s.systemByID(id) != nil {
		return errSystemReadOnly(id)
	}
	row, err := s.owned(ctx, c, id, "llm_provider.delete")
	if err != nil {
		return err
	}
	if err := s.store.LLMProviderDelete(ctx, row.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	s.forget(id)
	return nil
}

// TestResult is the answer of a test completion.
type TestResult struct {
	OK        bool
	Model     string
	LatencyMS int64
	Error     string
}

// testTimeout bounds a test completion: a provider that does not answer
// a one-word prompt in that time is not working.
const testTimeout = 30 * time.Second

// Test makes a tiny completion with a provider c may use, on its default
// model. A failing provider is a result (ok false), not an error.
func (s *Service) Test(ctx context.Context, c *auth.Caller, id string) (*TestResult, error) {
	p, err := s.Get(ctx, c, id)
	if err != nil {
		return nil, err
	}
	// Resolve as the provider's owner: an admin testing another user's
	// provider (with a stated reason) reaches it through Get above.
	r, err := s.Resolve(ctx, cmp(p.UserID, c.UserID), p.ID)
	if err != nil {
		return nil, err
	}
	res := &TestResult{Model: r.DefaultModel}
	if res.Model == "" {
		res.Error = "No model to test: set default_model or models"
		return res, nil
	}
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	start := time.Now()
	out, err := r.Client.Complete(ctx, Request{Model: res.Model, MaxTokens: 16,
		Messages: []Message{{Role: RoleUser, Content: "Reply with the single word OK."}}})
	res.LatencyMS = time.Since(start).Milliseconds()
	if err != nil {
		res.Error = err.Error()
		return res, nil
	}
	res.OK = true
	if out.Model != "" {
		res.Model = out.Model
	}
	return res, nil
}
