// Package activation owns the life of an activation: its creation (with its
// River job and its created event in one transaction, idempotent under an
// Idempotency-Key), its run on a worker (claim, execution slot, the agent
// run by its executor, timeout and cancellation, result and events in one
// transaction), and its
// recovery when a worker dies (heartbeats, re-queue). Execution is
// at-least-once: a job may run twice, but the claim makes the second run a
// no-op.
package activation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/inputschema"
	"github.com/agentplatform/agentplatform/internal/metrics"
	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Agents finds the agents and apps a caller may use (apps.Service).
type Agents interface {
	VisibleAgent(ctx context.Context, c *auth.Caller, agentID string) (*store.Agent, error)
	// Agent is an agent the caller may read (disabled ones too).
	Agent(ctx context.Context, c *auth.Caller, agentID string) (*store.Agent, error)
	OwnedApp(ctx context.Context, c *auth.Caller, appID string) (*store.App, error)
	ListApp(ctx context.Context, c *auth.Caller, appID string) (string, error)
}

// EventBus stores events in a transaction and publishes them after commit
// (events.Bus).
type EventBus interface {
	Record(ctx context.Context, tx *store.Store, evs ...*events.Event) error
	// RecordWith is Record for events that write stores with what they
	// are about (events.Bus.RecordWith).
	RecordWith(tx *store.Store, write func([]*store.EventRow) error, evs ...*events.Event) error
	// RecordWithThen is RecordWith for a write that does not wait for
	// its commit (events.Bus.RecordWithThen).
	RecordWithThen(tx *store.Store, write func(rows []*store.EventRow, done func(error)), then func(error), evs ...*events.Event)
	PublishDelta(ctx context.Context, userID, activationID, text string)
	// EndTokens says the run's fragments are all published: streams of
	// the activation stop waiting for more.
	EndTokens(userID, activationID string)
	Subscribe(userID string, f events.Filter, buffer int) *events.Subscription
}

// Nodes reaches the other nodes of the cluster (events.Bus).
type Nodes interface {
	Broadcast(topic, userID string)
}

// Webhooks queues the delivery of an ended activation's event in the
// transaction that records the end, and checks webhook URLs when they are
// given (webhook.Service).
type Webhooks interface {
	EnqueueTx(ctx context.Context, tx *store.Store, appID, url string, ev events.Event) error
	CheckURL(field, raw string) error
}

// EndHook is told, in its transaction, that activation a has ended: Run
// does what must change with the end, for the ends it Applies to. Applies
// decides without asking the database: an end no hook applies to may be
// recorded in one statement (recordEnd).
type EndHook struct {
	Applies func(a *store.Activation) bool
	Run     func(ctx context.Context, tx *store.Store, a *store.Activation) error
}

// DeadWorkerHook hands back what dead worker workerID held and says how
// many things it handed back.
type DeadWorkerHook func(ctx context.Context, workerID string) (int, error)

// Deps are what the service is built on. Webhooks may be nil.
type Deps struct {
	Store  *store.Store
	Auth   *auth.Service
	Queue  *queue.Queue
	Log    *slog.Logger
	Agents Agents
	Events EventBus
	// Nodes tells the other nodes that activations were queued (the
	// event bus's Broadcast; they hand it to QueuedElsewhere); nil on a
	// database one process serves.
	Nodes    Nodes
	Webhooks Webhooks
	// Executors run the agents, by runtime; an agent whose runtime has
	// none can be activated, and its activations fail.
	Executors executor.Registry
	// EndHooks run inside the transaction that records any end of an
	// activation (completed, failed, cancelled, reaped): what must change
	// with it (a pipeline's next step, the end of an agent key) commits or
	// rolls back with it. Work after the commit goes to tx.AfterCommit.
	EndHooks []EndHook
	// DeadWorkerHooks hand back what else a dead worker held (a pipeline's
	// step): the reaper calls each with the worker's id, after its
	// activations, and forgets the worker only once all succeeded.
	DeadWorkerHooks []DeadWorkerHook
	// Metrics may be nil.
	Metrics *metrics.Metrics
	// Budgets refuses an activation while a budget that applies to it is
	// spent (usage.Service.Admit), and hears of the LLM calls its runs
	// record; nil checks none.
	Budgets Budgets
}

// Budgets is what activate asks of the budgets: the user's, the app's and
// the creating key's (0: none); and what a run tells them of the usage it
// recorded (usage.Service.AfterUsage), after the commit, so that the call
// crossing a budget's warning line is warned of at once.
type Budgets interface {
	Admit(ctx context.Context, userID, appID string, keyID int64) error
	AfterUsage(ctx context.Context, recs ...*store.UsageRecord) error
}

// Options tune the worker side.
type Options struct {
	// WorkerID names this process in the workers table.
	WorkerID string
	// Concurrency is AP_MAX_INFLIGHT: the activations this process holds
	// at once, executing or waiting on an LLM, a tool or a webhook agent.
	// What uses the CPU (JavaScript) has its own, smaller bound.
	Concurrency int
	// HeartbeatEvery and DeadAfter: a worker silent for DeadAfter is dead.
	HeartbeatEvery, DeadAfter time.Duration
	// MaxAttempts bounds how often an activation is started before a dying
	// worker fails it instead of re-queueing it.
	MaxAttempts int
}

func (o *Options) defaults() {
	if o.WorkerID == "" {
		o.WorkerID = uuid.Must(uuid.NewV7()).String()
	}
	if o.HeartbeatEvery == 0 {
		o.HeartbeatEvery = 10 * time.Second
	}
	if o.DeadAfter == 0 {
		o.DeadAfter = 30 * time.Second
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 3
	}
}

// Service is the activation domain.
type Service struct {
	Deps
	opts    Options
	running sync.Map              // activation id → *tracked, for cancels on this node
	local   atomic.Pointer[local] // the fast path; nil unless this process works jobs
	self    store.Worker
	now     func() time.Time
	schemas inputschema.Cache // custom agents' input schemas
}

// New builds the service and registers its River worker on q.
func New(d Deps, opts Options) *Service {
	opts.defaults()
	s := &Service{Deps: d, opts: opts, now: store.Now}
	queue.AddWorker(d.Queue, &jobWorker{svc: s})
	addWaitWorkers(d.Queue, s)
	return s
}

// The public errors.
var (
	errAgentNotFound      = apperr.NotFoundf("Agent not found")
	errActivationNotFound = apperr.NotFoundf("Activation not found")
	// ErrCancelled is the error text of a cancelled activation.
	ErrCancelled = "Activation cancelled"
)

// Request is an activate call, whichever form it came in.
type Request struct {
	AgentID string
	// Agent, when set, is the agent as apps' VisibleAgent (or
	// VisibleAgentInApp) returned it for this caller: the caller named it
	// otherwise (an OpenAI model, an MCP tool) and read it already, and
	// Create reads it no more. AgentID is then not read.
	Agent *store.Agent
	// AppID is set by the app-scoped form: the agent must belong to it.
	AppID          string
	InputData      json.RawMessage
	Context        map[string]any
	Metadata       map[string]any
	Priority       int // 0 means the default, 2
	IdempotencyKey string
}

// idempotencyWindow is how long a key names its first activation.
const idempotencyWindow = 24 * time.Hour

// Create records a queued activation and its job, or, for a repeated
// Idempotency-Key with the same request, returns the first activation
// (replayed true).
func (s *Service) Create(ctx context.Context, c *auth.Caller, r Request) (a *store.Activation, replayed bool, err error) {
	if err := validate(&r); err != nil {
		return nil, false, err
	}
	if u, _ := r.Metadata["webhook_url"].(string); u != "" && s.Webhooks != nil {
		if err := s.Webhooks.CheckURL("metadata.webhook_url", u); err != nil {
			return nil, false, err
		}
	}
	agent := r.Agent
	if agent == nil {
		if agent, err = s.Agents.VisibleAgent(ctx, c, r.AgentID); err != nil {
			return nil, false, err
		}
	}
	if r.AppID != "" && agent.AppID != r.AppID {
		return nil, false, errAgentNotFound
	}
	if err := s.checkInput(ctx, agent, r.InputData); err != nil {
		return nil, false, err
	}
	// What only the agent's runtime reads, it checks. Without an executor
	// there is nothing to check: the run fails and says why.
	if e, err := s.Executors.For(agent.AgentTypeID, agent.Config); err == nil {
		if err := e.Validate(ctx, &executor.Check{UserID: c.UserID, Config: agent.Config, Metadata: r.Metadata, Input: r.InputData}); err != nil {
			return nil, false, err
		}
	}
	hash := requestHash(agent.ID, &r)
	if r.IdempotencyKey != "" {
		if prior, ok, err := s.replay(ctx, c.UserID, r.IdempotencyKey, hash); ok || err != nil {
			return prior, ok, err
		}
	}
	// A spent budget refuses new work (429), a replay above excepted.
	if s.Budgets != nil {
		if err := s.Budgets.Admit(ctx, c.UserID, agent.AppID, c.KeyID); err != nil {
			return nil, false, err
		}
	}
	a = &store.Activation{
		ID: uuid.Must(uuid.NewV7()).String(), UserID: c.UserID, AppID: agent.AppID, AgentID: agent.ID,
		Status: store.StatusQueued, InputData: r.InputData, Priority: r.Priority, CreatedAt: s.now(),
		IdempotencyKey: r.IdempotencyKey, RequestHash: hash, APIKeyID: c.KeyID,
	}
	a.Context, _ = json.Marshal(r.Context)
	a.Metadata, _ = json.Marshal(r.Metadata)
	a.ChatID, _ = r.Context["chat_id"].(string)

	evs := []events.Event{s.event(events.ActivationCreated, a)}
	// Room on this process means the creating transaction claims the
	// activation and this process runs it (local.go).
	release := s.takeClaim()
	claimed := *a
	var run *tracked
	if release != nil {
		run = s.trackLocal(ctx, a.ID)
		claimed.Status, claimed.StartedAt, claimed.WorkerID, claimed.Attempt = store.StatusRunning, &a.CreatedAt, s.opts.WorkerID, 1
		evs = append(evs, s.event(events.ActivationStarted, &claimed))
	}
	ptrs := make([]*events.Event, len(evs))
	for i := range evs {
		ptrs[i] = &evs[i]
	}
	// The row and its events in one transaction; on PostgreSQL one
	// statement (store.ActivationCreateRecorded).
	err = s.Events.RecordWith(s.Store, func(rows []*store.EventRow) error {
		return s.Store.ActivationCreateRecorded(ctx, &claimed, rows...)
	}, ptrs...)
	if err != nil && release != nil {
		s.untrack(run)
		release()
	}
	if errors.Is(err, store.ErrConflict) && r.IdempotencyKey != "" {
		// A concurrent request with the same key won the insert: answer
		// with its activation, as if this one had come second.
		prior, ok, err := s.replay(ctx, c.UserID, r.IdempotencyKey, hash)
		if err == nil && !ok {
			err = apperr.New(apperr.Conflict, "A request with this Idempotency-Key is being processed")
		}
		return prior, ok, err
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, errAgentNotFound // deleted since it was read
	}
	if err != nil {
		return nil, false, err
	}
	if release != nil {
		s.runLocal(run, &claimed, agent, release)
	} else {
		// Left queued, with no job: a worker's dispatcher takes it.
		s.queued()
	}
	return a, false, nil
}

// checkInput refuses input_data that does not match the custom agent's
// input_schema, as a function's input is refused (a 400 naming the place,
// e.g. input_data.subject), before anything is recorded. Like a
// function's, the check is bounded by the agent's timeout and the
// request's context.
func (s *Service) checkInput(ctx context.Context, agent *store.Agent, input json.RawMessage) error {
	if len(agent.InputSchema) == 0 {
		return nil
	}
	timeout := time.Duration(max(agent.TimeoutSeconds, 1)) * time.Second
	vctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := s.schemas.Check(vctx, agent.ID, agent.UpdatedAt, agent.InputSchema, input, "input_data")
	if errors.Is(err, inputschema.ErrInterrupted) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return apperr.Invalid("input_data", fmt.Sprintf("Invalid value for field input_data: checking it against the agent's input_schema "+
			"took longer than the agent's timeout (%d s)", agent.TimeoutSeconds))
	}
	return err
}

// replay returns the activation an Idempotency-Key already names (ok), a
// 409 when the key was used with another request, or nothing when the key
// is new or its window is over.
func (s *Service) replay(ctx context.Context, userID, key, hash string) (*store.Activation, bool, error) {
	prior, err := s.Store.ActivationGetByIdempotencyKey(ctx, userID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if s.now().Sub(prior.CreatedAt) >= idempotencyWindow {
		return nil, false, s.Store.ActivationReleaseIdempotencyKey(ctx, userID, key, s.now().Add(-idempotencyWindow))
	}
	if prior.RequestHash != hash {
		return nil, false, apperr.New(apperr.Conflict, "Idempotency-Key was already used with a different request")
	}
	return prior, true, nil
}

// jobOpts places a resumed activation's job on the activations queue.
func jobOpts(priority int) *river.InsertOpts {
	return &river.InsertOpts{Queue: queue.Activations, Priority: priority, MaxAttempts: 10}
}

func validate(r *Request) error {
	if len(r.InputData) == 0 || string(r.InputData) == "null" {
		return apperr.Invalid("input_data", "Missing required field: input_data")
	}
	if !isObject(r.InputData) {
		return apperr.Invalid("input_data", "Invalid value for field input_data: expected object")
	}
	if r.Priority == 0 {
		r.Priority = 2
	}
	if r.Priority < 1 || r.Priority > 4 {
		return apperr.Invalid("priority", "Invalid value for field priority: expected 1 (most urgent) to 4")
	}
	if r.Context == nil {
		r.Context = map[string]any{}
	}
	if r.Metadata == nil {
		r.Metadata = map[string]any{}
	}
	if v, ok := r.Context["chat_id"]; ok {
		if s, isStr := v.(string); !isStr || s == "" || len(s) > 200 {
			return apperr.Invalid("context.chat_id", "Invalid value for field context.chat_id: expected a non-empty string")
		}
	}
	for _, k := range []string{"provider_id", "model", "system_prompt", "webhook_url"} {
		if v, ok := r.Metadata[k]; ok {
			if _, isStr := v.(string); !isStr {
				return apperr.Invalid("metadata."+k, "Invalid value for field metadata."+k+": expected string")
			}
		}
	}
	if v, ok := r.Metadata["temperature"]; ok {
		if t, isNum := v.(float64); !isNum || t < 0 || t > 2 {
			return apperr.Invalid("metadata.temperature", "Invalid value for field metadata.temperature: expected a number from 0 to 2")
		}
	}
	if v, ok := r.Metadata["max_tokens"]; ok {
		if n, isNum := v.(float64); !isNum || n < 1 || n != float64(int(n)) {
			return apperr.Invalid("metadata.max_tokens", "Invalid value for field metadata.max_tokens: expected a positive integer")
		}
	}
	if u, _ := r.Metadata["webhook_url"].(string); u != "" {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return apperr.Invalid("metadata.webhook_url", "Invalid value for field metadata.webhook_url: expected an absolute http(s) URL")
		}
	}
	return nil
}

// isObject reports whether doc is one JSON object: a scan, nothing is
// decoded.
func isObject(doc json.RawMessage) bool {
	i := 0
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i < len(doc) && doc[i] == '{' && json.Valid(doc)
}

// requestHash identifies a request for Idempotency-Key comparisons; only a
// request with a key needs one ("" otherwise). Equal requests must hash
// the same whatever their bytes (key order, spacing, 1.0 or 1), so the
// input is decoded once and hashed in the canonical form encoding/json
// writes (maps key-sorted): the same hash as before the input was kept as
// bytes, so keys used across an upgrade still match.
func requestHash(agentID string, r *Request) string {
	if r.IdempotencyKey == "" {
		return ""
	}
	var input any
	_ = json.Unmarshal(r.InputData, &input)
	b, _ := json.Marshal([]any{agentID, input, r.Context, r.Metadata, r.Priority})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Get returns an activation of the caller's (404 otherwise; admins with a
// reason through auth.Reach).
func (s *Service) Get(ctx context.Context, c *auth.Caller, id string) (*store.Activation, error) {
	if uuid.Validate(id) != nil {
		return nil, errActivationNotFound
	}
	a, err := s.Store.ActivationGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errActivationNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := s.Auth.Reach(ctx, c, auth.Resource{Type: "activation", ID: a.ID, OwnerID: a.UserID, AppID: a.AppID}, "activation.read", errActivationNotFound); err != nil {
		return nil, err
	}
	return a, nil
}

// Logs returns what the caller's activation id wrote (ctx.log,
// console.log, a thrown error's stack), in order: [{ts, level, message}],
// and whether the cap cut them short. An activation that wrote nothing
// (every LLM agent's) has none.
func (s *Service) Logs(ctx context.Context, c *auth.Caller, id string) (logs json.RawMessage, truncated bool, err error) {
	a, err := s.Get(ctx, c, id)
	if err != nil {
		return nil, false, err
	}
	l, err := s.Store.RunLogsGet(ctx, a.UserID, a.ID)
	if errors.Is(err, store.ErrNotFound) {
		return json.RawMessage("[]"), false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return l.Logs, l.Truncated, nil
}

// Cancel ends a queued or running activation as failed with "Activation
// cancelled" and stops its work: at once on this node, within a second on
// another.
func (s *Service) Cancel(ctx context.Context, a *store.Activation) (*store.Activation, error) {
	var out *store.Activation
	err := s.Store.InTx(ctx, func(tx *store.Store) error {
		done, ok, err := tx.ActivationCancel(ctx, a.ID, ErrCancelled, s.now())
		if err != nil || !ok {
			return err
		}
		out = done
		return s.endedTx(ctx, tx, done, nil)
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, apperr.Newf(apperr.Conflict, "Activation already %s", a.Status)
	}
	if r, ok := s.running.Load(a.ID); ok {
		r.(*tracked).cancel(errCancelled)
	}
	return out, nil
}

// List returns a page of the caller's activations that f selects. A key
// bound to one app lists that app's only; a filter on an app or an agent
// that is not the caller's (or not the bound key's) is a 404, as on their
// own routes.
func (s *Service) List(ctx context.Context, c *auth.Caller, f store.ActivationFilter) ([]store.Activation, int, error) {
	f.UserID = c.UserID
	app, err := s.Agents.ListApp(ctx, c, f.AppID)
	if err != nil {
		return nil, 0, err
	}
	f.AppID = app
	if f.AgentID != "" {
		if _, err := s.Agents.Agent(ctx, c, f.AgentID); err != nil {
			return nil, 0, err
		}
	}
	return s.Store.ActivationList(ctx, f)
}

// LastEventSeq is a seq up to which the caller's events are final (on
// SQLite, their latest event's; store.EventLastSeq): a page rendered after
// reading it connects its event socket with ?since= that seq, so what
// happened between its rendering and its connection is replayed, not lost
// (on PostgreSQL perhaps with a few events the page already shows).
func (s *Service) LastEventSeq(ctx context.Context, c *auth.Caller) (int64, error) {
	return s.Store.EventLastSeq(ctx, c.UserID)
}

// LastInput is the input of the caller's latest activation of agentID
// (nil before its first): where the UI's activate form starts.
func (s *Service) LastInput(ctx context.Context, c *auth.Caller, agentID string) (json.RawMessage, error) {
	return s.Store.ActivationLastInput(ctx, c.UserID, agentID)
}

// NormalizeStatus maps the alternate vocabulary (pending, processing) onto
// the stored one; unknown values are a 400 naming the field.
func NormalizeStatus(status string) (string, error) {
	switch status {
	case "pending":
		return store.StatusQueued, nil
	case "processing":
		return store.StatusRunning, nil
	case store.StatusQueued, store.StatusRunning, store.StatusCompleted, store.StatusFailed, store.StatusWaiting:
		return status, nil
	}
	return "", apperr.Invalid("status", "Invalid value for field status: expected queued, running, waiting, completed, failed, pending or processing")
}

// event builds the event of a; Seq is assigned by the bus.
func (s *Service) event(typ string, a *store.Activation) events.Event {
	ctxMap := map[string]any{}
	_ = json.Unmarshal(a.Context, &ctxMap)
	if a.AppID != "" {
		ctxMap["app_id"] = a.AppID
	}
	ev := events.Event{Type: typ, UserID: a.UserID, ActivationID: a.ID, AgentID: a.AgentID, Status: a.Status,
		Context: ctxMap, Timestamp: s.now()}
	if a.Status == store.StatusCompleted {
		ev.OutputData = a.OutputData
	}
	if a.Error != nil {
		ev.Error = *a.Error
	}
	return ev
}

// SetPaused pauses or resumes the activation queue on every worker: queued
// activations wait, nothing is lost.
func (s *Service) SetPaused(ctx context.Context, paused bool) error {
	l := s.local.Load()
	if l != nil {
		l.pauseMu.Lock()
		l.pauseGen++
		l.pausing++
		l.paused.Store(paused)
		l.pauseMu.Unlock()
		// Until the queue holds the change, a refresh (refreshPaused)
		// reads the state from before it and must not store that: an
		// undone pause let a run start at its creation.
		defer func() {
			l.pauseMu.Lock()
			l.pauseGen++
			l.pausing--
			l.pauseMu.Unlock()
		}()
		if !paused {
			l.poke()
		}
	}
	if paused {
		return s.Queue.Client().QueuePause(ctx, queue.Activations, nil)
	}
	return s.Queue.Client().QueueResume(ctx, queue.Activations, nil)
}

// Job is a queue job as the admin sees it: what it is, where it stands
// and when, never its arguments (an activation's input or the event it
// delivers, output included).
type Job struct {
	ID          int64
	Kind        string
	State       string
	Attempt     int
	MaxAttempts int
	Priority    int
	// ActivationID is the activation the job works for, if any.
	ActivationID string
	CreatedAt    time.Time
	ScheduledAt  time.Time
	AttemptedAt  *time.Time
	FinalizedAt  *time.Time
	Errors       []string
}

// Jobs lists queue jobs, optionally in one state, newest first.
func (s *Service) Jobs(ctx context.Context, state string, limit int) ([]Job, error) {
	params := river.NewJobListParams().First(limit).OrderBy(river.JobListOrderByID, river.SortOrderDesc)
	if state != "" {
		params = params.States(rivertype.JobState(state))
	}
	res, err := s.Queue.Client().JobList(ctx, params)
	if err != nil {
		return nil, err
	}
	jobs := make([]Job, 0, len(res.Jobs))
	for _, j := range res.Jobs {
		// Only the id is taken from the arguments; nothing else of them
		// leaves this function.
		var ref struct {
			ActivationID string `json:"activation_id"`
		}
		_ = json.Unmarshal(j.EncodedArgs, &ref)
		job := Job{ID: j.ID, Kind: j.Kind, State: string(j.State), Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
			Priority: j.Priority, ActivationID: ref.ActivationID, CreatedAt: j.CreatedAt, ScheduledAt: j.ScheduledAt,
			AttemptedAt: j.AttemptedAt, FinalizedAt: j.FinalizedAt, Errors: []string{}}
		for _, e := range j.Errors {
			job.Errors = append(job.Errors, e.Error)
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}
