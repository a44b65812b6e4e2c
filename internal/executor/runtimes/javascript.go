package runtimes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/fairshare"
	"github.com/agentplatform/agentplatform/internal/limits"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/quota"
	"github.com/agentplatform/agentplatform/internal/sandbox"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Data is app data as ctx.data sees it (appdata.Service, adapted): JSON in
// and out, for the run's user and app. A validation failure is an
// *apperr.Error of kind Validation; Get answers nil when the record is
// absent.
type Data interface {
	CreateModel(ctx context.Context, userID, appID, slug string, def json.RawMessage) (json.RawMessage, error)
	List(ctx context.Context, userID, appID, slug string, query json.RawMessage) (json.RawMessage, error)
	Get(ctx context.Context, userID, appID, slug, itemID string) (json.RawMessage, error)
	Create(ctx context.Context, userID, appID, slug string, data json.RawMessage, createdBy string) (json.RawMessage, error)
	Update(ctx context.Context, userID, appID, slug, itemID string, data json.RawMessage) (json.RawMessage, error)
	Delete(ctx context.Context, userID, appID, slug, itemID string) error
}

// Credentials is the credential service as ctx.credentials sees it; until
// OAuth connections exist, NoCredentials answers every call.
type Credentials interface {
	Call(ctx context.Context, userID, appID, method string, args json.RawMessage) (json.RawMessage, error)
}

// NoCredentials is the credential service of a platform without OAuth
// connections: every call throws CredentialNotFoundError.
type NoCredentials struct{}

// Call implements Credentials.
func (NoCredentials) Call(_ context.Context, _, _, method string, args json.RawMessage) (json.RawMessage, error) {
	// The provider is only named in the message: arguments that do not
	// decode leave it empty rather than change the error.
	var provider string
	a, _ := sandbox.ParseArgs(args)
	_ = a.Decode(0, &provider)
	return nil, &sandbox.Thrown{Name: string(apperr.CredentialNotFound),
		Message: fmt.Sprintf("No connection for provider %q: connect an account first", provider)}
}

// credentialMethods are ctx.credentials' functions (DESIGN).
var credentialMethods = []string{"getCredentials", "isConnected", "listConnections", "refreshToken",
	"revokeConnection", "getAuthUrl", "validateScopes", "getTokenInfo", "getUserInfo"}

// Limits on what code keeps in ctx.storage.
const (
	maxStorageKey   = 256
	maxStorageValue = 256 << 10
	maxStorageList  = 1000
)

// Fetch limits (DESIGN: 10 s, 5 MiB, 3 redirects each checked again).
const (
	fetchTimeout   = 10 * time.Second
	fetchMaxBody   = 5 << 20
	fetchRedirects = 3
	maxFetchBody   = 5 << 20 // of a request
)

// JavaScript runs custom agents and functions written in JavaScript in the
// sandbox, with ctx's services.
type JavaScript struct {
	custom
	Store       *store.Store
	LLM         *LLM
	Data        Data        // nil: ctx.data throws
	Credentials Credentials // nil: NoCredentials
	Limits      sandbox.Limits
	// PageBytes bounds a ctx.storage.list page (limits.PageBytes when 0).
	PageBytes int
	// Quotas bound what ctx.storage keeps (AP_QUOTA_STORAGE_*).
	Quotas quota.Limits
	// Slots bounds the runs executing JavaScript at once in this process
	// (AP_WORKERS): the CPU slots, shared fairly between users;
	// nil: unbounded. With Live set, a run gives its slot back while a
	// host call waits (ctx.http.fetch, ctx.llm.complete, ctx.storage, a
	// child activation…) and takes one again before its code goes on.
	Slots *fairshare.Pool
	// Live bounds the runs whose VM exists at once, executing or waiting
	// on a host call: their memory ceilings add up to at most Live's
	// capacity × AP_JS_MEMORY_MB. nil: a run holds its CPU slot through
	// its host calls, so that Slots bounds the VMs instead.
	Live  *fairshare.Pool
	fetch *http.Client
}

// NewJavaScript returns the JavaScript executor; memoryMB is
// AP_JS_MEMORY_MB.
func NewJavaScript(st *store.Store, guard *egress.Guard, llmExec *LLM, memoryMB int) *JavaScript {
	limits := sandbox.DefaultLimits
	if memoryMB > 0 {
		limits.MemoryBytes = memoryMB << 20
	}
	return &JavaScript{Store: st, LLM: llmExec, Limits: limits, Credentials: NoCredentials{}, Quotas: quota.Defaults(),
		fetch: guard.Client(egress.Options{Field: "ctx.http.fetch", Timeout: fetchTimeout, MaxBody: fetchMaxBody, MaxRedirects: fetchRedirects})}
}

// Runtime is "javascript".
func (j *JavaScript) Runtime() string { return "javascript" }

// Execute runs the run's code.
func (j *JavaScript) Execute(ctx context.Context, run *executor.Run) (*executor.Result, error) {
	var cfg struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(run.Config, &cfg)
	fields, err := j.fields(run)
	if err != nil {
		return nil, err
	}
	// Every JavaScript run (agent, function, pipeline step) comes through
	// here: bounding the VMs bounds their memory, bounding the executing
	// ones leaves the API its share of the cores. The waits count in the
	// run's timeout.
	if j.Live != nil {
		if err := j.Live.Acquire(ctx, run.UserID); err != nil {
			return nil, context.Cause(ctx)
		}
		defer j.Live.Release(run.UserID)
	}
	cpu := &cpuSlot{pool: j.Slots, owner: run.UserID, yield: j.Live != nil}
	if err := cpu.take(ctx); err != nil {
		return nil, context.Cause(ctx)
	}
	defer cpu.give()
	res, err := sandbox.Run(ctx, sandbox.Program{Code: cfg.Code, Input: run.Input, Ctx: fields, Calls: j.calls(run, cpu), Limits: j.Limits})
	if err != nil {
		// Output the code returned before its context ended is not the
		// output of a run that failed.
		res.Output = nil
	}
	return res, err
}

// cpuSlot is a run's hold on a CPU slot. Host calls run on the VM's own
// goroutine while its code stands still, so a call that waits gives the
// slot back (yield) and takes one again before the code goes on: only the
// one goroutine touches held.
type cpuSlot struct {
	pool  *fairshare.Pool // nil: no bound
	owner string
	yield bool // give the slot back while a host call waits
	held  bool
}

// take waits for a slot, unless one is held already.
func (c *cpuSlot) take(ctx context.Context) error {
	if c.pool == nil || c.held {
		return nil
	}
	if err := c.pool.Acquire(ctx, c.owner); err != nil {
		return err
	}
	c.held = true
	return nil
}

// give releases the slot, if held.
func (c *cpuSlot) give() {
	if c.held {
		c.held = false
		c.pool.Release(c.owner)
	}
}

// around makes call give the slot back while it waits. A run whose
// context ends before it gets a slot again fails with its context's
// error: the sandbox stops its code.
func (c *cpuSlot) around(call sandbox.Call) sandbox.Call {
	if c.pool == nil || !c.yield {
		return call
	}
	return func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
		c.give()
		v, err := call(ctx, a)
		if terr := c.take(ctx); terr != nil {
			return nil, terr
		}
		return v, err
	}
}

// fields are ctx's plain values (DESIGN).
func (j *JavaScript) fields(run *executor.Run) (json.RawMessage, error) {
	f := map[string]any{"app_id": run.AppID, "user_id": run.UserID}
	raw := func(m json.RawMessage) json.RawMessage {
		if len(m) == 0 {
			return json.RawMessage("{}")
		}
		return m
	}
	switch run.Kind {
	case executor.Execution:
		// idempotency_key is null outside a tool call: always there, so
		// code tests it rather than its presence.
		var key any
		if run.IdempotencyKey != "" {
			key = run.IdempotencyKey
		}
		f["execution"] = map[string]any{"execution_id": run.ID, "function_id": run.FunctionID, "app_id": run.AppID, "idempotency_key": key}
	default:
		f["activation"] = map[string]any{"activation_id": run.ID, "agent_id": run.AgentID, "app_id": run.AppID,
			"context": raw(run.Context), "metadata": raw(run.Metadata)}
	}
	if run.AgentKey != "" {
		// DESIGN hands the run's agk_ key to the agent's code, as to a
		// webhook agent: what the code gives a service it calls out to.
		f["agent_key"] = run.AgentKey
	}
	return json.Marshal(f)
}

// args decodes a call's JSON arguments into dst's elements; code sees a
// bad one as a TypeError.
func args(raw json.RawMessage, dst ...any) error {
	if err := sandbox.DecodeArgs(raw, dst...); err != nil {
		return &sandbox.Thrown{Name: "TypeError", Message: err.Error()}
	}
	return nil
}

// thrown turns a domain error into the exception code sees: our errors
// with their kind's name and public text; anything else without its
// internals.
func thrown(err error) error {
	if err == nil {
		return nil
	}
	var t *sandbox.Thrown
	if errors.As(err, &t) {
		return t
	}
	if e, ok := apperr.As(err); ok {
		return &sandbox.Thrown{Name: string(e.Kind), Message: e.Detail}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *llm.Error
	if errors.As(err, &pe) {
		return &sandbox.Thrown{Name: "LLMError", Message: pe.Error()}
	}
	return &sandbox.Thrown{Name: "Error", Message: "internal error"}
}

// calls are ctx's functions of run; each gives cpu back while it waits.
func (j *JavaScript) calls(run *executor.Run, cpu *cpuSlot) map[string]sandbox.Call {
	c := map[string]sandbox.Call{
		"storage.get":    j.storageGet(run),
		"storage.set":    j.storageSet(run),
		"storage.delete": j.storageDelete(run),
		"storage.list":   j.storageList(run),
		"llm.complete":   j.llmComplete(run),
		"http.fetch":     j.httpFetch,
	}
	for name, call := range j.dataCalls(run) {
		c[name] = call
	}
	creds := j.Credentials
	if creds == nil {
		creds = NoCredentials{}
	}
	for _, m := range credentialMethods {
		c["credentials."+m] = func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
			v, err := creds.Call(ctx, run.UserID, run.AppID, m, a)
			return v, thrown(err)
		}
	}
	for name, call := range c {
		c[name] = cpu.around(call)
	}
	return c
}

// keyArgs decodes a ctx.storage call's arguments, the key first and then
// rest, and checks the key.
func keyArgs(a json.RawMessage, rest ...any) (string, error) {
	var key string
	if err := args(a, append([]any{&key}, rest...)...); err != nil {
		return "", err
	}
	if key == "" || len(key) > maxStorageKey {
		return "", &sandbox.Thrown{Name: "ValidationError", Message: fmt.Sprintf("a storage key is 1 to %d bytes", maxStorageKey)}
	}
	return key, nil
}

func (j *JavaScript) storageGet(run *executor.Run) sandbox.Call {
	return func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
		key, err := keyArgs(a)
		if err != nil {
			return nil, err
		}
		v, err := j.Store.StorageGet(ctx, run.UserID, run.AppID, key)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		return v, thrown(err)
	}
}

func (j *JavaScript) storageSet(run *executor.Run) sandbox.Call {
	return func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
		var value json.RawMessage
		key, err := keyArgs(a, &value)
		if err != nil {
			return nil, err
		}
		if len(value) == 0 {
			value = json.RawMessage("null")
		}
		if len(value) > maxStorageValue {
			return nil, &sandbox.Thrown{Name: string(apperr.PayloadTooLarge),
				Message: fmt.Sprintf("a storage value is at most %d bytes of JSON; this one is %d bytes", maxStorageValue, len(value))}
		}
		err = j.Store.StorageSet(ctx, run.UserID, run.AppID, key, value, store.Now(), j.Quotas.Storage())
		return nil, thrown(j.Quotas.FromStore(err))
	}
}

func (j *JavaScript) storageDelete(run *executor.Run) sandbox.Call {
	return func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
		key, err := keyArgs(a)
		if err != nil {
			return nil, err
		}
		return nil, thrown(j.Store.StorageDelete(ctx, run.UserID, run.AppID, key))
	}
}

// listOptions is ctx.storage.list's second argument.
type listOptions struct {
	Limit *int   `json:"limit"`
	After string `json:"after"`
}

// storageList is ctx.storage.list(prefix, {limit, after}): a page of keys
// in key order, at most limit (1 to 1000, default 1000) and at most
// PageBytes of keys and values; the next page starts after the last key
// of this one, and an empty page is the end.
func (j *JavaScript) storageList(run *executor.Run) sandbox.Call {
	return func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
		var prefix string
		var o listOptions
		if err := args(a, &prefix, &o); err != nil {
			return nil, err
		}
		limit := maxStorageList
		if o.Limit != nil {
			limit = *o.Limit
		}
		if limit < 1 || limit > maxStorageList {
			return nil, &sandbox.Thrown{Name: "ValidationError", Message: fmt.Sprintf("limit is 1 to %d", maxStorageList)}
		}
		budget := j.PageBytes
		if budget <= 0 {
			budget = limits.PageBytes
		}
		items, err := j.Store.StorageList(ctx, run.UserID, run.AppID, prefix, o.After, limit, budget)
		if err != nil {
			return nil, thrown(err)
		}
		if items == nil {
			items = []store.StorageItem{}
		}
		return json.Marshal(items)
	}
}

// dataArgs are a ctx.data call's arguments: (slug[, id][, data]).
type dataArgs struct {
	slug, id string
	body     json.RawMessage
}

// Which arguments a ctx.data call takes after the model's slug.
const (
	withID = 1 << iota
	withBody
)

// dataCall is one ctx.data function: it decodes the slug and the
// arguments named in takes, runs do, and throws do's error as code sees it.
func dataCall(takes int, do func(ctx context.Context, a dataArgs) (json.RawMessage, error)) sandbox.Call {
	return func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var a dataArgs
		dst := []any{&a.slug}
		if takes&withID != 0 {
			dst = append(dst, &a.id)
		}
		if takes&withBody != 0 {
			dst = append(dst, &a.body)
		}
		if err := args(raw, dst...); err != nil {
			return nil, err
		}
		v, err := do(ctx, a)
		return v, thrown(err)
	}
}

func (j *JavaScript) dataCalls(run *executor.Run) map[string]sandbox.Call {
	d := j.Data
	if d == nil {
		return nil
	}
	u, app := run.UserID, run.AppID
	return map[string]sandbox.Call{
		"data.createModel": dataCall(withBody, func(ctx context.Context, a dataArgs) (json.RawMessage, error) {
			return d.CreateModel(ctx, u, app, a.slug, a.body)
		}),
		"data.list": dataCall(withBody, func(ctx context.Context, a dataArgs) (json.RawMessage, error) {
			return d.List(ctx, u, app, a.slug, a.body)
		}),
		"data.get": dataCall(withID, func(ctx context.Context, a dataArgs) (json.RawMessage, error) {
			return d.Get(ctx, u, app, a.slug, a.id)
		}),
		"data.create": dataCall(withBody, func(ctx context.Context, a dataArgs) (json.RawMessage, error) {
			return d.Create(ctx, u, app, a.slug, a.body, u)
		}),
		"data.update": dataCall(withID|withBody, func(ctx context.Context, a dataArgs) (json.RawMessage, error) {
			return d.Update(ctx, u, app, a.slug, a.id, a.body)
		}),
		"data.delete": dataCall(withID, func(ctx context.Context, a dataArgs) (json.RawMessage, error) {
			return nil, d.Delete(ctx, u, app, a.slug, a.id)
		}),
	}
}

// completeRequest is ctx.llm.complete's argument.
type completeRequest struct {
	Prompt      string        `json:"prompt"`
	Messages    []llm.Message `json:"messages"`
	Model       string        `json:"model"`
	ProviderID  string        `json:"provider_id"`
	Temperature *float64      `json:"temperature"`
	MaxTokens   int           `json:"max_tokens"`
	System      string        `json:"system"`
}

func (j *JavaScript) llmComplete(run *executor.Run) sandbox.Call {
	return func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
		var req completeRequest
		if err := args(a, &req); err != nil {
			return nil, err
		}
		if req.Prompt == "" && len(req.Messages) == 0 {
			return nil, &sandbox.Thrown{Name: "ValidationError", Message: "ctx.llm.complete needs prompt or messages"}
		}
		for i, m := range req.Messages {
			if m.Role == "" {
				// A message without a role has always been the user's.
				req.Messages[i].Role = llm.RoleUser
				continue
			}
			if !m.Role.Valid() {
				return nil, &sandbox.Thrown{Name: "ValidationError",
					Message: fmt.Sprintf(`messages[%d].role must be "system", "user" or "assistant", not %q`, i, m.Role)}
			}
		}
		p, err := j.LLM.Resolve(ctx, run.UserID, req.ProviderID)
		if err != nil {
			return nil, thrown(err)
		}
		if req.Model == "" {
			req.Model = p.DefaultModel
		}
		msgs := req.Messages
		if req.Prompt != "" {
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: req.Prompt})
		}
		if err := j.LLM.allow(ctx, run); err != nil {
			return nil, thrown(err)
		}
		res, err := j.LLM.Complete(ctx, p.Client, llm.Request{Model: req.Model, System: req.System, Temperature: req.Temperature,
			MaxTokens: req.MaxTokens, Messages: msgs})
		if err != nil {
			return nil, thrown(err)
		}
		if res.Provider == "" {
			res.Provider = p.ProviderID
		}
		if err := j.recordUsage(ctx, run, res); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"text": res.Text, "usage": res.Usage})
	}
}

// recordUsage adds the call that gave res to the ledger, in a transaction
// of its own right after the answer. Code is no journal: a run that
// starts again after a crash calls the provider again, a call that is
// billed again and so is a record of its own. Each answer is recorded
// once, by the one call that got it; what a crash can lose is the record
// of an answer that came in the moment before, as it loses the answer.
// A run's context may end with its answer in hand (cancel, timeout): the
// record is still written, as the provider was still paid.
func (j *JavaScript) recordUsage(ctx context.Context, run *executor.Run, res *llm.Response) error {
	r := Bill(res)
	r.ID, r.UserID, r.AppID, r.APIKeyID, r.CreatedAt = uuid.Must(uuid.NewV7()).String(), run.UserID, run.AppID, run.APIKeyID, time.Now().UTC()
	if run.Kind == executor.Activation {
		r.ActivationID, r.AgentID = run.ID, run.AgentID
	}
	ctx = context.WithoutCancel(ctx)
	if err := j.Store.InTx(ctx, func(tx *store.Store) error { return tx.UsageInsert(ctx, r) }); err != nil {
		return err
	}
	j.LLM.afterUsage(ctx, r)
	return nil
}

// fetchOptions is ctx.http.fetch's second argument.
type fetchOptions struct {
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
	Body    *string           `json:"body"`
}

func (j *JavaScript) httpFetch(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
	var url string
	var o fetchOptions
	if err := args(a, &url, &o); err != nil {
		return nil, err
	}
	if o.Method == "" {
		o.Method = http.MethodGet
	}
	var body io.Reader
	if o.Body != nil {
		if len(*o.Body) > maxFetchBody {
			return nil, &sandbox.Thrown{Name: "ValidationError", Message: "a request body is at most 5 MiB"}
		}
		body = strings.NewReader(*o.Body)
	}
	req, err := http.NewRequestWithContext(ctx, strings.ToUpper(o.Method), url, body)
	if err != nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") {
		return nil, &sandbox.Thrown{Name: "TypeError", Message: "ctx.http.fetch needs an http or https URL"}
	}
	for k, v := range o.Headers {
		req.Header.Set(k, v)
	}
	resp, err := j.fetch.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &sandbox.Thrown{Name: "FetchError", Message: "ctx.http.fetch failed: " + egress.Describe(err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &sandbox.Thrown{Name: "FetchError", Message: "ctx.http.fetch failed: " + egress.Describe(err)}
	}
	headers := map[string]string{}
	for k := range resp.Header {
		headers[strings.ToLower(k)] = resp.Header.Get(k)
	}
	return json.Marshal(map[string]any{"status": resp.StatusCode, "headers": headers, "body": string(b)})
}
