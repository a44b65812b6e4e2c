package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/apps"
)

var placeholder = apps.Placeholder

// Render replaces the placeholders of a step's input template: a string
// that is exactly one placeholder becomes the value it names (an object, a
// number…); a placeholder inside a longer string becomes its text (a
// string as is, another value as JSON). scope is {"input": …, "steps":
// {ID: {"output": …}}}. A path that names nothing is an error naming it.
//
// The rendered input obeys the limit of a request body
// (apperr.MaxBodyBytes): a template can name a big value many times, so
// it is written piece by piece into a buffer that refuses to grow past the
// limit, and the error names the limit. What is held at once is that
// buffer and the one piece being written.
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
	out := &capped{limit: apperr.MaxBodyBytes}
	if err := out.render(v, scope); err != nil {
		return nil, err
	}
	return out.buf.Bytes(), nil
}

// capped is a rendering under way: JSON text that may not pass limit bytes.
type capped struct {
	buf   bytes.Buffer
	limit int
}

func (c *capped) tooLarge() error {
	return fmt.Errorf("the step's rendered input is larger than %d MiB, the limit of a request body", c.limit>>20)
}

// fits reports whether n more bytes stay within the limit.
func (c *capped) fits(n int) bool { return c.buf.Len()+n <= c.limit }

func (c *capped) write(b []byte) error {
	if !c.fits(len(b)) {
		return c.tooLarge()
	}
	c.buf.Write(b)
	return nil
}

// value writes v as JSON; keys in sorted order, as json.Marshal writes a
// map.
func (c *capped) value(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.write(b)
}

// text writes s's JSON escaping, without the quotes around it. Escaping
// never shortens a string, so one longer than the room left fails before
// it is encoded.
func (c *capped) text(s string) error {
	if !c.fits(len(s)) {
		return c.tooLarge()
	}
	b, _ := json.Marshal(s)
	return c.write(b[1 : len(b)-1])
}

func (c *capped) render(v any, scope map[string]any) error {
	switch t := v.(type) {
	case string:
		return c.renderString(t, scope)
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if err := c.write([]byte("{")); err != nil {
			return err
		}
		for i, k := range keys {
			if i > 0 {
				if err := c.write([]byte(",")); err != nil {
					return err
				}
			}
			if err := c.value(k); err != nil {
				return err
			}
			if err := c.write([]byte(":")); err != nil {
				return err
			}
			if err := c.render(t[k], scope); err != nil {
				return err
			}
		}
		return c.write([]byte("}"))
	case []any:
		if err := c.write([]byte("[")); err != nil {
			return err
		}
		for i, e := range t {
			if i > 0 {
				if err := c.write([]byte(",")); err != nil {
					return err
				}
			}
			if err := c.render(e, scope); err != nil {
				return err
			}
		}
		return c.write([]byte("]"))
	}
	return c.value(v)
}

func (c *capped) renderString(s string, scope map[string]any) error {
	matches := placeholder.FindAllStringSubmatchIndex(s, -1)
	if len(matches) == 1 && matches[0][0] == 0 && matches[0][1] == len(s) {
		v, err := lookup(s[matches[0][2]:matches[0][3]], scope)
		if err != nil {
			return err
		}
		return c.value(v)
	}
	if err := c.write([]byte(`"`)); err != nil {
		return err
	}
	last := 0
	for _, m := range matches {
		if err := c.text(s[last:m[0]]); err != nil {
			return err
		}
		last = m[1]
		v, err := lookup(s[m[2]:m[3]], scope)
		if err != nil {
			return err
		}
		str, ok := v.(string)
		if !ok {
			b, _ := json.Marshal(v)
			str = string(b)
		}
		if err := c.text(str); err != nil {
			return err
		}
	}
	if err := c.text(s[last:]); err != nil {
		return err
	}
	return c.write([]byte(`"`))
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
