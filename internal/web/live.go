package web

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/store"
)

// The pages where agents run: an app's page (activate an agent, watch the
// result stream in, the app's activation history) and an activation's
// page. They only read; activating and cancelling go through the JSON API
// from the page's script (static/activations.js), so that the API's
// checks, limits and CSRF rule apply to the browser as to any client.

// errActivationNotFound is an activation of another app: the same page as
// one that does not exist.
var errActivationNotFound = apperr.NotFoundf("Activation not found")

// historyLimit is how many rows a history page lists; ?offset= pages on.
const historyLimit = 20

// maxOffset bounds ?offset=: far past any real history, and far from
// what a database's OFFSET could choke on.
const maxOffset = 1_000_000

// offsetParam is the page's ?offset=: anything that is not a whole number
// is the first page (a bad link is never an error page), and it is
// clamped to [0, maxOffset].
func offsetParam(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("offset"))
	if err != nil || n < 0 {
		return 0
	}
	return min(n, maxOffset)
}

// pager is where a history page stands, for its "newer" and "older" links.
type pager struct {
	Offset, Limit, Total, Shown int
}

func (p pager) From() int        { return p.Offset + 1 }
func (p pager) To() int          { return p.Offset + p.Shown }
func (p pager) HasNewer() bool   { return p.Offset > 0 }
func (p pager) NewerOffset() int { return max(p.Offset-p.Limit, 0) }
func (p pager) HasOlder() bool   { return p.Offset+p.Shown < p.Total }
func (p pager) OlderOffset() int { return p.Offset + p.Shown }

// Paged reports whether the history needs page links at all.
func (p pager) Paged() bool { return p.HasNewer() || p.HasOlder() }

// agentView is an agent with the input its activate form starts with.
type agentView struct {
	store.Agent
	Input string
}

// maxStartInput bounds the last input a form starts from: a larger one
// (a document pasted once) would make the page heavy, and is no example.
const maxStartInput = 8 << 10

// agentInput is where an agent's activate form starts: an LLM agent takes
// a prompt; a custom agent the input its code took last time (last, nil
// before its first run), the best example of what it reads, else a
// skeleton of its input_schema (sampleInput; {} when it declares none).
func agentInput(a store.Agent, last json.RawMessage) string {
	if a.AgentTypeID == "llm" {
		return `{"prompt": ""}`
	}
	if s, ok := lastInput(last); ok {
		return s
	}
	return sampleInput(a.InputSchema)
}

// lastInput is a custom agent's last input, indented, when it makes a
// starting point (an object, not too big).
func lastInput(last json.RawMessage) (string, bool) {
	if len(last) > maxStartInput {
		return "", false
	}
	// Decoded and encoded again: the keys in order, whichever database
	// (PostgreSQL's jsonb keeps its own order); numbers as they were.
	dec := json.NewDecoder(bytes.NewReader(last))
	dec.UseNumber()
	var input map[string]any
	if dec.Decode(&input) != nil || input == nil {
		return "", false
	}
	b, err := json.MarshalIndent(input, "", "  ")
	if err != nil {
		return "", false
	}
	return string(unescapeHTML(b)), true
}

// agentViews gives each agent its starting input; a custom agent's last
// input is one indexed lookup each (an app has a few agents).
func (p *Pages) agentViews(ctx context.Context, c *auth.Caller, list []store.Agent) ([]agentView, error) {
	out := make([]agentView, len(list))
	for i, a := range list {
		var last json.RawMessage
		if a.AgentTypeID != "llm" {
			var err error
			if last, err = p.Activations.LastInput(ctx, c, a.ID); err != nil {
				return nil, err
			}
		}
		out[i] = agentView{Agent: a, Input: agentInput(a, last)}
	}
	return out, nil
}

// activationRow is an activation as a history row shows it.
type activationRow struct {
	store.Activation
	// AgentName is empty when the agent is gone.
	AgentName string
	Duration  string
	// Preview is the start of the output (an LLM's answer text, else its
	// JSON), or of the error.
	Preview string
	// Active is queued or running: it can be cancelled.
	Active bool
	// Shown is the status as pages show it: waiting for a running
	// activation that waits (lists take status=waiting alike).
	Shown string
}

func activationRows(list []store.Activation, names map[string]string) []activationRow {
	out := make([]activationRow, len(list))
	for i, a := range list {
		out[i] = activationRow{Activation: a, AgentName: names[a.AgentID], Duration: duration(a.DurationMS),
			Preview: preview(a.OutputData, a.Error),
			Active:  a.Status == store.StatusQueued || a.Status == store.StatusRunning, Shown: a.Status}
		if waitOf(&a) != nil {
			out[i].Shown = store.StatusWaiting
		}
	}
	return out
}

type appData struct {
	App    *store.App
	Agents []agentView
	Total  int
	// Activations is one page of the app's activation history.
	Activations []activationRow
	Page        pager
	// Waiting are the activations that wait for a person's answer.
	Waiting waitList
	// Since is the caller's last event seq before the page was read: its
	// event socket starts there (LastEventSeq).
	Since int64
	// Connect is how clients reach the app; MCP its MCP servers.
	Connect connectView
	MCP     mcpServersView
}

func (p *Pages) app(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	app, err := p.Apps.OwnedApp(r.Context(), c, r.PathValue("app_id"))
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	agents, total, err := p.Apps.AppAgents(r.Context(), c, app.ID, "", listLimit, 0)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	names := make(map[string]string, len(agents))
	for _, a := range agents {
		names[a.ID] = a.Name
	}
	// Read before the activations: an event after it is replayed to the
	// page's socket, whenever that connects.
	since, err := p.Activations.LastEventSeq(r.Context(), c)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	waiting, err := p.waiting(r, c, app.ID, names)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	offset := offsetParam(r)
	acts, actTotal, err := p.Activations.List(r.Context(), c, store.ActivationFilter{AppID: app.ID, Limit: historyLimit, Offset: offset})
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	views, err := p.agentViews(r.Context(), c, agents)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	servers, serverTotal, err := p.Apps.MCPServers(r.Context(), c, app.ID, listLimit, 0)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	p.render(w, r, http.StatusOK, "app.html", view{Title: app.Name, Nav: "apps", Email: c.Email,
		Data: appData{App: app, Agents: views, Total: total, Activations: activationRows(acts, names), Waiting: waiting, Since: since,
			Page:    pager{Offset: offset, Limit: historyLimit, Total: actTotal, Shown: len(acts)},
			Connect: p.connectFor(app, views), MCP: mcpServersView{AppID: app.ID, Servers: servers, Total: serverTotal}}})
}

type activationData struct {
	App        *store.App
	Activation activationRow
	// Input, Output, Context and Metadata are indented JSON ("" for none).
	Input, Output, Context, Metadata string
	// Response is an LLM's answer text.
	Response  string
	Logs      []executor.LogLine
	Truncated bool
	// Run is its steps and what it waits for.
	Run runData
	// Since: as appData's.
	Since int64
}

// ownedActivation is the page's activation ({activation_id}) of the
// caller's app ({app_id}): another user's app, or an activation of
// another app, is not found.
func (p *Pages) ownedActivation(r *http.Request, c *auth.Caller) (*store.App, *store.Activation, error) {
	app, err := p.Apps.OwnedApp(r.Context(), c, r.PathValue("app_id"))
	if err != nil {
		return nil, nil, err
	}
	act, err := p.Activations.Get(r.Context(), c, r.PathValue("activation_id"))
	if err == nil && act.AppID != app.ID {
		err = errActivationNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	return app, act, nil
}

// activationPage shows one activation of the caller's app: another user's
// app, or an activation of another app, is the 404 page.
func (p *Pages) activationPage(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	ctx := r.Context()
	since, err := p.Activations.LastEventSeq(ctx, c)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	app, act, err := p.ownedActivation(r, c)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	run, err := p.run(r, c, act)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	rawLogs, truncated, err := p.Activations.Logs(ctx, c, act.ID)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	var logs []executor.LogLine
	if err := json.Unmarshal(rawLogs, &logs); err != nil {
		p.fail(w, r, c, err)
		return
	}
	names := map[string]string{}
	// Best effort: an agent deleted since shows as its id.
	if agent, err := p.Apps.AppAgent(ctx, c, app.ID, act.AgentID); err == nil {
		names[agent.ID] = agent.Name
	}
	d := activationData{App: app, Activation: activationRows([]store.Activation{*act}, names)[0],
		Input: pretty(act.InputData), Output: pretty(act.OutputData), Context: pretty(act.Context),
		Metadata: pretty(act.Metadata), Response: response(act.OutputData), Logs: logs, Truncated: truncated, Run: run, Since: since}
	if d.Context == "{}" {
		d.Context = ""
	}
	if d.Metadata == "{}" {
		d.Metadata = ""
	}
	title := "Activation"
	if d.Activation.AgentName != "" {
		title += " of " + d.Activation.AgentName
	}
	p.render(w, r, http.StatusOK, "activation.html", view{Title: title, Nav: "apps", Email: c.Email, Data: d})
}

// pretty is raw JSON indented for reading; "" for none (absent or null).
func pretty(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return string(unescapeHTML(buf.Bytes()))
}

// unescapeHTML undoes encoding/json's escapes of <, > and & (\u003c…) in
// JSON text, for people to read: the template escapes the page, not the
// JSON. An escaped backslash stays one (\\u003c is text, not an escape).
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, b[i], b[i+1]), i+1
	}
	return out
}

// response is an LLM agent's answer text (output_data.response), if any.
func response(out json.RawMessage) string {
	var v struct {
		Response *string `json:"response"`
	}
	if json.Unmarshal(out, &v) != nil || v.Response == nil {
		return ""
	}
	return *v.Response
}

// previewLen is how many characters of an output a history row shows.
const previewLen = 140

// preview is the start of an error, else of the output: an LLM's answer
// text, or the output's JSON on one line. static/activations.js builds
// the same for the rows it adds.
func preview(out json.RawMessage, errText *string) string {
	if errText != nil && *errText != "" {
		return clip(*errText)
	}
	if text := response(out); text != "" {
		return clip(text)
	}
	out = bytes.TrimSpace(out)
	if len(out) == 0 || string(out) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, out); err != nil {
		return clip(string(out))
	}
	return clip(string(unescapeHTML(buf.Bytes())))
}

func clip(s string) string {
	if utf8.RuneCountInString(s) <= previewLen {
		return s
	}
	r := []rune(s)
	return string(r[:previewLen-1]) + "…"
}

// duration is a run's duration for people: 850 ms, 1.2 s, 2 min 5 s; ""
// while it runs. static/activations.js formats the same.
func duration(ms *int64) string {
	if ms == nil {
		return ""
	}
	switch d := *ms; {
	case d < 1000:
		return strconv.FormatInt(d, 10) + " ms"
	case d < 60_000:
		return strconv.FormatFloat(float64(d)/1000, 'f', 1, 64) + " s"
	default:
		return strconv.FormatInt(d/60_000, 10) + " min " + strconv.FormatInt(d%60_000/1000, 10) + " s"
	}
}
