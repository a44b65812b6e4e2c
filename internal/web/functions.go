package web

import (
	"bytes"
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

// sampleInput is a run form's starting input, built from the input's JSON
// Schema: the schema's own example (examples[0] or default, an object)
// when it has one, else its required properties, each with its default,
// its first example, its enum's first value or const, else an empty value
// of its type (an object's own required properties filled in likewise),
// for the user to fill in. Anything unreadable starts from {}.
func sampleInput(schema json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber() // numbers as the schema wrote them
	var s map[string]any
	if dec.Decode(&s) != nil || s == nil {
		return "{}"
	}
	sample, ok := given(s).(map[string]any)
	if !ok {
		sample, _ = skeleton(s, 0).(map[string]any)
	}
	if sample == nil {
		return "{}"
	}
	b, err := json.MarshalIndent(sample, "", "  ")
	if err != nil {
		return "{}"
	}
	return string(unescapeHTML(b))
}

// maxSampleDepth bounds how deep sampleInput follows nested objects.
const maxSampleDepth = 8

// given is the value schema s itself proposes (its default, its first
// example, its enum's first value, its const), or nil.
func given(s map[string]any) any {
	if v, ok := s["default"]; ok {
		return v
	}
	if ex, ok := s["examples"].([]any); ok && len(ex) > 0 {
		return ex[0]
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	return s["const"]
}

// skeleton is the placeholder value of schema s: what it proposes, else
// the empty value of its type, an object with its required properties.
func skeleton(s map[string]any, depth int) any {
	if v := given(s); v != nil {
		return v
	}
	switch schemaType(s) {
	case "string":
		return ""
	case "integer", "number":
		return 0
	case "boolean":
		return false
	case "array":
		return []any{}
	case "object", "":
		obj := map[string]any{}
		required, _ := s["required"].([]any)
		props, _ := s["properties"].(map[string]any)
		if depth >= maxSampleDepth {
			return obj
		}
		for _, r := range required {
			name, ok := r.(string)
			if !ok {
				continue
			}
			prop, _ := props[name].(map[string]any)
			if prop == nil {
				obj[name] = nil
				continue
			}
			obj[name] = skeleton(prop, depth+1)
		}
		if schemaType(s) == "" && len(obj) == 0 && depth > 0 {
			return nil // a property of no stated type: the user fills it in
		}
		return obj
	}
	return nil
}

// schemaType is s's type: its type, or the first non-null one of a list.
func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, e := range t {
			if name, ok := e.(string); ok && name != "null" {
				return name
			}
		}
	}
	return ""
}
