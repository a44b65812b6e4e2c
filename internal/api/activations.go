package api

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Activation is the full activation record.
type Activation struct {
	ActivationID string          `json:"activation_id"`
	AgentID      string          `json:"agent_id"`
	AppID        *string         `json:"app_id"`
	Status       string          `json:"status" enum:"queued,running,completed,failed"`
	InputData    json.RawMessage `json:"input_data" doc:"Object"`
	Context      json.RawMessage `json:"context" doc:"Object: chat_id, session_id, app_id, free-form user context"`
	Metadata     json.RawMessage `json:"metadata" doc:"Object: provider_id, model, temperature, max_tokens, system_prompt, webhook_url, source"`
	Priority     int             `json:"priority" doc:"1 (most urgent) to 4"`
	CreatedAt    time.Time       `json:"created_at"`
	StartedAt    *time.Time      `json:"started_at"`
	CompletedAt  *time.Time      `json:"completed_at"`
	DurationMS   *int64          `json:"duration_ms"`
	OutputData   json.RawMessage `json:"output_data" doc:"LLM agents: {response, model, provider, usage, finish_reason}; null until completed"`
	Error        *string         `json:"error"`
}

func activationOut(a *store.Activation) Activation {
	out := Activation{ActivationID: a.ID, AgentID: a.AgentID, Status: a.Status, InputData: a.InputData,
		Context: a.Context, Metadata: a.Metadata, Priority: a.Priority, CreatedAt: a.CreatedAt,
		StartedAt: a.StartedAt, CompletedAt: a.CompletedAt, DurationMS: a.DurationMS, OutputData: a.OutputData, Error: a.Error}
	if a.AppID != "" {
		out.AppID = &a.AppID
	}
	if out.OutputData == nil {
		out.OutputData = json.RawMessage("null")
	}
	return out
}

// ActivateBody is shared by the activate forms.
type ActivateBody struct {
	InputData map[string]any `json:"input_data,omitempty" required:"true" doc:"The agent's input, e.g. {\"prompt\": \"…\"}"`
	Context   map[string]any `json:"context,omitempty" required:"false" doc:"chat_id (earlier turns of the chat are sent as history), session_id, anything else"`
	Metadata  map[string]any `json:"metadata,omitempty" required:"false" doc:"Per-activation overrides: provider_id, model, temperature, max_tokens, system_prompt; webhook_url to be called when it ends"`
	Priority  int            `json:"priority,omitempty" required:"false" minimum:"1" maximum:"4" doc:"1 (most urgent) to 4; default 2"`
}

func (b *ActivateBody) request(agentID, key string) activation.Request {
	r := activation.Request{AgentID: agentID, Context: b.Context, Metadata: b.Metadata, Priority: b.Priority, IdempotencyKey: key}
	if b.InputData != nil {
		r.InputData, _ = json.Marshal(b.InputData)
	}
	return r
}

// IdempotencyHeader is the optional Idempotency-Key of activate calls.
type IdempotencyHeader struct {
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"200" doc:"Repeat a request safely: within 24 h the same key and body return the first activation; another body is 409"`
}

// key is the optional Idempotency-Key, trimmed.
func (h IdempotencyHeader) key() string { return strings.TrimSpace(h.IdempotencyKey) }

type activateSimpleInput struct {
	AgentID string `path:"agent_id"`
	IdempotencyHeader
	Body struct {
		ActivateBody
		ContextType string `json:"context_type,omitempty" required:"false"`
	}
}

type activateSimpleOutput struct {
	Replayed string `header:"Idempotent-Replayed"`
	Body     struct {
		ActivationID string `json:"activation_id"`
		Status       string `json:"status" enum:"pending,processing,completed,failed"`
		Message      string `json:"message"`
	}
}

// aliasStatus is the simple form's vocabulary.
func aliasStatus(status string) string {
	switch status {
	case store.StatusQueued:
		return "pending"
	case store.StatusRunning:
		return "processing"
	}
	return status
}

func (a *API) activateSimple(ctx context.Context, in *activateSimpleInput) (*activateSimpleOutput, error) {
	act, replayed, err := a.Activations.Create(ctx, mustCaller(ctx), in.Body.request(in.AgentID, in.key()))
	if err != nil {
		return nil, err
	}
	out := &activateSimpleOutput{}
	out.Body.ActivationID, out.Body.Status = act.ID, aliasStatus(act.Status)
	out.Body.Message = "Activation queued; poll GET /api/v1/activations/" + act.ID + " or listen on /api/v1/ws"
	if replayed {
		out.Replayed = "true"
	}
	return out, nil
}

type activationOutput struct {
	Replayed string `header:"Idempotent-Replayed"`
	Body     Activation
}

func fullAnswer(act *store.Activation, replayed bool, err error) (*activationOutput, error) {
	if err != nil {
		return nil, err
	}
	out := &activationOutput{Body: activationOut(act)}
	if replayed {
		out.Replayed = "true"
	}
	return out, nil
}

type activateInAppInput struct {
	AppID   string `path:"app_id"`
	AgentID string `path:"agent_id"`
	IdempotencyHeader
	Body ActivateInAppBody
}

// ActivateInAppBody is the app-scoped form: input_data, or its alternate
// name input.
type ActivateInAppBody struct {
	ActivateBody
	Input map[string]any `json:"input,omitempty" required:"false" doc:"Alternate name of input_data"`
}

func (a *API) activateInApp(ctx context.Context, in *activateInAppInput) (*activationOutput, error) {
	if in.Body.InputData == nil {
		in.Body.InputData = in.Body.Input
	}
	r := in.Body.request(in.AgentID, in.key())
	r.AppID = in.AppID
	act, replayed, err := a.Activations.Create(ctx, mustCaller(ctx), r)
	return fullAnswer(act, replayed, err)
}

type createActivationInput struct {
	IdempotencyHeader
	Body struct {
		AgentID string `json:"agent_id"`
		ActivateBody
	}
}

func (a *API) createActivation(ctx context.Context, in *createActivationInput) (*activationOutput, error) {
	act, replayed, err := a.Activations.Create(ctx, mustCaller(ctx), in.Body.request(in.Body.AgentID, in.key()))
	return fullAnswer(act, replayed, err)
}

type activationIDInput struct {
	ActivationID string `path:"activation_id"`
}

func (a *API) getActivation(ctx context.Context, in *activationIDInput) (*activationOutput, error) {
	act, err := a.Activations.Get(ctx, mustCaller(ctx), in.ActivationID)
	return fullAnswer(act, false, err)
}

func (a *API) cancelActivation(ctx context.Context, in *activationIDInput) (*activationOutput, error) {
	act, err := a.Activations.Get(ctx, mustCaller(ctx), in.ActivationID)
	if err != nil {
		return nil, err
	}
	act, err = a.Activations.Cancel(ctx, act)
	return fullAnswer(act, false, err)
}

type appActivationInput struct {
	AppID        string `path:"app_id"`
	ActivationID string `path:"activation_id"`
}

func (a *API) getAppActivation(ctx context.Context, in *appActivationInput) (*activationOutput, error) {
	act, err := a.Activations.Get(ctx, mustCaller(ctx), in.ActivationID)
	if err == nil && act.AppID != in.AppID {
		err = apperr.NotFoundf("Activation not found")
	}
	return fullAnswer(act, false, err)
}

// Activation lists.

// ActivationListFilters are the filters every activation list takes.
type ActivationListFilters struct {
	PageParams
	Status string `query:"status" enum:"queued,running,completed,failed,pending,processing" doc:"pending and processing are aliases of queued and running"`
	ChatID string `query:"chat_id" doc:"Only this chat (context.chat_id)"`
}

type listActivationsInput struct {
	ActivationListFilters
	AgentID string `query:"agent_id"`
	AppID   string `query:"app_id"`
}

type agentActivationsInput struct {
	ActivationListFilters
	AgentID string `path:"agent_id"`
	Context string `query:"context" doc:"A JSON object; its chat_id filters, e.g. {\"chat_id\":\"c1\"}"`
}

type appActivationsInput struct {
	ActivationListFilters
	AppID   string `path:"app_id"`
	AgentID string `query:"agent_id"`
}

type listActivationsOutput struct {
	Body struct {
		Activations []Activation `json:"activations"`
		Page
	}
}

func (a *API) listActivations(ctx context.Context, in *listActivationsInput) (*listActivationsOutput, error) {
	return a.activationList(ctx, in.ActivationListFilters, store.ActivationFilter{AgentID: in.AgentID, AppID: in.AppID})
}

func (a *API) listAgentActivations(ctx context.Context, in *agentActivationsInput) (*listActivationsOutput, error) {
	c := mustCaller(ctx)
	if _, err := a.Activations.Agents.VisibleAgent(ctx, c, in.AgentID); err != nil {
		return nil, err
	}
	if in.Context != "" {
		var filter map[string]any
		if err := json.Unmarshal([]byte(in.Context), &filter); err != nil {
			return nil, apperr.Invalid("context", "Invalid value for field context: expected a JSON object, e.g. {\"chat_id\":\"c1\"}")
		}
		if chat, ok := filter["chat_id"].(string); ok && in.ChatID == "" {
			in.ChatID = chat
		}
	}
	return a.activationList(ctx, in.ActivationListFilters, store.ActivationFilter{AgentID: in.AgentID})
}

func (a *API) listAppActivations(ctx context.Context, in *appActivationsInput) (*listActivationsOutput, error) {
	if _, err := a.Activations.Agents.OwnedApp(ctx, mustCaller(ctx), in.AppID); err != nil {
		return nil, err
	}
	return a.activationList(ctx, in.ActivationListFilters, store.ActivationFilter{AppID: in.AppID, AgentID: in.AgentID})
}

func (a *API) activationList(ctx context.Context, in ActivationListFilters, f store.ActivationFilter) (*listActivationsOutput, error) {
	c := mustCaller(ctx)
	f.UserID, f.ChatID, f.Limit, f.Offset = c.UserID, in.ChatID, in.Limit, in.Offset
	if c.AppID != "" {
		if f.AppID != "" && f.AppID != c.AppID {
			return nil, apperr.Forbidden()
		}
		f.AppID = c.AppID
	}
	if in.Status != "" {
		st, err := activation.NormalizeStatus(in.Status)
		if err != nil {
			return nil, err
		}
		f.Statuses = []string{st}
	}
	list, total, err := a.Activations.List(ctx, f)
	if err != nil {
		return nil, err
	}
	out := &listActivationsOutput{}
	out.Body.Activations, out.Body.Page = mapAll(list, activationOut), in.page(total)
	return out, nil
}

// The worker endpoints.

type workerStatusOutput struct {
	Body struct {
		Workers []WorkerProcess `json:"workers"`
		Queue   struct {
			Queued  int `json:"queued"`
			Running int `json:"running"`
		} `json:"queue" doc:"Activations by state"`
		Throughput struct {
			LastMinute Throughput `json:"last_minute"`
			LastHour   Throughput `json:"last_hour"`
		} `json:"throughput"`
	}
}

// WorkerProcess is one worker process.
type WorkerProcess struct {
	ID          string    `json:"id"`
	Hostname    string    `json:"hostname"`
	PID         int       `json:"pid"`
	Version     string    `json:"version"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	Running     int       `json:"running" doc:"Activations running at the last heartbeat"`
	Concurrency int       `json:"concurrency"`
}

// Throughput counts ended activations.
type Throughput struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

func (a *API) workerStatus(ctx context.Context, _ *struct{}) (*workerStatusOutput, error) {
	st, err := a.Activations.Status(ctx)
	if err != nil {
		return nil, err
	}
	out := &workerStatusOutput{}
	out.Body.Workers = mapAll(st.Workers, func(w *store.Worker) WorkerProcess { return WorkerProcess(*w) })
	out.Body.Queue.Queued, out.Body.Queue.Running = st.Queued, st.Running
	out.Body.Throughput.LastMinute = Throughput{st.LastMinute[0], st.LastMinute[1]}
	out.Body.Throughput.LastHour = Throughput{st.LastHour[0], st.LastHour[1]}
	return out, nil
}

type workerPausedOutput struct {
	Body struct {
		Paused bool `json:"paused"`
	}
}

func (a *API) pauseWorker(ctx context.Context, _ *struct{}) (*workerPausedOutput, error) {
	return a.setPaused(ctx, true)
}

func (a *API) resumeWorker(ctx context.Context, _ *struct{}) (*workerPausedOutput, error) {
	return a.setPaused(ctx, false)
}

func (a *API) setPaused(ctx context.Context, paused bool) (*workerPausedOutput, error) {
	if err := a.Activations.SetPaused(ctx, paused); err != nil {
		return nil, err
	}
	out := &workerPausedOutput{}
	out.Body.Paused = paused
	return out, nil
}

type workerJobsInput struct {
	State string `query:"state" enum:"available,running,retryable,scheduled,completed,cancelled,discarded" doc:"Only jobs in this state"`
	Limit int    `query:"limit" minimum:"1" maximum:"1000" default:"50"`
}

// Job is a queue job.
type Job struct {
	ID          int64           `json:"id"`
	Kind        string          `json:"kind"`
	State       string          `json:"state" enum:"available,cancelled,completed,discarded,pending,retryable,running,scheduled"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	Priority    int             `json:"priority"`
	Args        json.RawMessage `json:"args"`
	CreatedAt   time.Time       `json:"created_at"`
	Errors      []string        `json:"errors"`
}

type workerJobsOutput struct {
	Body struct {
		Jobs []Job `json:"jobs"`
	}
}

func (a *API) workerJobs(ctx context.Context, in *workerJobsInput) (*workerJobsOutput, error) {
	jobs, err := a.Activations.Jobs(ctx, in.State, in.Limit)
	if err != nil {
		return nil, err
	}
	out := &workerJobsOutput{}
	out.Body.Jobs = mapAll(jobs, func(j *activation.Job) Job { return Job(*j) })
	return out, nil
}
