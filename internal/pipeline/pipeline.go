// Package pipeline owns apps' pipelines and their runs: a sequence of
// agent and function steps whose inputs are JSON templates over the run's
// input and the earlier steps' outputs. A run is asynchronous, each step
// its own River job, so a crash resumes at the step it stopped at: a
// function step runs in its job and moves the run on in one transaction; an
// agent step starts an activation and the activation's end (an end hook,
// in the transaction recording that end) moves the run on. A failing step
// fails the run; the steps after it are skipped.
//
// A step's job claims the step for its worker process while it runs it; the
// activation reaper (a worker silent for 30 s is dead; on SQLite, any
// worker but the one process that serves it) hands a dead
// worker's steps back with a fresh job, as it does its activations, and a
// duplicate delivery of a claimed step does nothing. A function step has one
// execution, keyed by run and step.
package pipeline

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/fairshare"
	"github.com/agentplatform/agentplatform/internal/function"
	"github.com/agentplatform/agentplatform/internal/queue"
	"github.com/agentplatform/agentplatform/internal/quota"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Statuses of a run and of its steps.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusSkipped   = "skipped"
)

// Event types of runs.
const (
	EventStarted   = "pipeline_run_started"
	EventCompleted = "pipeline_run_completed"
	EventFailed    = "pipeline_run_failed"
)

// Queue is the River queue of step jobs.
const Queue = "pipelines"

// Apps resolves the caller's apps (apps.Service).
type Apps interface {
	OwnedApp(ctx context.Context, c *auth.Caller, appID string) (*store.App, error)
	ManagedApp(ctx context.Context, c *auth.Caller, appID string) (*store.App, error)
	ListApp(ctx context.Context, c *auth.Caller, appID string) (string, error)
}

// Activations starts an agent step's activation, and names this worker
// process, whose heartbeat covers the steps it claims (activation.Service).
type Activations interface {
	Create(ctx context.Context, c *auth.Caller, r activation.Request) (*store.Activation, bool, error)
	WorkerID() string
}

// Functions runs a function step (function.Service).
type Functions interface {
	ExecuteStep(ctx context.Context, userID, appID, ref string, step function.Step, input json.RawMessage) (*function.Execution, error)
}

// Budgets refuses a run while a budget that applies to it — the user's,
// the app's, the starting key's (0: none) — is spent (usage.Service.Admit).
type Budgets interface {
	Admit(ctx context.Context, userID, appID string, keyID int64) error
}

// EventBus records events in a transaction (events.Bus).
type EventBus interface {
	Record(ctx context.Context, tx *store.Store, evs ...*events.Event) error
}

// Service is the pipelines domain.
type Service struct {
	// Quotas bound a pipeline's steps (AP_QUOTA_PIPELINE_STEPS); New sets
	// the defaults.
	Quotas quota.Limits
	// Budgets refuses to start a run while a budget that applies to it is
	// spent (429); nil checks none. Its steps' activations and LLM calls
	// are checked as every one is.
	Budgets   Budgets
	store     *store.Store
	auth      *auth.Service
	apps      Apps
	acts      Activations
	functions Functions
	events    EventBus
	queue     *queue.Queue
	log       *slog.Logger
	now       func() time.Time
	// slots share the step workers fairly between users: a function step
	// may spin until its timeout, and one user's must not hold them all.
	slots *fairshare.Pool
	// running holds the steps this process runs ("run/step"): a second
	// delivery of one, here, does nothing.
	running sync.Map
}

// workers is how many steps one process runs at once.
const workers = 10

// New returns the service and registers its step worker; call before the
// queue starts.
func New(st *store.Store, a *auth.Service, ap Apps, acts Activations, fns Functions, bus EventBus, q *queue.Queue, log *slog.Logger) *Service {
	s := &Service{store: st, auth: a, apps: ap, acts: acts, functions: fns, events: bus, queue: q, log: log, now: store.Now,
		Quotas: quota.Defaults(), slots: fairshare.Shared(workers)}
	q.AddQueue(Queue, workers+fairshare.Overdraft(workers)) // the slots lend a few: workers to fetch their jobs
	queue.AddWorker(q, &stepWorker{svc: s})
	return s
}

var (
	errPipelineNotFound = apperr.NotFoundf("Pipeline not found")
	errRunNotFound      = apperr.NotFoundf("Pipeline run not found")
)

// Get returns the caller's pipeline id.
func (s *Service) Get(ctx context.Context, c *auth.Caller, id string) (*store.Pipeline, error) {
	return auth.Find(ctx, s.auth, c, id, s.store.PipelineGet, func(p *store.Pipeline) auth.Resource {
		return auth.Resource{Type: "pipeline", ID: p.ID, OwnerID: p.UserID, AppID: p.AppID}
	}, "pipeline.read", errPipelineNotFound)
}

// List returns a page of the caller's pipelines (of app appID when set).
func (s *Service) List(ctx context.Context, c *auth.Caller, appID string, limit, offset int) ([]store.Pipeline, int, error) {
	appID, err := s.apps.ListApp(ctx, c, appID)
	if err != nil {
		return nil, 0, err
	}
	return s.store.PipelineListByUser(ctx, c.UserID, appID, limit, offset)
}

// decode validates a pipeline against its app: the manifest's rules, refs
// that name the app's agents and functions (by name or id), and templates
// that name only the run's input and earlier steps.
func (s *Service) decode(ctx context.Context, appID string, body map[string]any) (*apps.PipelineSpec, error) {
	refs := apps.Refs{Known: map[string]map[string]bool{"agent": {}, "function": {}}, InApp: true}
	agents, err := s.store.AgentListByApp(ctx, appID)
	if err != nil {
		return nil, err
	}
	for _, a := range agents {
		refs.Known["agent"][a.Name], refs.Known["agent"][a.ID] = true, true
	}
	fns, err := s.store.FunctionListByApp(ctx, appID)
	if err != nil {
		return nil, err
	}
	for _, f := range fns {
		refs.Known["function"][f.Name], refs.Known["function"][f.ID] = true, true
	}
	spec, err := apps.DecodePipeline(body, refs)
	if err != nil {
		return nil, err
	}
	if err := s.Quotas.Check(quota.PipelineSteps, len(spec.Steps), "steps"); err != nil {
		return nil, err
	}
	return spec, nil
}

// Create makes a pipeline in the caller's app body["app_id"].
func (s *Service) Create(ctx context.Context, c *auth.Caller, body map[string]any) (*store.Pipeline, error) {
	appID, err := apps.BodyAppID(body)
	if err != nil {
		return nil, err
	}
	var p *store.Pipeline
	err = apps.CreatePart(ctx, s.apps, c, appID, "pipeline", func(app *store.App) (string, error) {
		spec, err := s.decode(ctx, app.ID, body)
		if err != nil {
			return "", err
		}
		steps, _ := json.Marshal(spec.Steps)
		now := s.now()
		p = &store.Pipeline{ID: uuid.Must(uuid.NewV7()).String(), AppID: app.ID, UserID: app.UserID, Name: spec.Name,
			Description: spec.Description, Steps: steps, CreatedAt: now, UpdatedAt: now}
		return p.Name, s.store.PipelineCreate(ctx, p)
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Update changes any of a pipeline's name, description and steps; runs
// under way keep the steps they started with.
func (s *Service) Update(ctx context.Context, c *auth.Caller, id string, patch map[string]any) (*store.Pipeline, error) {
	p, err := s.Get(ctx, c, id)
	if err != nil {
		return nil, err
	}
	cur := map[string]any{"name": p.Name, "description": p.Description, "steps": p.Steps}
	err = apps.UpdatePart(ctx, s.apps, c, p.AppID, "pipeline", cur, patch, func(merged map[string]any) (string, error) {
		spec, err := s.decode(ctx, p.AppID, merged)
		if err != nil {
			return "", err
		}
		p.Name, p.Description, p.UpdatedAt = spec.Name, spec.Description, s.now()
		p.Steps, _ = json.Marshal(spec.Steps)
		return p.Name, s.store.PipelineUpdate(ctx, p)
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Delete deletes a pipeline and its runs.
func (s *Service) Delete(ctx context.Context, c *auth.Caller, id string) error {
	p, err := s.Get(ctx, c, id)
	if err != nil {
		return err
	}
	return apps.DeletePart(ctx, s.apps, c, p.AppID, func() error { return s.store.PipelineDelete(ctx, p.ID) })
}

// StepState is a step of a run, as answered.
type StepState struct {
	ID           string          `json:"id"`
	Type         string          `json:"type" enum:"agent,function"`
	Ref          string          `json:"ref"`
	Status       string          `json:"status" enum:"queued,running,completed,failed,skipped"`
	ActivationID string          `json:"activation_id,omitempty"`
	ExecutionID  string          `json:"execution_id,omitempty"`
	Output       json.RawMessage `json:"output"`
	Error        *string         `json:"error"`
}

// Run is a pipeline run, as answered.
type Run struct {
	RunID      string          `json:"run_id"`
	PipelineID string          `json:"pipeline_id"`
	AppID      string          `json:"app_id"`
	Status     string          `json:"status" enum:"queued,running,completed,failed"`
	Input      json.RawMessage `json:"input"`
	Steps      []StepState     `json:"steps"`
	Output     json.RawMessage `json:"output"`
	Error      *string         `json:"error"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

func runOut(r *store.PipelineRun) *Run {
	out := &Run{RunID: r.ID, PipelineID: r.PipelineID, AppID: r.AppID, Status: r.Status, Input: r.Input, Output: r.Output,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Steps: []StepState{}}
	_ = json.Unmarshal(r.Steps, &out.Steps)
	for i := range out.Steps {
		if len(out.Steps[i].Output) == 0 {
			out.Steps[i].Output = json.RawMessage("null")
		}
	}
	if len(out.Output) == 0 {
		out.Output = json.RawMessage("null")
	}
	if r.Error != "" {
		e := r.Error
		out.Error = &e
	}
	return out
}

// Start runs the caller's pipeline id with input, asynchronously: the run
// and its first step's job are committed together.
func (s *Service) Start(ctx context.Context, c *auth.Caller, id string, input json.RawMessage) (*Run, error) {
	p, err := s.Get(ctx, c, id)
	if err != nil {
		return nil, err
	}
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}")
	}
	if s.Budgets != nil {
		if err := s.Budgets.Admit(ctx, p.UserID, p.AppID, c.KeyID); err != nil {
			return nil, err
		}
	}
	var def []apps.Step
	_ = json.Unmarshal(p.Steps, &def)
	states := make([]StepState, len(def))
	for i, st := range def {
		states[i] = StepState{ID: st.ID, Type: st.Type, Ref: st.Ref, Status: StatusQueued}
	}
	steps, _ := json.Marshal(states)
	now := s.now()
	r := &store.PipelineRun{ID: uuid.Must(uuid.NewV7()).String(), PipelineID: p.ID, AppID: p.AppID, UserID: p.UserID,
		Status: StatusQueued, Input: input, Definition: p.Steps, Steps: steps, CreatedAt: now, UpdatedAt: now, APIKeyID: c.KeyID}
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.PipelineRunCreate(ctx, r); err != nil {
			return err
		}
		return s.enqueue(ctx, tx, r, 0)
	})
	if err != nil {
		return nil, err
	}
	return runOut(r), nil
}

func (s *Service) enqueue(ctx context.Context, tx *store.Store, r *store.PipelineRun, step int) error {
	_, err := s.queue.InsertTx(ctx, tx, StepArgs{RunID: r.ID, Step: step, UserID: r.UserID}, &river.InsertOpts{Queue: Queue, MaxAttempts: 5})
	return err
}

// GetRun returns the caller's run id.
func (s *Service) GetRun(ctx context.Context, c *auth.Caller, id string) (*Run, error) {
	r, err := auth.Find(ctx, s.auth, c, id, s.store.PipelineRunGet, func(r *store.PipelineRun) auth.Resource {
		return auth.Resource{Type: "pipeline_run", ID: r.ID, OwnerID: r.UserID, AppID: r.AppID}
	}, "pipeline.read", errRunNotFound)
	if err != nil {
		return nil, err
	}
	return runOut(r), nil
}

// Runs returns a page of the runs of the caller's pipeline, newest first.
func (s *Service) Runs(ctx context.Context, c *auth.Caller, pipelineID string, limit, offset int) ([]*Run, int, error) {
	p, err := s.Get(ctx, c, pipelineID)
	if err != nil {
		return nil, 0, err
	}
	rows, total, err := s.store.PipelineRunList(ctx, p.UserID, p.ID, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*Run, len(rows))
	for i := range rows {
		out[i] = runOut(&rows[i])
	}
	return out, total, nil
}
