package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentplatform/agentplatform/internal/apps"
)

var placeholder = apps.Placeholder

// Render replaces the placeholders of a step's input template: a string
// that is exactly one placeholder becomes the value it names (an object, a
// number…); a placeholder inside a longer string becomes its text (a
// string as is, another value as JSON). scope is {"input": …, "steps":
// {ID: {"output": …}}}. A path that names nothing is an error naming it.
func Render(tmpl json.RawMessage, scope map[string]any) (json.RawMessage, error) {
	if len(bytes.TrimSpace(tmpl)) == 0 {
		return json.RawMessage("{}"), nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(tmpl))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the step's input is not JSON: %w", err)
	}
	// Decode stops after the first value; what follows would be dropped
	// silently, so a template is one value or an error.
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("the step's input is not JSON: data after its value")
	}
	out, err := render(v, scope)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func render(v any, scope map[string]any) (any, error) {
	switch t := v.(type) {
	case string:
		return renderString(t, scope)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			r, err := render(e, scope)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			r, err := render(e, scope)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

func renderString(s string, scope map[string]any) (any, error) {
	if m := placeholder.FindStringSubmatchIndex(s); m != nil && m[0] == 0 && m[1] == len(s) {
		return lookup(s[m[2]:m[3]], scope)
	}
	var err error
	out := placeholder.ReplaceAllStringFunc(s, func(p string) string {
		if err != nil {
			return ""
		}
		path := placeholder.FindStringSubmatch(p)[1]
		var v any
		if v, err = lookup(path, scope); err != nil {
			return ""
		}
		if str, ok := v.(string); ok {
			return str
		}
		b, _ := json.Marshal(v)
		return string(b)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lookup resolves a dotted path in scope; a number indexes an array.
func lookup(path string, scope map[string]any) (any, error) {
	var cur any = scope
	for _, seg := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[seg]
			if !ok {
				return nil, fmt.Errorf("%s not found", path)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("%s not found", path)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("%s not found", path)
		}
	}
	return cur, nil
}
