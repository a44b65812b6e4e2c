package appdata

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
)

// Validate checks a record's data against the model's fields and returns
// it as stored JSON. Every field must be one of the model's; required ones
// must be there and not null; values must have their field's type
// (integer: a whole number; datetime: RFC 3339; enum: one of its values).
// A failure is a 400 naming the field, e.g. data.priority. data's numbers
// are json.Number (exact) or float64.
func Validate(fields []apps.Field, data map[string]any) (json.RawMessage, error) {
	byName := make(map[string]apps.Field, len(fields))
	for _, f := range fields {
		byName[f.Name] = f
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first error is the same every time
	for _, k := range keys {
		f, ok := byName[k]
		if !ok {
			return nil, invalid("data."+k, "not a field of this model")
		}
		if data[k] == nil {
			if f.Required {
				return nil, apperr.Invalid("data."+k, "Missing required field: data."+k)
			}
			delete(data, k)
			continue
		}
		if err := checkValue(f, data[k]); err != nil {
			return nil, err
		}
	}
	for _, f := range fields {
		if _, ok := data[f.Name]; f.Required && !ok {
			return nil, apperr.Invalid("data."+f.Name, "Missing required field: data."+f.Name)
		}
	}
	return json.Marshal(data)
}

func invalid(path, what string) error {
	return apperr.Invalid(path, fmt.Sprintf("Invalid value for field %s: %s", path, what))
}

func checkValue(f apps.Field, v any) error {
	path := "data." + f.Name
	switch f.Type {
	case "string", "text":
		if _, ok := v.(string); !ok {
			return invalid(path, "expected a string")
		}
	case "integer":
		if !isInteger(v) {
			return invalid(path, "expected an integer")
		}
	case "number":
		if _, ok := number(v); !ok {
			return invalid(path, "expected a number")
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return invalid(path, "expected true or false")
		}
	case "datetime":
		s, ok := v.(string)
		if !ok {
			return invalid(path, "expected an RFC 3339 date-time string")
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return invalid(path, "expected an RFC 3339 date-time such as 2026-01-02T15:04:05Z")
		}
	case "enum":
		s, ok := v.(string)
		if !ok || !slices.Contains(f.Values, s) {
			return invalid(path, fmt.Sprintf("must be one of %v", f.Values))
		}
	case "json":
	default:
		return invalid(path, "the model's field has an unknown type")
	}
	return nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

func isInteger(v any) bool {
	if n, ok := v.(json.Number); ok {
		if _, err := n.Int64(); err == nil {
			return true
		}
	}
	f, ok := number(v)
	return ok && f == float64(int64(f))
}
