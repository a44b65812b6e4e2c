package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkjson "github.com/segmentio/encoding/json"
	"github.com/tidwall/gjson"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/function"
	"github.com/agentplatform/agentplatform/internal/pipeline"
	"github.com/agentplatform/agentplatform/internal/store"
)

// The kinds of tool, also the suffix of a name two kinds share.
const (
	kindAgent    = "agent"
	kindFunction = "function"
	kindPipeline = "pipeline"
)

// tool is one agent, function or pipeline as a tool.
type tool struct {
	app, kind, id, name, description string
	schema                           any // *jsonschema.Schema or a JSON object
	// llm: the agent takes {prompt, chat_id?}.
	llm bool
	// agent is the agent as activating it needs it, when it was read so
	// (activation.Request.Agent).
	agent *store.Agent
}

// The input schemas of the kinds that have no schema of their own, made
// once as the SDK's own type: a schema of another type the SDK remarshals
// on every AddTool, which is to say on every request.
var (
	llmSchema = staticSchema(map[string]any{"type": "object", "required": []string{"prompt"}, "properties": map[string]any{
		"prompt":  map[string]any{"type": "string", "description": "The message to the agent"},
		"chat_id": map[string]any{"type": "string", "description": "A chat to continue: its earlier turns are sent as history"},
	}})
	pipelineSchema = staticSchema(map[string]any{"type": "object", "properties": map[string]any{
		"input": map[string]any{"type": "object", "description": "The run's input, which the steps' templates read"},
	}})
)

func staticSchema(m map[string]any) *jsonschema.Schema {
	raw, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		panic(err)
	}
	return &s
}

// objectSchema is a stored input_schema as a tool's: a tool takes an
// object, so a schema without a type is given "object", and a schema of
// anything else (or none) is any object, the run checking its input as
// it would for any caller.
func objectSchema(raw json.RawMessage) map[string]any {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return map[string]any{"type": "object"}
	}
	switch m["type"] {
	case nil:
		m["type"] = "object"
	case "object":
	default:
		return map[string]any{"type": "object"}
	}
	return m
}

// tools are the tools of app appID, or of every app caller reaches
// (named <slug>__<name>) when appID is empty; with names, only those of
// the agents, functions and pipelines so named.
func (s *Service) tools(ctx context.Context, c *auth.Caller, appID string, names ...string) ([]tool, error) {
	parts, err := s.Apps.Parts(ctx, c, appID, names...)
	if err != nil {
		return nil, err
	}
	out := make([]tool, 0, len(parts))
	for _, p := range parts {
		t := tool{app: p.AppID, kind: p.Kind, id: p.ID, name: p.Name, description: p.Description}
		switch {
		case p.Kind == kindPipeline:
			t.schema = pipelineSchema
		case p.Kind == kindAgent && p.AgentTypeID == "llm":
			t.llm, t.schema = true, llmSchema
		default:
			t.schema = objectSchema(p.InputSchema)
		}
		out = append(out, t)
	}
	return s.name(ctx, c, appID, out)
}

// namesOf are the names of the agents, functions and pipelines that may
// be tool only (a tools/call's): its name without the app's slug on the
// endpoint of every app, and that name without a _<kind> suffix.
func namesOf(only, appID string) []string {
	if appID == "" {
		_, after, ok := strings.Cut(only, "__")
		if !ok {
			return nil
		}
		only = after
	}
	names := []string{only}
	for _, kind := range []string{kindAgent, kindFunction, kindPipeline} {
		if base, ok := strings.CutSuffix(only, "_"+kind); ok && base != "" {
			names = append(names, base)
		}
	}
	return names
}

// all reads every page of a list.
func all[T any](list func(limit, offset int) ([]T, int, error)) ([]T, error) {
	const pageSize = 500
	var out []T
	for {
		page, total, err := list(pageSize, len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) == 0 || len(out) >= total {
			return out, nil
		}
	}
}

// name gives each tool its name: a name two kinds of one app share gets
// _<kind> appended (on every tool that has it, so that no kind wins by
// its order), and on the endpoint of every app the app's slug comes first.
func (s *Service) name(ctx context.Context, c *auth.Caller, appID string, tools []tool) ([]tool, error) {
	type key struct{ app, name string }
	kinds := map[key]map[string]bool{}
	for _, t := range tools {
		k := key{t.app, t.name}
		if kinds[k] == nil {
			kinds[k] = map[string]bool{}
		}
		kinds[k][t.kind] = true
	}
	slugs := map[string]string{}
	if appID == "" {
		list, err := all(func(l, o int) ([]store.App, int, error) { return s.Apps.Apps(ctx, c, l, o) })
		if err != nil {
			return nil, err
		}
		for _, a := range list {
			slugs[a.ID] = a.Slug
		}
	}
	out := tools[:0]
	for _, t := range tools {
		if len(kinds[key{t.app, t.name}]) > 1 {
			t.name += "_" + t.kind
		}
		if appID == "" {
			slug, ok := slugs[t.app]
			if !ok {
				continue // an app that is not the caller's own
			}
			t.name = slug + "__" + t.name
		}
		out = append(out, t)
	}
	return out, nil
}

// run runs the tool's agent, function or pipeline with the call's
// arguments, as the API's routes do, and waits for its end.
func (t tool) run(ctx context.Context, s *Service, c *auth.Caller, args json.RawMessage, notify progress) (*mcp.CallToolResult, error) {
	switch t.kind {
	case kindFunction:
		ex, err := s.Functions.Execute(ctx, c, t.app, t.id, args)
		if err != nil {
			return nil, err
		}
		if ex.Status != function.StatusCompleted {
			return failed(deref(ex.Error, "Execution "+ex.Status)), nil
		}
		return answer(ex.Output, ""), nil
	case kindPipeline:
		return t.runPipeline(ctx, s, c, args, notify)
	}
	return t.activate(ctx, s, c, args, notify)
}

func deref(p *string, or string) string {
	if p == nil || *p == "" {
		return or
	}
	return *p
}

// llmArguments are an LLM agent's activation input, {prompt}, and the
// chat it continues, from its tool's arguments {prompt, chat_id?}. The
// prompt is passed on as it was written, not decoded and encoded again:
// this is on every call.
func llmArguments(args json.RawMessage) (input json.RawMessage, chatID string, err error) {
	var in struct {
		Prompt json.RawMessage `json:"prompt"`
		ChatID *string         `json:"chat_id"`
	}
	if err := sdkjson.Unmarshal(args, &in); err != nil {
		return nil, "", apperr.Invalid("arguments", "Invalid arguments: "+err.Error())
	}
	switch {
	case len(in.Prompt) == 0 || string(in.Prompt) == "null":
		return nil, "", apperr.Invalid("prompt", "Missing required field prompt")
	case in.Prompt[0] != '"':
		return nil, "", apperr.Invalid("prompt", "Invalid arguments: prompt must be a string")
	}
	if in.ChatID != nil {
		chatID = *in.ChatID
	}
	return slices.Concat([]byte(`{"prompt":`), in.Prompt, []byte(`}`)), chatID, nil
}

// activate runs the tool's agent: an activation with context.source
// "mcp", waited for until it ends. A call cancelled before (its client
// gone, or a cancel notification) cancels the activation.
func (t tool) activate(ctx context.Context, s *Service, c *auth.Caller, args json.RawMessage, notify progress) (*mcp.CallToolResult, error) {
	r := activation.Request{AgentID: t.id, Agent: t.agent, AppID: t.app, InputData: args, Context: map[string]any{"source": "mcp"}}
	if t.llm {
		input, chatID, err := llmArguments(args)
		if err != nil {
			return nil, err
		}
		r.InputData = input
		if chatID != "" {
			r.Context["chat_id"] = chatID
		}
	}
	act, _, err := s.Activations.Create(ctx, c, r)
	if err != nil {
		return nil, err
	}
	notify(ctx, 0, 0, "Activation "+act.ID+" "+act.Status)
	act, err = s.Activations.Wait(ctx, act, CallTimeout)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil && !activation.Ended(act) {
		// Nobody reads the answer: the run is not worth finishing.
		if _, err := s.Activations.Cancel(context.WithoutCancel(ctx), act); err != nil {
			return nil, err
		}
		return failed(activation.ErrCancelled), nil
	}
	switch {
	case act.Status == store.StatusFailed:
		return failed(deref(act.Error, "Activation failed")), nil
	case act.Status != store.StatusCompleted && len(act.Waiting) > 0:
		return failed(fmt.Sprintf("Activation %s waits for an answer: see GET /api/v1/activations/%s", act.ID, act.ID)), nil
	case act.Status != store.StatusCompleted:
		return failed(fmt.Sprintf("Activation %s is still %s after %s", act.ID, act.Status, CallTimeout)), nil
	}
	text := ""
	if t.llm {
		text = gjson.GetBytes(act.OutputData, "response").String()
	}
	return answer(act.OutputData, text), nil
}

// runPipeline starts a run of the tool's pipeline and reads its state
// until it ends.
func (t tool) runPipeline(ctx context.Context, s *Service, c *auth.Caller, args json.RawMessage, notify progress) (*mcp.CallToolResult, error) {
	var in struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, apperr.Invalid("input", "Invalid arguments: "+err.Error())
	}
	run, err := s.Pipelines.Start(ctx, c, t.id, in.Input)
	if err != nil {
		return nil, err
	}
	total := float64(len(run.Steps))
	notify(ctx, 0, total, "Pipeline run "+run.RunID+" "+run.Status)
	ended := 0
	deadline := time.NewTimer(CallTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(s.pipelinePoll)
	defer tick.Stop()
	for run.Status != pipeline.StatusCompleted && run.Status != pipeline.StatusFailed {
		select {
		case <-ctx.Done():
			return failed("Pipeline run " + run.RunID + " goes on; the call was cancelled"), nil
		case <-deadline.C:
			return failed(fmt.Sprintf("Pipeline run %s is still %s after %s", run.RunID, run.Status, CallTimeout)), nil
		case <-tick.C:
		}
		if run, err = s.Pipelines.GetRun(ctx, c, run.RunID); err != nil {
			return nil, err
		}
		for ; ended < len(run.Steps) && stepEnded(run.Steps[ended].Status); ended++ {
			notify(ctx, float64(ended+1), total, "Step "+run.Steps[ended].ID+" "+run.Steps[ended].Status)
		}
	}
	if run.Status == pipeline.StatusFailed {
		return failed(deref(run.Error, "Pipeline run failed")), nil
	}
	return answer(run.Output, ""), nil
}

// stepEnded reports whether a pipeline step is done with.
func stepEnded(status string) bool {
	switch status {
	case pipeline.StatusCompleted, pipeline.StatusFailed, pipeline.StatusSkipped:
		return true
	}
	return false
}
