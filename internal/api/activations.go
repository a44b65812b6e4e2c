package api

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Activation is the full activation record.
type Activation struct {
	ActivationID string              `json:"activation_id"`
	AgentID      string              `json:"agent_id"`
	AppID        *string             `json:"app_id"`
	Status       string              `json:"status" enum:"queued,running,completed,failed"`
	InputData    json.RawMessage     `json:"input_data" doc:"Object"`
	Context      json.RawMessage     `json:"context" doc:"Object: chat_id, session_id, app_id, free-form user context"`
	Metadata     json.RawMessage     `json:"metadata" doc:"Object: provider_id, model, temperature, max_tokens, system_prompt, webhook_url, source. webhook_url: an http(s) URL POSTed the activation's final event when it ends (see GET /api/v1/activations/{id}/deliveries); not on a private address unless AP_EGRESS_ALLOW allows it; each attempt must be answered 2xx within 15 s"`
	Priority     int                 `json:"priority" doc:"1 (most urgent) to 4"`
	CreatedAt    time.Time           `json:"created_at"`
	StartedAt    *time.Time          `json:"started_at"`
	CompletedAt  *time.Time          `json:"completed_at"`
	DurationMS   *int64              `json:"duration_ms"`
	OutputData   json.RawMessage     `json:"output_data" doc:"LLM agents: {response, model, provider, usage, finish_reason}, and steps (their number) when the agent has tools; null until completed"`
	Error        *string             `json:"error"`
	Waiting      *activation.Waiting `json:"waiting" doc:"What the run waits for (a person's approval, or its caller's client tool results); null when it waits for nothing. Answer it with POST /api/v1/activations/{activation_id}/waitpoints/{waitpoint_id}."`
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
	if len(a.Waiting) > 0 {
		var w activation.Waiting
		if json.Unmarshal(a.Waiting, &w) == nil {
			out.Waiting = &w
		}
	}
	return out
}

// JSONObject is a JSON object kept as the bytes the client sent: the input
// of an activation goes to the store as it came, checked (huma validates
// the body against the object schema) but never decoded and re-encoded.
type JSONObject json.RawMessage

// UnmarshalJSON keeps a copy of the bytes (the decoder's buffer is
// reused); null is no object, as it was for the map.
func (o *JSONObject) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*o = nil
		return nil
	}
	*o = append((*o)[:0], b...)
	return nil
}

// MarshalJSON writes the bytes as they are; nil is null.
func (o JSONObject) MarshalJSON() ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	return o, nil
}

// Schema is that of the map[string]any it replaces: any object.
func (JSONObject) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeObject, AdditionalProperties: &huma.Schema{}}
}

// ActivateBody is shared by the activate forms.
type ActivateBody struct {
	InputData JSONObject     `json:"input_data,omitempty" required:"true" doc:"The agent's input, e.g. {\"prompt\": \"…\"}"`
	Context   map[string]any `json:"context,omitempty" required:"false" doc:"chat_id (earlier turns of the chat are sent as history), session_id, anything else"`
	Metadata  map[string]any `json:"metadata,omitempty" required:"false" doc:"Per-activation overrides: provider_id, model, temperature, max_tokens, system_prompt; webhook_url to be POSTed the final event when it ends (an http(s) URL, not on a private address unless AP_EGRESS_ALLOW allows it; each attempt must be answered 2xx within 15 s, redirects are not followed)"`
	Priority  int            `json:"priority,omitempty" required:"false" minimum:"1" maximum:"4" doc:"1 (most urgent) to 4; default 2"`
}

func (b *ActivateBody) request(agentID, key string) activation.Request {
	return activation.Request{AgentID: agentID, InputData: json.RawMessage(b.InputData), Context: b.Context, Metadata: b.Metadata,
		Priority: b.Priority, IdempotencyKey: key}
}

// IdempotencyHeader is the optional Idempotency-Key of activate calls.
type IdempotencyHeader struct {
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"200" doc:"Repeat a request safely: within 24 h the same key and body return the first activation; another body is 409"`
}

// key is the optional Idempotency-Key, trimmed.
func (h IdempotencyHeader) key() string { return strings.TrimSpace(h.IdempotencyKey) }

// PreferHeader is create-and-wait's request header (RFC 7240).
type PreferHeader struct {
	Prefer string `header:"Prefer" doc:"wait=N (whole seconds, at most 60; more is taken as 60): answer once the activation has ended or waits for an answer (an approval, client tool results), or after N s with its state then. Other preferences are ignored."`
}

// CreatedHeaders are the answer headers of every activate call.
type CreatedHeaders struct {
	Replayed          string `header:"Idempotent-Replayed" doc:"true when an Idempotency-Key replay answers with the first activation"`
	Location          string `header:"Location" doc:"The activation's URL"`
	PreferenceApplied string `header:"Preference-Applied" doc:"wait=N when the answer waited (Prefer: wait=N)"`
}

// activate creates the activation of an activate call and applies its
// Prefer: wait (or leaves it to createAndStream, for Accept:
// text/event-stream).
func (a *API) activate(ctx context.Context, p PreferHeader, r activation.Request) (*store.Activation, CreatedHeaders, error) {
	var h CreatedHeaders
	// Read before anything is created: a bad header creates nothing.
	wait, applied, err := preferWait(p.Prefer)
	if err != nil {
		return nil, h, err
	}
	act, replayed, err := a.Activations.Create(ctx, mustCaller(ctx), r)
	if err != nil {
		return nil, h, err
	}
	h.Location = activationPath + act.ID
	if replayed {
		h.Replayed = "true"
	}
	if streaming(ctx, act) || applied == "" {
		return act, h, nil
	}
	h.PreferenceApplied = applied
	act, err = a.Activations.Wait(ctx, act, wait)
	return act, h, err
}

// activationPath is the URL of an activation, without its id.
const activationPath = "/api/v1/activations/"

type activateSimpleInput struct {
	AgentID string `path:"agent_id"`
	IdempotencyHeader
	PreferHeader
	Body struct {
		ActivateBody
		ContextType string `json:"context_type,omitempty" required:"false"`
	}
}

type activateSimpleOutput struct {
	CreatedHeaders
	Body struct {
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
	act, h, err := a.activate(ctx, in.PreferHeader, in.Body.request(in.AgentID, in.key()))
	if err != nil {
		return nil, err
	}
	out := &activateSimpleOutput{CreatedHeaders: h}
	out.Body.ActivationID, out.Body.Status = act.ID, aliasStatus(act.Status)
	out.Body.Message = "Activation queued; poll GET " + activationPath + act.ID + " or listen on /api/v1/ws"
	if act.Status != store.StatusQueued {
		out.Body.Message = "Activation " + aliasStatus(act.Status) + "; GET " + activationPath + act.ID + " has the full record"
	}
	return out, nil
}

// activationOutput answers with an activation that exists already (the
// activate calls answer createdOutput, with its headers).
type activationOutput struct {
	Body Activation
}

func fullAnswer(act *store.Activation, err error) (*activationOutput, error) {
	if err != nil {
		return nil, err
	}
	return &activationOutput{Body: activationOut(act)}, nil
}

type activateInAppInput struct {
	AppID   string `path:"app_id"`
	AgentID string `path:"agent_id"`
	IdempotencyHeader
	PreferHeader
	Body ActivateInAppBody
}

// ActivateInAppBody is the app-scoped form: input_data, or its alternate
// name input.
type ActivateInAppBody struct {
	ActivateBody
	Input JSONObject `json:"input,omitempty" required:"false" doc:"Alternate name of input_data"`
}

func (a *API) activateInApp(ctx context.Context, in *activateInAppInput) (*createdOutput, error) {
	if in.Body.InputData == nil {
		in.Body.InputData = in.Body.Input
	}
	r := in.Body.request(in.AgentID, in.key())
	r.AppID = in.AppID
	return createdAnswer(a.activate(ctx, in.PreferHeader, r))
}

// createdOutput is the answer of the full activate forms.
type createdOutput struct {
	CreatedHeaders
	Body Activation
}

func createdAnswer(act *store.Activation, h CreatedHeaders, err error) (*createdOutput, error) {
	if err != nil {
		return nil, err
	}
	return &createdOutput{CreatedHeaders: h, Body: activationOut(act)}, nil
}

type createActivationInput struct {
	IdempotencyHeader
	PreferHeader
	Body struct {
		AgentID string `json:"agent_id"`
		ActivateBody
	}
}

func (a *API) createActivation(ctx context.Context, in *createActivationInput) (*createdOutput, error) {
	return createdAnswer(a.activate(ctx, in.PreferHeader, in.Body.request(in.Body.AgentID, in.key())))
}

type activationIDInput struct {
	ActivationID string `path:"activation_id"`
}

func (a *API) getActivation(ctx context.Context, in *activationIDInput) (*activationOutput, error) {
	act, err := a.Activations.Get(ctx, mustCaller(ctx), in.ActivationID)
	return fullAnswer(act, err)
}

func (a *API) cancelActivation(ctx context.Context, in *activationIDInput) (*activationOutput, error) {
	act, err := a.Activations.Get(ctx, mustCaller(ctx), in.ActivationID)
	if err != nil {
		return nil, err
	}
	act, err = a.Activations.Cancel(ctx, act)
	return fullAnswer(act, err)
}

type activationLogsOutput struct {
	Body struct {
		Logs      []executor.LogLine `json:"logs" doc:"In the order written: ctx.log and console.log lines, and a thrown error's stack"`
		Truncated bool               `json:"truncated" doc:"The run wrote more than the log cap (256 KiB); the rest was dropped"`
	}
}

func (a *API) activationLogs(ctx context.Context, in *activationIDInput) (*activationLogsOutput, error) {
	raw, truncated, err := a.Activations.Logs(ctx, mustCaller(ctx), in.ActivationID)
	if err != nil {
		return nil, err
	}
	out := &activationLogsOutput{}
	if err := json.Unmarshal(raw, &out.Body.Logs); err != nil {
		return nil, err
	}
	if out.Body.Logs == nil {
		out.Body.Logs = []executor.LogLine{}
	}
	out.Body.Truncated = truncated
	return out, nil
}

type activationStepsInput struct {
	ActivationID string `path:"activation_id"`
	PageParams
}

type activationStepsOutput struct {
	Body struct {
		Steps []activation.RunStep `json:"steps" doc:"In order: each LLM answer, each tool call, each wait"`
		Page
	}
}

func (a *API) activationSteps(ctx context.Context, in *activationStepsInput) (*activationStepsOutput, error) {
	steps, total, err := a.Activations.Steps(ctx, mustCaller(ctx), in.ActivationID, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	out := &activationStepsOutput{}
	out.Body.Steps = mapAll(steps, activation.StepOf)
	out.Body.Page = in.page(total)
	return out, nil
}

type answerWaitInput struct {
	ActivationID string `path:"activation_id"`
	WaitpointID  string `path:"waitpoint_id"`
	Body         activation.WaitAnswer
}

func (a *API) answerWait(ctx context.Context, in *answerWaitInput) (*activationOutput, error) {
	act, err := a.Activations.AnswerWait(ctx, mustCaller(ctx), in.ActivationID, in.WaitpointID, in.Body)
	return fullAnswer(act, err)
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
	return fullAnswer(act, err)
}

// Activation lists.

// ActivationListFilters are the filters every activation list takes.
type ActivationListFilters struct {
	PageParams
	Status string `query:"status" enum:"queued,running,waiting,completed,failed,pending,processing" doc:"pending and processing are aliases of queued and running; waiting selects the running activations that wait for an answer"`
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
	// The domain's list checks the app (404 when not the caller's).
	return a.activationList(ctx, in.ActivationListFilters, store.ActivationFilter{AppID: in.AppID, AgentID: in.AgentID})
}

func (a *API) activationList(ctx context.Context, in ActivationListFilters, f store.ActivationFilter) (*listActivationsOutput, error) {
	f.ChatID, f.Limit, f.Offset = in.ChatID, in.Limit, in.Offset
	if in.Status != "" {
		st, err := activation.NormalizeStatus(in.Status)
		if err != nil {
			return nil, err
		}
		f.Statuses = []string{st}
	}
	list, total, err := a.Activations.List(ctx, mustCaller(ctx), f)
	if err != nil {
		return nil, err
	}
	out := &listActivationsOutput{}
	out.Body.Activations, out.Body.Page = mapAll(list, activationOut), in.pageOf(total, len(list))
	return out, nil
}

// The worker endpoints.

type workerStatusOutput struct {
	Body struct {
		// A pointer: absent for non-admins, [] for an admin when no worker
		// runs.
		Workers *[]WorkerProcess `json:"workers,omitempty" required:"false" doc:"Admins only: the worker processes with host, pid and heartbeat"`
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
	Concurrency int       `json:"concurrency" doc:"Activations it holds in flight at once (AP_MAX_INFLIGHT)"`
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
	if mustCaller(ctx).CanAdmin() {
		workers := mapAll(st.Workers, func(w *store.Worker) WorkerProcess { return WorkerProcess(*w) })
		out.Body.Workers = &workers
	}
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

// Job is a queue job: what it is, where it stands and when. Its arguments
// (an activation's input, a delivery's event) are never shown.
type Job struct {
	ID           int64      `json:"id"`
	Kind         string     `json:"kind" doc:"activation, webhook_delivery, or a maintenance job"`
	State        string     `json:"state" enum:"available,cancelled,completed,discarded,pending,retryable,running,scheduled"`
	Attempt      int        `json:"attempt"`
	MaxAttempts  int        `json:"max_attempts"`
	Priority     int        `json:"priority"`
	ActivationID string     `json:"activation_id,omitempty" required:"false" doc:"The activation the job works for"`
	CreatedAt    time.Time  `json:"created_at"`
	ScheduledAt  time.Time  `json:"scheduled_at" doc:"When it is (or was) due"`
	AttemptedAt  *time.Time `json:"attempted_at" doc:"The start of the last attempt; null before the first"`
	FinalizedAt  *time.Time `json:"finalized_at" doc:"When it reached a final state; null before"`
	Errors       []string   `json:"errors" doc:"The error of each failed attempt, oldest first"`
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
