package apps

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentplatform/agentplatform/internal/apperr"
)

// decoder walks untyped JSON (objects, arrays, json.Number…) into typed
// values, remembering the FIRST problem with its exact path
// ("agents[1].agent_config.model"). It keeps walking after a problem so that
// callers need no error check per field; they look at err once at the end.
// Methods of a nil *object return zero values, so a wrong type higher up
// does not cascade into panics.
type decoder struct{ err *apperr.Error }

func (d *decoder) missing(path string) {
	if d.err == nil && path == "" {
		d.err = apperr.Invalid("body", "Missing request body: a manifest object is required")
	}
	if d.err == nil {
		d.err = apperr.Invalid(path, "Missing required field: "+path)
	}
}

func (d *decoder) invalid(path, format string, args ...any) {
	if d.err != nil {
		return
	}
	detail := fmt.Sprintf(format, args...)
	if path == "" {
		d.err = apperr.Invalid("body", "Invalid manifest: "+detail)
		return
	}
	d.err = apperr.Invalid(path, fmt.Sprintf("Invalid value for field %s: %s", path, detail))
}

// object is a JSON object at a path.
type object struct {
	d    *decoder
	path string
	m    map[string]any
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// asObject is v as an object; nil (absent) is reported missing when
// required, any other non-object is a type error.
func (d *decoder) asObject(v any, path string, required bool) *object {
	switch m := v.(type) {
	case map[string]any:
		return &object{d: d, path: path, m: m}
	case nil:
		if required {
			d.missing(path)
		}
		return nil
	}
	d.invalid(path, "expected an object")
	return nil
}

func (o *object) has(key string) bool {
	if o == nil {
		return false
	}
	_, ok := o.m[key]
	return ok
}

func (o *object) get(key string) any {
	if o == nil {
		return nil
	}
	return o.m[key]
}

func (o *object) at(key string) string {
	if o == nil {
		return key
	}
	return join(o.path, key)
}

func (o *object) obj(key string, required bool) *object {
	if o == nil {
		return nil
	}
	return o.d.asObject(o.m[key], o.at(key), required)
}

func (o *object) str(key string, required bool) string {
	if o == nil {
		return ""
	}
	switch v := o.m[key].(type) {
	case string:
		if required && strings.TrimSpace(v) == "" {
			o.d.missing(o.at(key))
		}
		return v
	case nil:
		if required {
			o.d.missing(o.at(key))
		}
		return ""
	}
	o.d.invalid(o.at(key), "expected a string")
	return ""
}

// oneOf is a required string among values.
func (o *object) oneOf(key string, values ...string) string {
	s := o.str(key, true)
	if s != "" && !slices.Contains(values, s) {
		o.d.invalid(o.at(key), "must be one of %s", strings.Join(values, ", "))
	}
	return s
}

// maxLen checks a string's length in characters.
func (o *object) maxLen(key, s string, n int) {
	if o != nil && len([]rune(s)) > n {
		o.d.invalid(o.at(key), "must be at most %d characters", n)
	}
}

func (o *object) boolean(key string) bool {
	if o == nil {
		return false
	}
	switch v := o.m[key].(type) {
	case bool:
		return v
	case nil:
		return false
	}
	o.d.invalid(o.at(key), "expected a boolean")
	return false
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil && !math.IsInf(f, 0)
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// num is an optional number; nil when absent.
func (o *object) num(key string) *float64 {
	if o == nil || o.m[key] == nil {
		return nil
	}
	f, ok := number(o.m[key])
	if !ok {
		o.d.invalid(o.at(key), "expected a number")
		return nil
	}
	return &f
}

// integer is an optional integer in [lo, hi], def when absent.
func (o *object) integer(key string, def, lo, hi int) int {
	f := o.num(key)
	if f == nil {
		return def
	}
	if *f != math.Trunc(*f) {
		o.d.invalid(o.at(key), "expected an integer")
		return def
	}
	if *f < float64(lo) || *f > float64(hi) {
		o.d.invalid(o.at(key), "must be between %d and %d", lo, hi)
		return def
	}
	return int(*f)
}

// array returns the items of an array with the path of each.
func (o *object) array(key string, required bool) []any {
	if o == nil {
		return nil
	}
	switch v := o.m[key].(type) {
	case []any:
		return v
	case nil:
		if required {
			o.d.missing(o.at(key))
		}
		return nil
	}
	o.d.invalid(o.at(key), "expected an array")
	return nil
}

// stringList is an optional array of strings.
func (o *object) stringList(key string) []string {
	items := o.array(key, false)
	out := make([]string, 0, len(items))
	for i, item := range items {
		s, ok := item.(string)
		if !ok {
			o.d.invalid(index(o.at(key), i), "expected a string")
			continue
		}
		out = append(out, s)
	}
	return out
}

// httpURL checks an optional absolute http(s) URL.
func (o *object) httpURL(key string, required bool) string {
	s := o.str(key, required)
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		o.d.invalid(o.at(key), "must be an absolute http or https URL")
	}
	return s
}

// rawJSON is the value at key re-encoded as JSON, nil when absent.
func (o *object) rawJSON(key string) json.RawMessage {
	v := o.get(key)
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		o.d.invalid(o.at(key), "not representable as JSON")
		return nil
	}
	return b
}

// normalize turns any decoded value (from huma, YAML…) into what the
// decoder walks: JSON types with numbers as json.Number.
func normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(b)
}

// decodeJSON parses one JSON value keeping numbers exact.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}
