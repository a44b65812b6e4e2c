package web

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/agentplatform/agentplatform/internal/activation"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
)

// The steps of a run that calls tools, and what it waits for: the
// activation's page shows them, and the app's page lists the activations
// waiting for a person. Both parts are server-rendered fragments too
// (the "run" and "waitlist" templates): the page's script fetches them
// again as events come, so that one template, which escapes everything
// (arguments and results are the model's and the tools', untrusted),
// renders them whether on first load or live. Answers go, as every change
// does, through the JSON API from the page (POST …/waitpoints/{id}).

// stepsLimit is how many steps an activation's page shows; a run has at
// most max_steps (50) LLM steps, each with its tool calls.
const stepsLimit = 200

// waitLimit is how many waiting activations the app's page lists.
const waitLimit = 20

// maxShown bounds each JSON value (arguments, a result) a page shows; the
// API has it whole.
const maxShown = 16 << 10

// callView is one tool call: one an LLM answer asked for, or one a wait is
// about, with the decision or result it got.
type callView struct {
	ToolCallID, Name string
	// Arguments is indented JSON (or the text the model wrote, when it is
	// not JSON).
	Arguments string
	// Answer is a wait's answer for this call: approve, edit, reject, or
	// result (a client tool's); "" while unanswered.
	Answer string
	// Detail goes with the answer: the edited arguments, the rejection's
	// message, the result or its error.
	Detail string
}

// stepView is a step as the activation's page shows it.
type stepView struct {
	activation.RunStep
	// Text is an LLM answer's text; Calls the tool calls it asked for, or
	// those a wait is about.
	Text  string
	Calls []callView
	// Input and Output are a tool call's arguments and result.
	Input, Output string
	ErrorText     string
	// WaitKind is a wait's: approval or tool_result. Expired: nobody
	// answered in time.
	WaitKind string
	Expired  bool
	Duration string
}

// Title is how the step list names the step.
func (s stepView) Title() string {
	switch s.Kind {
	case store.StepLLM:
		if len(s.Calls) > 0 {
			return "The model asks for " + plural(len(s.Calls), "tool call")
		}
		return "The model answers"
	case store.StepTool:
		return "Tool " + s.Name
	case store.StepWait:
		if s.WaitKind == store.WaitToolResult {
			return "Waiting for the caller's result"
		}
		return "Waiting for approval"
	}
	return s.Kind
}

// waitView is what an activation waits for, with its answer form.
type waitView struct {
	AppID, ActivationID, WaitpointID string
	// Kind is approval (a person answers here) or tool_result (the
	// caller's client tools: nothing to do here).
	Kind      string
	Calls     []callView
	ExpiresAt time.Time
}

// Approval reports whether a person answers it (Approve, Edit, Reject).
func (w *waitView) Approval() bool { return w.Kind == store.WaitApproval }

// waitOf is what a running activation waits for; nil when it waits for
// nothing (or its waiting cannot be read: it shows as running).
func waitOf(a *store.Activation) *waitView {
	if a.Status != store.StatusRunning || len(a.Waiting) == 0 || string(a.Waiting) == "null" {
		return nil
	}
	var w activation.Waiting
	if json.Unmarshal(a.Waiting, &w) != nil || w.WaitpointID == "" {
		return nil
	}
	v := &waitView{AppID: a.AppID, ActivationID: a.ID, WaitpointID: w.WaitpointID, Kind: w.Kind, ExpiresAt: w.ExpiresAt}
	for _, c := range w.ToolCalls {
		v.Calls = append(v.Calls, callView{ToolCallID: c.ToolCallID, Name: c.Name, Arguments: shown(c.Arguments)})
	}
	return v
}

// shown is a JSON value indented for reading, cut at maxShown.
func shown(raw json.RawMessage) string {
	s := pretty(raw)
	if len(s) <= maxShown {
		return s
	}
	cut := maxShown
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n… (" + strconv.Itoa(len(s)-cut) + " more bytes: the API has it whole)"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// argumentsText is a call's arguments as the model wrote them: a JSON
// string holding JSON (OpenAI's way) is shown as that JSON.
func argumentsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if json.Valid([]byte(s)) {
			return shown(json.RawMessage(s))
		}
		return s
	}
	return shown(raw)
}

// stepViews makes the steps readable: an LLM answer's text and calls,
// a tool's arguments and result, a wait's calls and their answers.
func stepViews(steps []store.Step) []stepView {
	out := make([]stepView, len(steps))
	for i := range steps {
		st := activation.StepOf(&steps[i])
		v := stepView{RunStep: st}
		if st.Error != nil {
			v.ErrorText = *st.Error
		}
		if st.EndedAt != nil {
			ms := st.EndedAt.Sub(st.StartedAt).Milliseconds()
			v.Duration = duration(&ms)
		}
		switch st.Kind {
		case store.StepLLM:
			llmStep(&v)
		case store.StepTool:
			v.Input, v.Output = shown(st.Input), shown(st.Output)
		case store.StepWait:
			waitStep(&v)
		default:
			v.Input, v.Output = shown(st.Input), shown(st.Output)
		}
		out[i] = v
	}
	return out
}

// llmStep reads an LLM answer: its text and the calls it asked for;
// anything else it holds is shown as JSON.
func llmStep(v *stepView) {
	var out struct {
		Text      *string `json:"text"`
		Content   *string `json:"content"`
		Response  *string `json:"response"`
		ToolCalls []struct {
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"tool_calls"`
	}
	if json.Unmarshal(v.RunStep.Output, &out) != nil {
		v.Output = shown(v.RunStep.Output)
		return
	}
	for _, t := range []*string{out.Text, out.Content, out.Response} {
		if t != nil {
			v.Text = *t
			break
		}
	}
	for _, c := range out.ToolCalls {
		v.Calls = append(v.Calls, callView{ToolCallID: c.ID, Name: c.Name, Arguments: argumentsText(c.Arguments)})
	}
	if v.Text == "" && len(v.Calls) == 0 {
		v.Output = shown(v.RunStep.Output)
	}
}

// waitStep reads a wait: the calls it was about (its input, the
// activation's waiting then) and the answer each got (its output).
func waitStep(v *stepView) {
	var w activation.Waiting
	_ = json.Unmarshal(v.RunStep.Input, &w)
	v.WaitKind = w.Kind
	var ans struct {
		activation.WaitAnswer
		Expired bool `json:"expired"`
	}
	_ = json.Unmarshal(v.RunStep.Output, &ans)
	v.Expired = ans.Expired
	decisions := map[string]activation.WaitDecision{}
	for _, d := range ans.Decisions {
		decisions[d.ToolCallID] = d
	}
	results := map[string]activation.WaitResult{}
	for _, r := range ans.Results {
		results[r.ToolCallID] = r
	}
	for _, c := range w.ToolCalls {
		cv := callView{ToolCallID: c.ToolCallID, Name: c.Name, Arguments: shown(c.Arguments)}
		if d, ok := decisions[c.ToolCallID]; ok {
			cv.Answer = d.Type
			switch d.Type {
			case activation.DecisionEdit:
				cv.Detail = shown(d.Arguments)
			case activation.DecisionReject:
				cv.Detail = d.Message
			}
		}
		if r, ok := results[c.ToolCallID]; ok {
			cv.Answer = "result"
			cv.Detail = shown(r.Output)
			if r.Error != "" {
				cv.Detail = r.Error
			}
		}
		v.Calls = append(v.Calls, cv)
	}
}

// runData is the live part of an activation's page: its steps and what
// it waits for.
type runData struct {
	AppID, ActivationID string
	Steps               []stepView
	StepsTotal          int
	Waiting             *waitView
}

// More is how many steps the page leaves out.
func (d runData) More() int { return d.StepsTotal - len(d.Steps) }

// run reads the live part of activation a's page.
func (p *Pages) run(r *http.Request, c *auth.Caller, a *store.Activation) (runData, error) {
	steps, total, err := p.Activations.Steps(r.Context(), c, a.ID, stepsLimit, 0)
	if err != nil {
		return runData{}, err
	}
	return runData{AppID: a.AppID, ActivationID: a.ID, Steps: stepViews(steps), StepsTotal: total, Waiting: waitOf(a)}, nil
}

// runFragment is the live part of an activation's page alone (the "run"
// template), which the page fetches again when a step ends or the run
// waits.
func (p *Pages) runFragment(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	_, act, err := p.ownedActivation(r, c)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	d, err := p.run(r, c, act)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	p.fragment(w, r, "activation.html", "run", d)
}

// waitList is the app page's "Waiting for you": the app's activations
// that wait, newest first.
type waitList struct {
	AppID string
	Items []waitItem
	Total int
}

// waitItem is one waiting activation of the list.
type waitItem struct {
	activationRow
	Waiting *waitView
}

// waiting lists app appID's waiting activations; names maps agent ids to
// names.
func (p *Pages) waiting(r *http.Request, c *auth.Caller, appID string, names map[string]string) (waitList, error) {
	acts, total, err := p.Activations.List(r.Context(), c, store.ActivationFilter{AppID: appID,
		Statuses: []string{store.StatusWaiting}, Limit: waitLimit})
	if err != nil {
		return waitList{}, err
	}
	d := waitList{AppID: appID, Total: total}
	for i, row := range activationRows(acts, names) {
		if w := waitOf(&acts[i]); w != nil {
			d.Items = append(d.Items, waitItem{activationRow: row, Waiting: w})
		}
	}
	return d, nil
}

// waitFragment is the app page's waiting list alone (the "waitlist"
// template), which the page fetches again when a run starts or stops
// waiting.
func (p *Pages) waitFragment(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	app, err := p.Apps.OwnedApp(r.Context(), c, r.PathValue("app_id"))
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	names, err := p.agentNames(r, c, app.ID)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	d, err := p.waiting(r, c, app.ID, names)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	p.fragment(w, r, "app.html", "waitlist", d)
}

// agentNames maps the ids of app appID's agents to their names.
func (p *Pages) agentNames(r *http.Request, c *auth.Caller, appID string) (map[string]string, error) {
	agents, _, err := p.Apps.AppAgents(r.Context(), c, appID, "", listLimit, 0)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(agents))
	for _, a := range agents {
		names[a.ID] = a.Name
	}
	return names, nil
}
