package runtimes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/inputschema"
	"github.com/agentplatform/agentplatform/internal/llm"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/telemetry"
	"github.com/agentplatform/agentplatform/internal/tool"
)

// The loop's bounds (DESIGN: Agents that act).
const (
	// MaxCallsPerAnswer is how many calls of one answer run; the rest get
	// an error result.
	MaxCallsPerAnswer = 32
	// MaxResultBytes caps a tool result, for the model and in its step.
	MaxResultBytes = 256 << 10
	// maxParallelCalls is how many calls of one answer run at once.
	maxParallelCalls = 4
	// defaultWait and maxWait bound how long a wait lasts.
	defaultWait = 24 * time.Hour
	maxWait     = 30 * 24 * time.Hour
	truncated   = "…[truncated]"
)

// llmStep is what an LLM step records as its output: enough to send the
// same assistant turn again when the run resumes.
type llmStep struct {
	Text         string         `json:"text"`
	ToolCalls    []llm.ToolCall `json:"tool_calls,omitempty"`
	Model        string         `json:"model"`
	FinishReason string         `json:"finish_reason"`
}

// loop is one run of an LLM agent with tools: steps of one LLM call and
// the tool calls it asks for, each committed to the run's journal before
// the next, so that a run taken over after a crash does again only what
// no step recorded.
//
// The caller's tools (input_data.tools, the OpenAI-compatible endpoint's)
// are offered beside the agent's own but are the caller's to run: an
// answer calling any of them ends the run with those calls alone
// (finish_reason tool_calls). The agent's own calls of that answer are not
// run: the caller's next request holds the conversation, with the calls
// it was given and their results, so an own call's result would reach no
// model, and running it would only be a side effect.
type loop struct {
	e        *LLM
	run      *executor.Run
	client   llm.Client
	provider string
	cfg      *tool.Config
	req      llm.Request
	tools    map[string]tool.Tool
	caller   map[string]bool // the caller's tools, by name
	schemas  map[string]*inputschema.Schema
	recorded []store.Step
	pos      int // the next recorded step to replay
	next     int // the index of the next new step
	usage    llm.Usage
	llmCalls int
	model    string
	logs     []executor.LogLine // what building the tools noted (Set.Logs)
}

func (e *LLM) runLoop(ctx context.Context, run *executor.Run, p *llm.Resolved, req llm.Request, cfg *tool.Config, callerTools []llm.Tool) (*executor.Result, error) {
	if run.Journal == nil || e.Tools == nil {
		return nil, errors.New("tools need a journal to run in")
	}
	set, err := e.Tools.Build(ctx, run, cfg)
	if err != nil {
		return nil, err
	}
	// The run's MCP sessions end with this call: a run that waits opens
	// them again when it goes on.
	defer set.Close()
	l := &loop{e: e, run: run, client: p.Client, provider: p.ProviderID, cfg: cfg, req: req,
		tools: map[string]tool.Tool{}, caller: map[string]bool{}, schemas: map[string]*inputschema.Schema{}, model: req.Model, logs: set.Logs}
	own := map[string]bool{}
	for _, t := range set.Tools {
		def := t.Definition()
		l.tools[def.Name] = t
		own[def.Name] = true
		l.req.Tools = append(l.req.Tools, def)
		if len(def.Parameters) > 0 {
			if l.schemas[def.Name], err = inputschema.Compile(def.Parameters); err != nil {
				return nil, fmt.Errorf("the parameters of tool %s: %w", def.Name, err)
			}
		}
	}
	// Validate saw the names the config states; these are every name.
	if err := clashes(callerTools, own); err != nil {
		return nil, err
	}
	for _, t := range callerTools {
		l.caller[t.Name] = true
		l.req.Tools = append(l.req.Tools, t)
	}
	if l.recorded, err = run.Journal.Steps(ctx); err != nil {
		return nil, err
	}
	if n := len(l.recorded); n > 0 {
		l.next = l.recorded[n-1].Index + 1
	}
	return l.steps(ctx)
}

func (l *loop) steps(ctx context.Context) (*executor.Result, error) {
	for {
		last := l.llmCalls+1 >= l.cfg.MaxSteps
		answerNow := last && l.cfg.OnStepLimit == "answer"
		out, calls, err := l.llmStep(ctx, answerNow)
		if err != nil {
			return nil, err
		}
		l.llmCalls++
		if len(out.ToolCalls) == 0 || answerNow {
			reason := out.FinishReason
			if answerNow && l.llmCalls > 1 {
				reason = "step_limit"
			}
			return l.complete(out.Text, reason, nil)
		}
		if l.forCaller(out.ToolCalls) {
			return l.complete(out.Text, "tool_calls", out.ToolCalls)
		}
		if last {
			return nil, fmt.Errorf("Step limit of %d steps reached", l.cfg.MaxSteps)
		}
		l.req.Messages = append(l.req.Messages, llm.Message{Role: llm.RoleAssistant, Content: out.Text, ToolCalls: out.ToolCalls})
		results, err := l.round(ctx, out.ToolCalls, calls)
		if err != nil {
			return nil, err
		}
		l.req.Messages = append(l.req.Messages, llm.Message{Role: llm.RoleTool, Results: results})
	}
}

// llmStep replays the next recorded LLM step, or makes the call and
// records its answer with a step for each tool call it asks for. It
// returns the answer and its tool steps, one per call in call order.
func (l *loop) llmStep(ctx context.Context, answerNow bool) (*llmStep, []*store.Step, error) {
	if l.pos < len(l.recorded) && l.recorded[l.pos].Kind == store.StepLLM {
		st := l.recorded[l.pos]
		l.pos++
		var out llmStep
		if err := json.Unmarshal(st.Output, &out); err != nil {
			return nil, nil, fmt.Errorf("replay step %d: %w", st.Index, err)
		}
		var u llm.Usage
		_ = json.Unmarshal(st.Usage, &u)
		l.addUsage(u, out.Model)
		if l.forCaller(out.ToolCalls) {
			return &out, nil, nil // the run's last step: the caller's calls have none
		}
		var calls []*store.Step
		for l.pos < len(l.recorded) && l.recorded[l.pos].Kind == store.StepTool && len(calls) < len(out.ToolCalls) {
			calls = append(calls, &l.recorded[l.pos])
			l.pos++
		}
		if len(calls) < len(out.ToolCalls) && !answerNow && l.llmCalls+1 < l.cfg.MaxSteps {
			return nil, nil, fmt.Errorf("replay step %d: %d tool steps recorded for %d calls", st.Index, len(calls), len(out.ToolCalls))
		}
		return &out, calls, nil
	}
	req := l.req
	if answerNow {
		req.ToolChoice = llm.ToolChoiceNone
	}
	if err := l.e.allow(ctx, l.run); err != nil {
		return nil, nil, err // over budget: the loop stops before this call
	}
	started := time.Now().UTC()
	res, err := l.e.Complete(ctx, l.client, req)
	if err != nil {
		return nil, nil, err
	}
	if res.Provider != "" {
		l.provider = res.Provider
	} else {
		res.Provider = l.provider
	}
	out := &llmStep{Text: res.Text, ToolCalls: res.ToolCalls, Model: res.Model, FinishReason: res.FinishReason}
	if answerNow {
		out.ToolCalls = nil // asked for none; a model that calls anyway is not obeyed
	} else if mine := slices.DeleteFunc(slices.Clone(out.ToolCalls), func(c llm.ToolCall) bool { return !l.caller[c.Name] }); len(mine) > 0 {
		// The caller's calls alone end the run (see loop); recorded so, a
		// resumed run ends the same way.
		out.ToolCalls = mine
	}
	l.addUsage(res.Usage, res.Model)
	ended := time.Now().UTC()
	st := &store.Step{Index: l.take(), Kind: store.StepLLM, Name: res.Model, Status: store.StepCompleted,
		Output: mustJSON(out), Usage: mustJSON(res.Usage), StartedAt: started, EndedAt: &ended, Bill: Bill(res)}
	steps := []*store.Step{st}
	var calls []*store.Step
	// The last step's calls are never run (the step limit fails the run
	// first): no step for them.
	if len(out.ToolCalls) > 0 && l.llmCalls+1 < l.cfg.MaxSteps && !l.forCaller(out.ToolCalls) {
		calls = l.callSteps(ctx, out.ToolCalls, ended)
		steps = append(steps, calls...)
	}
	if err := l.run.Journal.Record(ctx, steps...); err != nil {
		return nil, nil, err
	}
	return out, calls, nil
}

// callSteps makes the step of each call, in call order: running when it
// runs now, waiting when it waits for approval or its caller, failed
// already when it cannot run (too many calls, an unknown tool, arguments
// its schema refuses).
func (l *loop) callSteps(ctx context.Context, calls []llm.ToolCall, now time.Time) []*store.Step {
	steps := make([]*store.Step, len(calls))
	for i, c := range calls {
		st := &store.Step{Index: l.take(), Kind: store.StepTool, Name: c.Name, ToolCallID: c.ID,
			Input: argumentsJSON(c.Arguments), Status: store.StepRunning, StartedAt: now}
		steps[i] = st
		t := l.tools[c.Name]
		var problem string
		switch {
		case i >= MaxCallsPerAnswer:
			problem = fmt.Sprintf("Too many tool calls in one answer (%d)", MaxCallsPerAnswer)
		case t == nil:
			problem = "Unknown tool: " + c.Name
		default:
			problem = l.checkArguments(ctx, c.Name, c.Arguments)
		}
		if problem != "" {
			st.Status, st.Error, st.EndedAt = store.StepFailed, &problem, &now
		} else if t.Waits() {
			st.Status = store.StepWaiting
		}
	}
	return steps
}

// checkArguments says what is wrong with a call's arguments ("" when
// nothing): they must be a JSON object its tool's schema accepts.
func (l *loop) checkArguments(ctx context.Context, name, args string) string {
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return "Invalid arguments: not JSON: " + err.Error()
	}
	if _, ok := v.(map[string]any); !ok {
		return "Invalid arguments: expected a JSON object"
	}
	if s := l.schemas[name]; s != nil {
		if err := s.Validate(ctx, v); err != nil {
			return "Invalid arguments: " + err.Error()
		}
	}
	return ""
}

// round runs the tool calls of one answer (steps[i] is calls[i]'s step)
// and returns their results in call order. Calls that wait make the run
// wait (executor.ErrWaiting) once the others have run: an approval first,
// then client tools.
func (l *loop) round(ctx context.Context, calls []llm.ToolCall, steps []*store.Step) ([]llm.ToolResult, error) {
	// An edit changes what runs, not what the model asked for: the
	// history keeps the model's own arguments, as a resumed run's does.
	calls = slices.Clone(calls)
	ans := l.answers()
	var runNow []int
	var approve, client []int
	for i, st := range steps {
		switch st.Status {
		case store.StepRunning:
			runNow = append(runNow, i)
		case store.StepWaiting:
			t := l.tools[st.Name]
			if t == nil {
				runNow = append(runNow, i) // gone since: call answers it as unknown
				continue
			}
			d, decided := ans.decisions[st.ToolCallID]
			switch {
			case t.Spec().Approval == "always" && !decided:
				approve = append(approve, i)
			case decided && d.Type == "reject":
				msg := d.Message
				if msg == "" {
					msg = "The call was rejected"
				}
				st.Status, st.Error = store.StepFailed, &msg
				if err := l.run.Journal.End(ctx, st); err != nil {
					return nil, err
				}
			case t.Spec().Type == "client":
				if r, ok := ans.results[st.ToolCallID]; ok {
					if r.Error != "" {
						st.Status, st.Error = store.StepFailed, &r.Error
					} else {
						st.Status, st.Output = store.StepCompleted, capJSON(r.Output)
					}
					if err := l.run.Journal.End(ctx, st); err != nil {
						return nil, err
					}
				} else {
					client = append(client, i)
				}
			default: // approved, maybe with other arguments
				if d.Type == "edit" {
					calls[i].Arguments = string(d.Arguments)
				}
				runNow = append(runNow, i)
			}
		}
	}
	if err := l.runCalls(ctx, calls, steps, runNow); err != nil {
		return nil, err
	}
	switch {
	case len(approve) > 0:
		return nil, l.wait(ctx, store.WaitApproval, calls, steps, approve)
	case len(client) > 0:
		return nil, l.wait(ctx, store.WaitToolResult, calls, steps, client)
	}
	results := make([]llm.ToolResult, len(steps))
	for i, st := range steps {
		results[i] = llm.ToolResult{CallID: st.ToolCallID}
		if st.Error != nil {
			results[i].Content, results[i].IsError = *st.Error, true
		} else {
			results[i].Content = resultText(st.Output)
		}
	}
	// Calls past the cap have steps too, so every call has its result.
	return results, nil
}

// answered is what the run's answered waits said.
type answered struct {
	decisions map[string]decision
	results   map[string]clientResult
}

type decision struct {
	Type      string          `json:"type"`
	Arguments json.RawMessage `json:"arguments"`
	Message   string          `json:"message"`
}

type clientResult struct {
	Output json.RawMessage `json:"output"`
	Error  string          `json:"error"`
}

// answers reads the answered wait steps that follow the current round's
// steps in the record.
func (l *loop) answers() answered {
	a := answered{decisions: map[string]decision{}, results: map[string]clientResult{}}
	for l.pos < len(l.recorded) && l.recorded[l.pos].Kind == store.StepWait {
		st := l.recorded[l.pos]
		l.pos++
		var out struct {
			Decisions []struct {
				ToolCallID string `json:"tool_call_id"`
				decision
			} `json:"decisions"`
			Results []struct {
				ToolCallID string `json:"tool_call_id"`
				clientResult
			} `json:"results"`
		}
		if st.Status != store.StepCompleted || json.Unmarshal(st.Output, &out) != nil {
			continue
		}
		for _, d := range out.Decisions {
			a.decisions[d.ToolCallID] = d.decision
		}
		for _, r := range out.Results {
			a.results[r.ToolCallID] = r.clientResult
		}
	}
	return a
}

// runCalls runs the calls at idx, at most maxParallelCalls at once (one
// at a time unless parallel_tool_calls), and ends each one's step as it
// ends. Cancel and the timeout (ctx) stop them all.
func (l *loop) runCalls(ctx context.Context, calls []llm.ToolCall, steps []*store.Step, idx []int) error {
	if len(idx) == 0 {
		return nil
	}
	limit := 1
	if l.cfg.Parallel() {
		limit = maxParallelCalls
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	errs := make([]error, len(idx))
	for k, i := range idx {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[k] = ctx.Err()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[k] = l.call(ctx, calls[i], steps[i])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// call runs one call and ends its step. A failing tool is the call's
// result; only the run's own end (ctx) and the journal's errors are
// errors.
func (l *loop) call(ctx context.Context, c llm.ToolCall, st *store.Step) error {
	t := l.tools[c.Name]
	var out json.RawMessage
	var err error
	if t == nil {
		// Recorded before the agent's tools changed, resumed after.
		err = errors.New("Unknown tool: " + c.Name)
	} else if problem := l.checkArguments(ctx, c.Name, c.Arguments); problem != "" {
		err = errors.New(problem)
	} else {
		// The platform runs the tool (the convention's "extension").
		tctx, span := telemetry.StartTool(ctx, c.Name, c.ID, "extension")
		out, err = t.Call(tctx, tool.Call{ID: c.ID, Arguments: json.RawMessage(c.Arguments),
			IdempotencyKey: l.run.ID + ":" + c.ID, Run: l.run})
		span.EndTool(c.Arguments, out, err)
	}
	if ctx.Err() != nil {
		return ctx.Err() // the run ends: the call has no result
	}
	if err != nil {
		msg := err.Error()
		if len(msg) > MaxResultBytes {
			msg = msg[:MaxResultBytes] + truncated
		}
		st.Status, st.Error = store.StepFailed, &msg
	} else {
		st.Status, st.Output = store.StepCompleted, capJSON(out)
	}
	return l.run.Journal.End(ctx, st)
}

// wait makes the run wait on the calls at idx.
func (l *loop) wait(ctx context.Context, kind string, calls []llm.ToolCall, steps []*store.Step, idx []int) error {
	w := &executor.Wait{Kind: kind, For: defaultWait,
		Step: &store.Step{Index: l.take(), Kind: store.StepWait, Name: kind, StartedAt: time.Now().UTC()}}
	first := true
	for _, i := range idx {
		w.Calls = append(w.Calls, executor.WaitCall{ToolCallID: calls[i].ID, Name: calls[i].Name, Arguments: argumentsJSON(calls[i].Arguments)})
		// The wait lasts as long as the shortest timeout of its tools.
		if s := l.tools[calls[i].Name].Spec(); s.TimeoutSeconds > 0 {
			d := min(time.Duration(s.TimeoutSeconds)*time.Second, maxWait)
			if first || d < w.For {
				w.For = d
			}
			first = false
		}
	}
	if err := l.run.Journal.Wait(ctx, w); err != nil {
		return err
	}
	return executor.ErrWaiting
}

// forCaller reports whether an answer's calls are the caller's: llmStep
// keeps only those when there are any, so the first call tells.
func (l *loop) forCaller(calls []llm.ToolCall) bool {
	return len(calls) > 0 && l.caller[calls[0].Name]
}

// complete is the run's output_data: as a plain completion's (with the
// caller's tool calls that end it, if any), with the usage of every step
// and their number.
func (l *loop) complete(text, finish string, callerCalls []llm.ToolCall) (*executor.Result, error) {
	output := map[string]any{
		"response": text, "model": l.model, "provider": l.provider,
		"usage": l.usage, "finish_reason": finish, "steps": l.next,
	}
	if len(callerCalls) > 0 {
		output["tool_calls"] = callerCalls
	}
	out, err := json.Marshal(output)
	if err != nil {
		return nil, err
	}
	return &executor.Result{Output: out, Logs: l.logs}, nil
}

func (l *loop) addUsage(u llm.Usage, model string) {
	l.usage.PromptTokens += u.PromptTokens
	l.usage.CompletionTokens += u.CompletionTokens
	l.usage.TotalTokens += u.TotalTokens
	if model != "" {
		l.model = model
	}
}

// take hands out the next step index.
func (l *loop) take() int {
	i := l.next
	l.next++
	return i
}

// argumentsJSON is a call's arguments as they are recorded: the JSON the
// model wrote, or, when it is not JSON, that text as a JSON string.
func argumentsJSON(args string) json.RawMessage {
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	return mustJSON(args)
}

// capJSON caps a result at MaxResultBytes: a longer one is kept as a JSON
// string of its first MaxResultBytes and the truncation mark.
func capJSON(out json.RawMessage) json.RawMessage {
	if len(out) == 0 {
		return json.RawMessage("null")
	}
	if len(out) <= MaxResultBytes {
		return out
	}
	return mustJSON(string(out[:MaxResultBytes]) + truncated)
}

// resultText is a recorded result as the model reads it: a JSON string's
// text, else the JSON itself.
func resultText(out json.RawMessage) string {
	var s string
	if json.Unmarshal(out, &s) == nil {
		return s
	}
	return string(out)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
