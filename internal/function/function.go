// Package function owns apps' functions: JavaScript run on demand with a
// JSON input checked against the function's JSON Schema, each run recorded
// as an execution (status, output, error, logs, duration). Functions run in
// the caller's request (the JavaScript executor, under the function's
// timeout) and as pipeline steps.
package function

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/cleantext"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/inputschema"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Apps resolves the caller's apps (apps.Service).
type Apps interface {
	OwnedApp(ctx context.Context, c *auth.Caller, appID string) (*store.App, error)
	ManagedApp(ctx context.Context, c *auth.Caller, appID string) (*store.App, error)
	ListApp(ctx context.Context, c *auth.Caller, appID string) (string, error)
}

// Budgets refuses a run while a budget that applies to it — the user's,
// the app's, the calling key's (0: none) — is spent (usage.Service.Admit).
type Budgets interface {
	Admit(ctx context.Context, userID, appID string, keyID int64) error
}

// Service is the functions domain.
type Service struct {
	// Budgets refuses a direct execution while a budget that applies to
	// it is spent (429); nil checks none. Its LLM calls are checked one by
	// one all the same, as every run's are.
	Budgets Budgets

	store *store.Store
	auth  *auth.Service
	apps  Apps
	run   executor.Executor
	now   func() time.Time

	schemas inputschema.Cache
}

// New returns the service; run is the JavaScript executor.
func New(st *store.Store, a *auth.Service, ap Apps, run executor.Executor) *Service {
	return &Service{store: st, auth: a, apps: ap, run: run, now: store.Now}
}

// Statuses of an execution.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

var errFunctionNotFound = apperr.NotFoundf("Function not found")

// Get returns the caller's function id.
func (s *Service) Get(ctx context.Context, c *auth.Caller, id string) (*store.Function, error) {
	return auth.Find(ctx, s.auth, c, id, s.store.FunctionGet, func(f *store.Function) auth.Resource {
		return auth.Resource{Type: "function", ID: f.ID, OwnerID: f.UserID, AppID: f.AppID}
	}, "function.read", errFunctionNotFound)
}

// List returns a page of the caller's functions (of app appID when set).
func (s *Service) List(ctx context.Context, c *auth.Caller, appID string, limit, offset int) ([]store.Function, int, error) {
	appID, err := s.apps.ListApp(ctx, c, appID)
	if err != nil {
		return nil, 0, err
	}
	return s.store.FunctionListByUser(ctx, c.UserID, appID, limit, offset)
}

// decode validates a function's fields (the manifest's rules, which
// include that its schema compiles within its bounds).
func decode(body map[string]any) (*apps.FunctionSpec, error) {
	return apps.DecodeFunction(body)
}

// Create makes a function in the caller's app body["app_id"].
func (s *Service) Create(ctx context.Context, c *auth.Caller, body map[string]any) (*store.Function, error) {
	appID, err := apps.BodyAppID(body)
	if err != nil {
		return nil, err
	}
	var f *store.Function
	err = apps.CreatePart(ctx, s.apps, c, appID, "function", func(app *store.App) (string, error) {
		spec, err := decode(body)
		if err != nil {
			return "", err
		}
		now := s.now()
		f = &store.Function{ID: uuid.Must(uuid.NewV7()).String(), AppID: app.ID, UserID: app.UserID, Name: spec.Name, Description: spec.Description,
			Code: spec.Code, InputSchema: spec.InputSchema, TimeoutSeconds: spec.TimeoutSeconds, CreatedAt: now, UpdatedAt: now}
		return f.Name, s.store.FunctionCreate(ctx, f)
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Update changes any of a function's name, description, code,
// input_schema and timeout_seconds; the result is validated whole.
func (s *Service) Update(ctx context.Context, c *auth.Caller, id string, patch map[string]any) (*store.Function, error) {
	f, err := s.Get(ctx, c, id)
	if err != nil {
		return nil, err
	}
	cur := map[string]any{"name": f.Name, "description": f.Description, "code": f.Code,
		"input_schema": f.InputSchema, "timeout_seconds": f.TimeoutSeconds}
	err = apps.UpdatePart(ctx, s.apps, c, f.AppID, "function", cur, patch, func(merged map[string]any) (string, error) {
		spec, err := decode(merged)
		if err != nil {
			return "", err
		}
		f.Name, f.Description, f.Code, f.InputSchema, f.TimeoutSeconds = spec.Name, spec.Description, spec.Code, spec.InputSchema, spec.TimeoutSeconds
		f.UpdatedAt = s.now()
		return f.Name, s.store.FunctionUpdate(ctx, f)
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Delete deletes a function and its executions.
func (s *Service) Delete(ctx context.Context, c *auth.Caller, id string) error {
	f, err := s.Get(ctx, c, id)
	if err != nil {
		return err
	}
	return apps.DeletePart(ctx, s.apps, c, f.AppID, func() error { return s.store.FunctionDelete(ctx, f.ID) })
}

// Execution is one run of a function, as answered.
type Execution struct {
	ExecutionID   string             `json:"execution_id"`
	FunctionID    string             `json:"function_id"`
	Status        string             `json:"status"`
	Output        json.RawMessage    `json:"output"`
	Error         *string            `json:"error"`
	Logs          []executor.LogLine `json:"logs"`
	LogsTruncated bool               `json:"logs_truncated"`
	DurationMS    int64              `json:"duration_ms"`
	CreatedAt     time.Time          `json:"created_at"`
}

// Execute runs the caller's function id with input; appID, when given (the
// app-scoped route), must be the function's app.
func (s *Service) Execute(ctx context.Context, c *auth.Caller, appID, id string, input json.RawMessage) (*Execution, error) {
	f, err := s.Get(ctx, c, id)
	if err == nil && appID != "" && f.AppID != appID {
		err = errFunctionNotFound
	}
	if err != nil {
		return nil, err
	}
	if s.Budgets != nil {
		if err := s.Budgets.Admit(ctx, f.UserID, f.AppID, c.KeyID); err != nil {
			return nil, err
		}
	}
	return s.execute(ctx, f, input, nil, c.KeyID)
}

// Step names the pipeline step an execution runs for, and the API key its
// run was started with (0: none), which the step's LLM calls count to.
type Step struct {
	RunID, StepID string
	APIKeyID      int64
}

// ExecuteStep runs the function called ref (its name, or its id) of the
// user's app, as step of a pipeline run does. A step has one execution:
// one recorded already (the step delivered again after its worker died
// between the execution's record and the step's) is answered as it is,
// never run again. A run its worker never recorded runs again, under the
// same execution id (ctx.execution.execution_id): the function's own side
// effects are at-least-once, and may use that id to be idempotent.
func (s *Service) ExecuteStep(ctx context.Context, userID, appID, ref string, step Step, input json.RawMessage) (*Execution, error) {
	return s.executeOnce(ctx, userID, appID, ref, origin{step: &step}, input)
}

// RunTool runs the function called ref (its name, or its id) of the
// user's app for an agent's tool call, keyed by the call's idempotency key
// ({activation_id}:{tool_call_id}), as ExecuteStep is by its step: the
// call's execution recorded once is answered again, never run again; one
// never recorded runs again under the same execution id, the code seeing
// the key as ctx.execution.idempotency_key. The result is the output; an
// input that fails the function's input_schema is a validation error, and
// a failed execution an error whose text is the function's error.
func (s *Service) RunTool(ctx context.Context, userID, appID, ref, idempotencyKey string, apiKeyID int64, input json.RawMessage) (json.RawMessage, error) {
	if idempotencyKey == "" {
		return nil, errors.New("function: a tool call needs its idempotency key")
	}
	e, err := s.executeOnce(ctx, userID, appID, ref, origin{key: idempotencyKey, apiKeyID: apiKeyID}, input)
	if err != nil {
		return nil, err
	}
	if e.Error != nil {
		return nil, errors.New(*e.Error)
	}
	return e.Output, nil
}

// origin is what an execution runs for, when it must run once: a pipeline
// step or a tool call (by its idempotency key, its LLM calls counting to
// apiKeyID, its activation's key); neither for a plain execution.
type origin struct {
	step     *Step
	key      string
	apiKeyID int64
}

// executionID is the execution id of o: the same for every delivery of
// the step, every try of the call.
func (o origin) executionID() string {
	if o.step != nil {
		return uuid.NewSHA1(uuid.NameSpaceURL, []byte("pipeline-step:"+o.step.RunID+"/"+o.step.StepID)).String()
	}
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("tool-call:"+o.key)).String()
}

// recorded is o's execution when one was recorded, else ErrNotFound.
func (s *Service) recorded(ctx context.Context, o origin) (*store.Execution, error) {
	if o.step != nil {
		return s.store.ExecutionGetByStep(ctx, o.step.RunID, o.step.StepID)
	}
	return s.store.ExecutionGet(ctx, o.executionID())
}

// executeOnce runs the function ref of the user's app for o unless o's
// execution is recorded already, which is then the answer.
func (s *Service) executeOnce(ctx context.Context, userID, appID, ref string, o origin, input json.RawMessage) (*Execution, error) {
	f, err := s.store.FunctionGetByName(ctx, appID, ref)
	if errors.Is(err, store.ErrNotFound) && uuid.Validate(ref) == nil {
		f, err = s.store.FunctionGet(ctx, ref)
	}
	if errors.Is(err, store.ErrNotFound) || (err == nil && (f.AppID != appID || f.UserID != userID)) {
		return nil, apperr.NotFoundf("Function %q not found in the app", ref)
	}
	if err != nil {
		return nil, err
	}
	if e, err := s.recorded(ctx, o); err == nil {
		return answer(e, nil), nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	keyID := o.apiKeyID
	if o.step != nil {
		keyID = o.step.APIKeyID
	}
	return s.execute(ctx, f, input, &o, keyID)
}

// execute runs f with input; o, when not nil, is what the execution runs
// for; its LLM calls count to API key keyID (0: none).
func (s *Service) execute(ctx context.Context, f *store.Function, input json.RawMessage, o *origin, keyID int64) (*Execution, error) {
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	e := &store.Execution{ID: uuid.Must(uuid.NewV7()).String(), FunctionID: f.ID, AppID: f.AppID, UserID: f.UserID, Input: input, CreatedAt: s.now()}
	key := ""
	if o != nil {
		e.ID, key = o.executionID(), o.key
		if o.step != nil {
			e.PipelineRunID, e.PipelineStep = o.step.RunID, o.step.StepID
		}
	}
	timeout := time.Duration(max(f.TimeoutSeconds, 1)) * time.Second
	// The input's validation is part of the run: it stops at the run's
	// timeout and when the caller goes away (a schema may be costly).
	runCtx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	var res *executor.Result
	runErr := s.validate(runCtx, f, input)
	if _, invalid := apperr.As(runErr); invalid {
		cancel()
		return nil, runErr // the input does not match the schema: no run
	}
	if runErr == nil {
		cfg, _ := json.Marshal(map[string]string{"runtime": "javascript", "code": f.Code})
		res, runErr = s.run.Execute(runCtx, &executor.Run{Kind: executor.Execution, ID: e.ID, UserID: f.UserID, AppID: f.AppID,
			FunctionID: f.ID, CreatedAt: e.CreatedAt, Input: input, Config: cfg, TimeoutSeconds: f.TimeoutSeconds, IdempotencyKey: key,
			APIKeyID: keyID})
	}
	cause := context.Cause(runCtx)
	cancel()
	if ctx.Err() != nil {
		// The caller went away (or the process stops): nothing to record.
		return nil, ctx.Err()
	}
	e.CompletedAt = s.now()
	e.DurationMS = e.CompletedAt.Sub(e.CreatedAt).Milliseconds()
	if res == nil {
		res = &executor.Result{}
	}
	switch {
	case runErr == nil:
		e.Status, e.Output = StatusCompleted, cleantext.JSON(res.Output)
	case errors.Is(cause, errTimedOut):
		e.Status, e.Error = StatusFailed, fmt.Sprintf("Execution timed out after %d s", f.TimeoutSeconds)
	default:
		e.Status, e.Error = StatusFailed, cleantext.Error(runErr.Error())
	}
	if len(res.Logs) > 0 {
		e.Logs, _ = json.Marshal(res.Logs)
		e.Logs, e.LogsTruncated = cleantext.JSON(e.Logs), res.LogsTruncated
	}
	// Recorded whatever the caller does next; the run has happened.
	if err := s.store.ExecutionCreate(context.WithoutCancel(ctx), e); err != nil {
		if o != nil && errors.Is(err, store.ErrConflict) {
			// Another delivery of the step (try of the call) recorded it
			// first: that one stands.
			if first, err := s.recorded(context.WithoutCancel(ctx), *o); err == nil {
				return answer(first, nil), nil
			}
		}
		return nil, err
	}
	return answer(e, res.Logs), nil
}

var errTimedOut = errors.New("execution timed out")

func answer(e *store.Execution, logs []executor.LogLine) *Execution {
	out := &Execution{ExecutionID: e.ID, FunctionID: e.FunctionID, Status: e.Status, Output: e.Output, DurationMS: e.DurationMS,
		CreatedAt: e.CreatedAt, Logs: logs, LogsTruncated: e.LogsTruncated}
	if out.Logs == nil {
		out.Logs = []executor.LogLine{}
	}
	if len(out.Output) == 0 {
		out.Output = json.RawMessage("null")
	}
	if e.Error != "" {
		msg := e.Error
		out.Error = &msg
	}
	return out
}

// History returns a page of the caller's executions of app (of one
// function when functionID is set), newest first, with their logs.
func (s *Service) History(ctx context.Context, c *auth.Caller, appID, functionID string, limit, offset int) ([]*Execution, int, error) {
	app, err := s.apps.OwnedApp(ctx, c, appID)
	if err != nil {
		return nil, 0, err
	}
	if functionID != "" {
		f, err := s.Get(ctx, c, functionID)
		if err == nil && f.AppID != app.ID {
			err = errFunctionNotFound
		}
		if err != nil {
			return nil, 0, err
		}
	}
	rows, total, err := s.store.ExecutionList(ctx, app.UserID, app.ID, functionID, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*Execution, len(rows))
	for i := range rows {
		var logs []executor.LogLine
		if l, err := s.store.RunLogsGet(ctx, app.UserID, rows[i].ID); err == nil {
			_ = json.Unmarshal(l.Logs, &logs)
			rows[i].LogsTruncated = l.Truncated
		}
		out[i] = answer(&rows[i], logs)
	}
	return out, total, nil
}

// validate checks input against f's schema (compiled once per version)
// until ctx ends (inputschema.ErrInterrupted).
func (s *Service) validate(ctx context.Context, f *store.Function, input json.RawMessage) error {
	return s.schemas.Check(ctx, f.ID, f.UpdatedAt, f.InputSchema, input, "input")
}
