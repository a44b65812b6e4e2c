package appdata

import (
	"encoding/json"
	"fmt"
	"sort"

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
		if err := f.Check(data[k]); err != nil {
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
