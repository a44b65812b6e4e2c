package apps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Check reports whether v (decoded JSON, numbers as json.Number or
// float64) is a value of f: a 400 naming data.<field> otherwise. Null and
// absence are the record's concern (Required), not the value's.
func (f Field) Check(v any) error {
	path := "data." + f.Name
	switch f.Type {
	case "string", "text":
		if _, ok := v.(string); !ok {
			return invalidValue(path, "expected a string")
		}
	case "integer":
		if !isInteger(v) {
			return invalidValue(path, "expected an integer")
		}
	case "number":
		if _, ok := number(v); !ok {
			return invalidValue(path, "expected a number")
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return invalidValue(path, "expected true or false")
		}
	case "datetime":
		s, ok := v.(string)
		if !ok {
			return invalidValue(path, "expected an RFC 3339 date-time string")
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return invalidValue(path, "expected an RFC 3339 date-time such as 2026-01-02T15:04:05Z")
		}
	case "enum":
		s, ok := v.(string)
		if !ok || !slices.Contains(f.Values, s) {
			return invalidValue(path, fmt.Sprintf("must be one of %v", f.Values))
		}
	case "json":
	default:
		return invalidValue(path, "the model's field has an unknown type")
	}
	return nil
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

func invalidValue(path, what string) error {
	return apperr.Invalid(path, fmt.Sprintf("Invalid value for field %s: %s", path, what))
}

// CheckRetype refuses to give model m the fields given when its stored
// records hold values of a field whose type (or enum values) changes that
// the new definition does not accept: a 409 naming the field and how many
// records. Lists would otherwise compare such values as the new type (on
// PostgreSQL a cast that fails). It reads the model's records once, and
// only when a field's type changes.
func CheckRetype(ctx context.Context, st *store.Store, m *store.AppModel, fields []Field) error {
	var old []Field
	_ = json.Unmarshal(m.Fields, &old)
	was := make(map[string]Field, len(old))
	for _, f := range old {
		was[f.Name] = f
	}
	changed := map[string]Field{}
	for _, f := range fields {
		if o, ok := was[f.Name]; ok && f.Type != "json" && (o.Type != f.Type || !slices.Equal(o.Values, f.Values)) {
			changed[f.Name] = f
		}
	}
	if len(changed) == 0 {
		return nil
	}
	bad := map[string]int{}
	err := st.RecordScan(ctx, m.ID, func(data []byte) error {
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if dec.Decode(&obj) != nil {
			return nil
		}
		for name, f := range changed {
			if v, ok := obj[name]; ok && v != nil && f.Check(v) != nil {
				bad[name]++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(bad))
	for name := range bad {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil
	}
	name, f := names[0], changed[names[0]]
	records := "records hold values"
	if bad[name] == 1 {
		records = "record holds a value"
	}
	return apperr.Newf(apperr.Conflict, "Cannot change field %s of model %s to %s: %d stored %s that do not convert; update or delete them first",
		name, m.Slug, f.Type, bad[name], records)
}
