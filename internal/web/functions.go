package web

import (
	"encoding/json"
	"net/http"

	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/function"
	"github.com/agentplatform/agentplatform/internal/store"
)

// An app's functions page: its functions, a form to run each with JSON
// input, and the execution history. The page only reads; a run goes
// through the API's execute call from static/functions.js.

// functionView is a function with its input schema shown, and the input
// its run form starts with.
type functionView struct {
	store.Function
	Schema string
	Input  string
}

// executionRow is a function's execution as the history shows it.
type executionRow struct {
	*function.Execution
	FunctionName string
	Duration     string
	Output       string
	Preview      string
}

type functionsData struct {
	App        *store.App
	Functions  []functionView
	Total      int
	Executions []executionRow
	Page       pager
}

func (p *Pages) functionsPage(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	ctx := r.Context()
	app, err := p.Apps.OwnedApp(ctx, c, r.PathValue("app_id"))
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	fns, total, err := p.Functions.List(ctx, c, app.ID, listLimit, 0)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	offset := offsetParam(r)
	execs, execTotal, err := p.Functions.History(ctx, c, app.ID, "", historyLimit, offset)
	if err != nil {
		p.fail(w, r, c, err)
		return
	}
	d := functionsData{App: app, Total: total, Page: pager{Offset: offset, Limit: historyLimit, Total: execTotal, Shown: len(execs)}}
	names := map[string]string{}
	for _, f := range fns {
		names[f.ID] = f.Name
		d.Functions = append(d.Functions, functionView{Function: f, Schema: pretty(f.InputSchema), Input: sampleInput(f.InputSchema)})
	}
	for _, e := range execs {
		ms := e.DurationMS
		d.Executions = append(d.Executions, executionRow{Execution: e, FunctionName: names[e.FunctionID],
			Duration: duration(&ms), Output: pretty(e.Output), Preview: preview(e.Output, e.Error)})
	}
	p.render(w, r, http.StatusOK, "functions.html", view{Title: "Functions · " + app.Name, Nav: "apps", Email: c.Email, Data: d})
}

// sampleInput is a run form's starting input: the schema's required
// properties with an empty value of their type (an enum's first value),
// for the user to fill in.
func sampleInput(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type any   `json:"type"`
			Enum []any `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Required) == 0 {
		return "{}"
	}
	sample := map[string]any{}
	for _, name := range s.Required {
		prop := s.Properties[name]
		typ, _ := prop.Type.(string)
		switch {
		case len(prop.Enum) > 0:
			sample[name] = prop.Enum[0]
		case typ == "string":
			sample[name] = ""
		case typ == "integer" || typ == "number":
			sample[name] = 0
		case typ == "boolean":
			sample[name] = false
		case typ == "array":
			sample[name] = []any{}
		case typ == "object":
			sample[name] = map[string]any{}
		default:
			sample[name] = nil
		}
	}
	b, err := json.MarshalIndent(sample, "", "  ")
	if err != nil {
		return "{}"
	}
	return string(b)
}
