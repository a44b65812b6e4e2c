package api

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/pipeline"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Pipeline is a pipeline of an app.
type Pipeline struct {
	ID          string      `json:"id" format:"uuid"`
	PipelineID  string      `json:"pipeline_id" format:"uuid" doc:"The same as id"`
	AppID       string      `json:"app_id" format:"uuid"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Steps       []apps.Step `json:"steps"`
	CreatedAt   time.Time   `json:"created_at"`
	UpdatedAt   time.Time   `json:"updated_at"`
}

func pipelineOut(p *store.Pipeline) Pipeline {
	out := Pipeline{ID: p.ID, PipelineID: p.ID, AppID: p.AppID, Name: p.Name, Description: p.Description, Steps: []apps.Step{},
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	_ = json.Unmarshal(p.Steps, &out.Steps)
	return out
}

type pipelineOutput struct {
	Body Pipeline
}

type listPipelinesInput struct {
	PageParams
	AppID string `query:"app_id" doc:"Only this app's pipelines"`
}

type listPipelinesOutput struct {
	Body struct {
		Pipelines []Pipeline `json:"pipelines"`
		Page
	}
}

func (a *API) listPipelines(ctx context.Context, in *listPipelinesInput) (*listPipelinesOutput, error) {
	ps, total, err := a.Pipelines.List(ctx, mustCaller(ctx), in.AppID, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	out := &listPipelinesOutput{}
	out.Body.Pipelines = mapAll(ps, pipelineOut)
	out.Body.Page = in.page(total)
	return out, nil
}

// PipelineCreate is a new pipeline of app_id.
type PipelineCreate struct {
	AppID string `json:"app_id" format:"uuid"`
	apps.PipelineSpec
}

type createPipelineInput struct {
	RawBody []byte
	Body    PipelineCreate
}

func (a *API) createPipeline(ctx context.Context, in *createPipelineInput) (*pipelineOutput, error) {
	body, err := rawJSONObject(in.RawBody)
	if err != nil {
		return nil, err
	}
	p, err := a.Pipelines.Create(ctx, mustCaller(ctx), body)
	if err != nil {
		return nil, err
	}
	return &pipelineOutput{pipelineOut(p)}, nil
}

type pipelineIDInput struct {
	PipelineID string `path:"pipeline_id"`
}

func (a *API) getPipeline(ctx context.Context, in *pipelineIDInput) (*pipelineOutput, error) {
	p, err := a.Pipelines.Get(ctx, mustCaller(ctx), in.PipelineID)
	if err != nil {
		return nil, err
	}
	return &pipelineOutput{pipelineOut(p)}, nil
}

// PipelinePatch changes any of a pipeline's fields.
type PipelinePatch struct {
	Name        *string     `json:"name,omitempty"`
	Description *string     `json:"description,omitempty"`
	Steps       []apps.Step `json:"steps,omitempty" doc:"The whole new step list; runs under way keep theirs"`
}

type updatePipelineInput struct {
	PipelineID string `path:"pipeline_id"`
	RawBody    []byte
	Body       PipelinePatch
}

func (a *API) updatePipeline(ctx context.Context, in *updatePipelineInput) (*pipelineOutput, error) {
	body, err := rawJSONObject(in.RawBody)
	if err != nil {
		return nil, err
	}
	p, err := a.Pipelines.Update(ctx, mustCaller(ctx), in.PipelineID, body)
	if err != nil {
		return nil, err
	}
	return &pipelineOutput{pipelineOut(p)}, nil
}

func (a *API) deletePipeline(ctx context.Context, in *pipelineIDInput) (*struct{}, error) {
	return nil, a.Pipelines.Delete(ctx, mustCaller(ctx), in.PipelineID)
}

// RunInput is a run's input.
type RunInput struct {
	Input json.RawMessage `json:"input,omitempty" required:"false" doc:"What {{input.…}} placeholders read; {} when absent"`
}

type runPipelineInput struct {
	PipelineID string    `path:"pipeline_id"`
	Body       *RunInput `required:"false"`
}

type runOutput struct {
	Body pipeline.Run
}

func (a *API) runPipeline(ctx context.Context, in *runPipelineInput) (*runOutput, error) {
	var input json.RawMessage
	if in.Body != nil {
		input = in.Body.Input
	}
	r, err := a.Pipelines.Start(ctx, mustCaller(ctx), in.PipelineID, input)
	if err != nil {
		return nil, err
	}
	return &runOutput{*r}, nil
}

type listRunsInput struct {
	PageParams
	PipelineID string `query:"pipeline_id" required:"true" doc:"The pipeline whose runs to list"`
}

type listRunsOutput struct {
	Body struct {
		Runs []pipeline.Run `json:"runs"`
		Page
	}
}

func (a *API) listRuns(ctx context.Context, in *listRunsInput) (*listRunsOutput, error) {
	rs, total, err := a.Pipelines.Runs(ctx, mustCaller(ctx), in.PipelineID, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	out := &listRunsOutput{}
	out.Body.Runs = make([]pipeline.Run, len(rs))
	for i, r := range rs {
		out.Body.Runs[i] = *r
	}
	out.Body.Page = in.pageOf(total, len(rs))
	return out, nil
}

type runIDInput struct {
	RunID string `path:"run_id"`
}

func (a *API) getRun(ctx context.Context, in *runIDInput) (*runOutput, error) {
	r, err := a.Pipelines.GetRun(ctx, mustCaller(ctx), in.RunID)
	if err != nil {
		return nil, err
	}
	return &runOutput{*r}, nil
}
