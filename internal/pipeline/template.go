package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentplatform/agentplatform/internal/apps"
	"github.com/agentplatform/agentplatform/internal/limits"
)

var placeholder = apps.Placeholder

// Render replaces the placeholders of a step's input template: a string
// that is exactly one placeholder becomes the value it names (an object, a
// number…); a placeholder inside a longer string becomes its text (a
// string as is, another value as JSON). scope is {"input": …, "steps":
// {ID: {"output": …}}}. A path that names nothing is an error naming it.
//
// The rendered input obeys the limit of a request body
// (limits.BodyBytes): a template can name a big value many times, so
// it is written piece by piece into a buffer that refuses to grow past the
// limit, and the error names the limit. What is held at once is that
// buffer (and, for an object or array placed inside a longer string, its
// JSON text, under the same limit).
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
	out := &capped{limit: limits.BodyBytes}
	if err := out.render(v, scope); err != nil {
		return nil, err
	}
	return out.buf.Bytes(), nil
}

// capped is a rendering under way: JSON text that may not pass limit bytes.
// It writes every value itself, piece by piece, so that nothing as big as
// the value is built beside it.
type capped struct {
	buf   bytes.Buffer
	limit int
}

func (c *capped) tooLarge() error {
	return fmt.Errorf("the step's rendered input is larger than %d MiB, the limit of a request body", c.limit>>20)
}

// fits reports whether n more bytes stay within the limit.
func (c *capped) fits(n int) bool { return c.buf.Len()+n <= c.limit }

func (c *capped) write(s string) error {
	if !c.fits(len(s)) {
		return c.tooLarge()
	}
	c.buf.WriteString(s)
	return nil
}

// walk writes v as JSON, its strings through str; keys in sorted order, as
// json.Marshal writes a map.
func (c *capped) walk(v any, str func(string) error) error {
	switch t := v.(type) {
	case string:
		return str(t)
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if err := c.write("{"); err != nil {
			return err
		}
		for i, k := range keys {
			if i > 0 {
				if err := c.write(","); err != nil {
					return err
				}
			}
			if err := c.quoted(k); err != nil {
				return err
			}
			if err := c.write(":"); err != nil {
				return err
			}
			if err := c.walk(t[k], str); err != nil {
				return err
			}
		}
		return c.write("}")
	case []any:
		if err := c.write("["); err != nil {
			return err
		}
		for i, e := range t {
			if i > 0 {
				if err := c.write(","); err != nil {
					return err
				}
			}
			if err := c.walk(e, str); err != nil {
				return err
			}
		}
		return c.write("]")
	}
	b, err := json.Marshal(v) // a number, a bool or null: a few bytes
	if err != nil {
		return err
	}
	return c.write(string(b))
}

// render writes a template value: its strings are templates.
func (c *capped) render(v any, scope map[string]any) error {
	return c.walk(v, func(s string) error { return c.renderString(s, scope) })
}

// value writes a value of the scope: its strings are data.
func (c *capped) value(v any) error { return c.walk(v, c.quoted) }

func (c *capped) quoted(s string) error {
	if err := c.write(`"`); err != nil {
		return err
	}
	if err := c.text(s); err != nil {
		return err
	}
	return c.write(`"`)
}

const hexDigits = "0123456789abcdef"

// text writes s escaped as encoding/json escapes a string (HTML-safe,
// invalid UTF-8 as U+FFFD), without the quotes around it. Escaping never
// shortens a string, so one longer than the room left fails at once.
func (c *capped) text(s string) error {
	if !c.fits(len(s)) {
		return c.tooLarge()
	}
	start := 0
	escape := func(i, next int, esc string) error {
		c.buf.WriteString(s[start:i])
		start = next
		return c.write(esc)
	}
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			var esc string
			switch {
			case b == '"' || b == '\\':
				esc = `\` + string(b)
			case b == '\n':
				esc = `\n`
			case b == '\r':
				esc = `\r`
			case b == '\t':
				esc = `\t`
			case b == '\b':
				esc = `\b`
			case b == '\f':
				esc = `\f`
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				esc = `\u00` + string(hexDigits[b>>4]) + string(hexDigits[b&0xF])
			default:
				i++
				continue
			}
			if err := escape(i, i+1, esc); err != nil {
				return err
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if err := escape(i, i+1, `\ufffd`); err != nil {
				return err
			}
		case r == '\u2028' || r == '\u2029':
			if err := escape(i, i+size, `\u202`+string(hexDigits[r&0xF])); err != nil {
				return err
			}
		}
		i += size
	}
	return c.write(s[start:])
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
	if err := c.write(`"`); err != nil {
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
		if str, ok := v.(string); ok {
			err = c.text(str)
		} else {
			// Another value's JSON text, escaped as a string: written
			// apart, under the same limit, then escaped in.
			inner := &capped{limit: c.limit}
			if err = inner.value(v); err == nil {
				err = c.text(inner.buf.String())
			}
		}
		if err != nil {
			return err
		}
	}
	if err := c.text(s[last:]); err != nil {
		return err
	}
	return c.write(`"`)
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
