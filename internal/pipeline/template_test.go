package pipeline

import (
	"bytes"
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func testScope() map[string]any {
	return map[string]any{
		"input": map[string]any{"text": "hi", "n": 3.0, "ok": true, "none": nil, "list": []any{"a", map[string]any{"b": "deep"}},
			"obj": map[string]any{"k": "v"}, "quote": `say "x" & <y>`},
		"steps": map[string]any{"clean": map[string]any{"output": map[string]any{"text": "HI", "tags": []any{"t0", "t1"}}}},
	}
}

// sameJSON compares two documents as values, not bytes: Render re-encodes
// (sorted keys, no spaces).
func sameJSON(t *testing.T, want, got string) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %q: %v", want, err)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("got %q is not JSON: %v", got, err)
	}
	if !reflect.DeepEqual(w, g) {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, tmpl, want string
	}{
		{"empty is an empty object", ``, `{}`},
		{"no placeholders", `{"a":[1,"x",{"b":null}],"c":1.50}`, `{"a":[1,"x",{"b":null}],"c":1.50}`},
		{"whole string keeps a string", `{"t":"{{input.text}}"}`, `{"t":"hi"}`},
		{"whole string keeps a number", `{"n":"{{input.n}}"}`, `{"n":3}`},
		{"whole string keeps a bool", `{"b":"{{input.ok}}"}`, `{"b":true}`},
		{"whole string keeps null", `{"z":"{{input.none}}"}`, `{"z":null}`},
		{"whole string keeps an object", `{"o":"{{input.obj}}"}`, `{"o":{"k":"v"}}`},
		{"whole string keeps an array", `{"l":"{{steps.clean.output.tags}}"}`, `{"l":["t0","t1"]}`},
		{"whole input", `"{{input}}"`, `{"text":"hi","n":3,"ok":true,"none":null,"list":["a",{"b":"deep"}],"obj":{"k":"v"},"quote":"say \"x\" & <y>"}`},
		{"array index", `{"x":"{{input.list.1.b}}","y":"{{steps.clean.output.tags.0}}"}`, `{"x":"deep","y":"t0"}`},
		{"spaces inside the braces", `{"t":"{{ input.text }}","u":"{{  steps.clean.output.text}}"}`, `{"t":"hi","u":"HI"}`},
		{"embedded string", `{"t":"<{{input.text}}>"}`, `{"t":"<hi>"}`},
		{"embedded number and bool", `{"t":"n={{input.n}} ok={{input.ok}}"}`, `{"t":"n=3 ok=true"}`},
		{"embedded null", `{"t":"z={{input.none}}"}`, `{"t":"z=null"}`},
		{"embedded object is its JSON", `{"t":"o={{input.obj}}"}`, `{"t":"o={\"k\":\"v\"}"}`},
		{"two placeholders", `{"t":"{{input.text}}{{steps.clean.output.text}}"}`, `{"t":"hiHI"}`},
		{"quotes survive", `{"t":"[{{input.quote}}]","u":"{{input.quote}}"}`, `{"t":"[say \"x\" & <y>]","u":"say \"x\" & <y>"}`},
		{"nested in arrays and objects", `{"a":[{"b":["{{input.n}}","x{{input.n}}"]}],"c":{"d":{"e":"{{input.obj.k}}"}}}`, `{"a":[{"b":[3,"x3"]}],"c":{"d":{"e":"v"}}}`},
		{"keys are not templates", `{"{{input.text}}":1}`, `{"{{input.text}}":1}`},
		{"not a placeholder", `{"t":"{{}} {{ }} {input.text} {{input.text"}`, `{"t":"{{}} {{ }} {input.text} {{input.text"}`},
		{"a top-level scalar", `"{{input.n}}"`, `3`},
		{"big numbers stay exact", `{"n":12345678901234567890}`, `{"n":12345678901234567890}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Render(json.RawMessage(tc.tmpl), testScope())
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "big numbers stay exact" && !bytes.Contains(got, []byte("12345678901234567890")) {
				t.Fatalf("got %s", got)
			}
			sameJSON(t, tc.want, string(got))
		})
	}
}

func TestRenderErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, tmpl, want string
	}{
		{"missing input key", `{"t":"{{input.nope}}"}`, "input.nope not found"},
		{"missing deeper", `{"t":"x {{input.obj.k.z}}"}`, "input.obj.k.z not found"},
		{"missing step", `{"t":"{{steps.later.output.x}}"}`, "steps.later.output.x not found"},
		{"index out of range", `{"t":"{{steps.clean.output.tags.2}}"}`, "steps.clean.output.tags.2 not found"},
		{"index not a number", `{"t":"{{input.list.first}}"}`, "input.list.first not found"},
		{"negative index", `{"t":"{{input.list.-1}}"}`, "input.list.-1 not found"},
		{"into a scalar", `{"t":"{{input.text.length}}"}`, "input.text.length not found"},
		{"deep in an array", `[{"a":["ok","{{input.gone}}"]}]`, "input.gone not found"},
		{"the second placeholder", `{"t":"{{input.text}} {{input.gone}}"}`, "input.gone not found"},
		{"not JSON", `{"t":`, "not JSON"},
		{"data after the value", `{"t":1} {"u":2}`, "not JSON"},
		{"a second value", `"{{input.text}}" "{{input.gone}}"`, "not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Render(json.RawMessage(tc.tmpl), testScope())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %s, %v; want an error containing %q", got, err, tc.want)
			}
		})
	}
}

// FuzzRender: no template panics Render; what it answers is JSON; a JSON
// template without placeholders renders to the same value.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `"{{input.text}}"`, `{"a":"{{input.n}}"}`, `{"a":"x{{ input.obj }}y"}`, `[1,"{{steps.clean.output.tags.1}}",{"b":"{{input.list.1.b}}"}]`,
		`{"a":"{{input.nope}}"}`, `{"a":"{{{{input.text}}}}"}`, `{"a":"{{input..text}}"}`, `"\u007b\u007binput.text}}"`, `{"a":1e400}`,
		`{"a":"\ud800"}`, `{"a":1,"a":2}`, `{"a":"{{input.list.99999999999999999999}}"}`, `1 2`, `{"a":"{{input.quote}}{{input.quote}}"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tmpl string) {
		out, err := Render(json.RawMessage(tmpl), testScope())
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Render(%q) = %q, not JSON", tmpl, out)
		}
		if strings.Contains(tmpl, "{{") || !json.Valid([]byte(tmpl)) {
			return
		}
		var want, got any
		dec := json.NewDecoder(strings.NewReader(tmpl))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		// "\u007b\u007b" is "{{" once decoded, and Render reads decoded
		// strings: such a template holds placeholders.
		if hasBraces(want) {
			return
		}
		dec = json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("Render(%q) = %q, want the template's value", tmpl, out)
		}
	})
}

func hasBraces(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, "{{")
	case map[string]any:
		for _, e := range t {
			if hasBraces(e) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if hasBraces(e) {
				return true
			}
		}
	}
	return false
}

// TestRenderBounded: a template that names a big value many times fails
// once its rendering passes the limit of a request body, naming the
// limit, and stops there: 500 × {{input.x}} over a 200 KB input (100 MB
// rendered whole before) allocates a few MiB, whether the copies are in
// one string or are whole values. Not parallel: it reads the process's
// allocation counter, which parallel tests would move.
func TestRenderBounded(t *testing.T) {
	scope := map[string]any{"input": map[string]any{"x": strings.Repeat("x", 200<<10)}}
	many := make([]string, 500)
	for i := range many {
		many[i] = `"{{input.x}}"`
	}
	for name, tmpl := range map[string]string{
		"in one string":   `{"t":"` + strings.Repeat("{{input.x}}", 500) + `"}`,
		"as whole values": `[` + strings.Join(many, ",") + `]`,
	} {
		_, _ = Render(json.RawMessage(tmpl), scope) // warm: lazily built regexp and runtime state
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out, err := Render(json.RawMessage(tmpl), scope)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") {
			t.Fatalf("%s: got %d bytes, %v; want an error naming the 1 MiB limit", name, len(out), err)
		}
		// About 3 MiB: the buffer's doublings up to the limit. The race
		// detector's pool drops add some to the regexp's matching.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Fatalf("%s: rendering allocated %d MiB before it failed", name, alloc>>20)
		}
	}
	// Up to the limit, it renders.
	out, err := Render(json.RawMessage(`{"t":"{{input.x}}{{input.x}}"}`), scope)
	if err != nil || len(out) < 400<<10 {
		t.Fatalf("got %d bytes, %v", len(out), err)
	}
}

// FuzzQuoted: the renderer escapes a string exactly as encoding/json does
// (it writes strings itself, to stop at the limit without a copy).
func FuzzQuoted(f *testing.F) {
	for _, s := range []string{"", "plain", `"q" \ /`, "\n\r\t\b\f\x00\x01\x1f\x7f", "<a href='x'>&amp;</a>", "\u2028\u2029",
		"é漢字🙂", "\xff\xfe", "a\xc3", "\xe2\x82", "\xed\xa0\x80", string([]byte{0xf0, 0x9f, 0x99})} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := &capped{limit: 1 << 20}
		if err := c.quoted(s); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(s)
		if c.buf.String() != string(want) {
			t.Fatalf("quoted(%q) = %s, want %s", s, c.buf.String(), want)
		}
	})
}
