package api

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/function"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Function is a function of an app.
type Function struct {
	ID             string          `json:"id" format:"uuid"`
	FunctionID     string          `json:"function_id" format:"uuid" doc:"The same as id"`
	AppID          string          `json:"app_id" format:"uuid"`
	Name           string          `json:"name"`
	Description    string          `json:"description"`
	Code           string          `json:"code" doc:"JavaScript defining async function run(input, ctx)"`
	InputSchema    json.RawMessage `json:"input_schema"`
	TimeoutSeconds int             `json:"timeout_seconds"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
}

func functionOut(f *store.Function) Function {
	return Function{ID: f.ID, FunctionID: f.ID, AppID: f.AppID, Name: f.Name, Description: f.Description, Code: f.Code,
		InputSchema: f.InputSchema, TimeoutSeconds: f.TimeoutSeconds, CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt}
}

type functionOutput struct {
	Body Function
}

type listFunctionsInput struct {
	PageParams
	AppID string `query:"app_id" doc:"Only this app's functions"`
}

type listFunctionsOutput struct {
	Body struct {
		Functions []Function `json:"functions"`
		Page
	}
}

func (a *API) listFunctions(ctx context.Context, in *listFunctionsInput) (*listFunctionsOutput, error) {
	fs, total, err := a.Functions.List(ctx, mustCaller(ctx), in.AppID, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	out := &listFunctionsOutput{}
	out.Body.Functions = mapAll(fs, functionOut)
	out.Body.Page = in.page(total)
	return out, nil
}

// FunctionCreate is a new function of app_id.
type FunctionCreate struct {
	AppID string `json:"app_id" format:"uuid"`
	apps.FunctionSpec
}

type createFunctionInput struct {
	RawBody []byte
	Body    FunctionCreate
}

func (a *API) createFunction(ctx context.Context, in *createFunctionInput) (*functionOutput, error) {
	body, err := rawJSONObject(in.RawBody)
	if err != nil {
		return nil, err
	}
	f, err := a.Functions.Create(ctx, mustCaller(ctx), body)
	if err != nil {
		return nil, err
	}
	return &functionOutput{functionOut(f)}, nil
}

type functionIDInput struct {
	FunctionID string `path:"function_id"`
}

func (a *API) getFunction(ctx context.Context, in *functionIDInput) (*functionOutput, error) {
	f, err := a.Functions.Get(ctx, mustCaller(ctx), in.FunctionID)
	if err != nil {
		return nil, err
	}
	return &functionOutput{functionOut(f)}, nil
}

// FunctionPatch changes any of a function's fields.
type FunctionPatch struct {
	Name           *string         `json:"name,omitempty"`
	Description    *string         `json:"description,omitempty"`
	Code           *string         `json:"code,omitempty"`
	InputSchema    json.RawMessage `json:"input_schema,omitempty"`
	TimeoutSeconds *int            `json:"timeout_seconds,omitempty"`
}

type updateFunctionInput struct {
	FunctionID string `path:"function_id"`
	RawBody    []byte
	Body       FunctionPatch
}

func (a *API) updateFunction(ctx context.Context, in *updateFunctionInput) (*functionOutput, error) {
	body, err := rawJSONObject(in.RawBody)
	if err != nil {
		return nil, err
	}
	f, err := a.Functions.Update(ctx, mustCaller(ctx), in.FunctionID, body)
	if err != nil {
		return nil, err
	}
	return &functionOutput{functionOut(f)}, nil
}

func (a *API) deleteFunction(ctx context.Context, in *functionIDInput) (*struct{}, error) {
	return nil, a.Functions.Delete(ctx, mustCaller(ctx), in.FunctionID)
}

// ExecuteInput is a function's input.
type ExecuteInput struct {
	Input json.RawMessage `json:"input,omitempty" required:"false" doc:"Checked against the function's input_schema; {} when absent"`
}

func (b *ExecuteInput) input() json.RawMessage {
	if b == nil {
		return nil
	}
	return b.Input
}

type executeFunctionInput struct {
	FunctionID string        `path:"function_id"`
	Body       *ExecuteInput `required:"false"`
}

type executionOutput struct {
	Body function.Execution
}

func (a *API) executeFunction(ctx context.Context, in *executeFunctionInput) (*executionOutput, error) {
	e, err := a.Functions.Execute(ctx, mustCaller(ctx), "", in.FunctionID, in.Body.input())
	if err != nil {
		return nil, err
	}
	return &executionOutput{*e}, nil
}

type executeAppFunctionInput struct {
	AppID      string        `path:"app_id"`
	FunctionID string        `path:"function_id"`
	Body       *ExecuteInput `required:"false"`
}

func (a *API) executeAppFunction(ctx context.Context, in *executeAppFunctionInput) (*executionOutput, error) {
	e, err := a.Functions.Execute(ctx, mustCaller(ctx), in.AppID, in.FunctionID, in.Body.input())
	if err != nil {
		return nil, err
	}
	return &executionOutput{*e}, nil
}

type historyInput struct {
	AppID string `path:"app_id"`
	PageParams
}

type functionHistoryInput struct {
	AppID      string `path:"app_id"`
	FunctionID string `path:"function_id"`
	PageParams
}

type historyOutput struct {
	Body struct {
		Executions []function.Execution `json:"executions"`
		Page
	}
}

func (a *API) history(ctx context.Context, appID, functionID string, p PageParams) (*historyOutput, error) {
	es, total, err := a.Functions.History(ctx, mustCaller(ctx), appID, functionID, p.Limit, p.Offset)
	if err != nil {
		return nil, err
	}
	out := &historyOutput{}
	out.Body.Executions = make([]function.Execution, len(es))
	for i, e := range es {
		out.Body.Executions[i] = *e
	}
	out.Body.Page = p.pageOf(total, len(es))
	return out, nil
}

func (a *API) appFunctionHistory(ctx context.Context, in *historyInput) (*historyOutput, error) {
	return a.history(ctx, in.AppID, "", in.PageParams)
}

func (a *API) functionHistory(ctx context.Context, in *functionHistoryInput) (*historyOutput, error) {
	return a.history(ctx, in.AppID, in.FunctionID, in.PageParams)
}
