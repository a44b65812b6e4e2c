package cleantext_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/cleantext"
)

func TestString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "plain é 😀", cleantext.String("plain é 😀"))
	require.Equal(t, "a\uFFFDb", cleantext.String("a\x00b"))
	require.Equal(t, "a\uFFFDb\uFFFD", cleantext.String("a\xffb\x00"))
	require.Equal(t, cleantext.None, cleantext.Check("fine"))
	require.Equal(t, cleantext.NUL, cleantext.Check("a\x00"))
	require.Equal(t, cleantext.InvalidUTF8, cleantext.Check("\xc3("))
}

func TestJSON(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{`{"a":"plain","b":[1,true,null]}`, `{"a":"plain","b":[1,true,null]}`},
		{`{"a":"x\u0000y"}`, `{"a":"x\ufffdy"}`},
		{`{"a\u0000":"\u0000\u0000"}`, `{"a\ufffd":"\ufffd\ufffd"}`},
		// An escaped backslash followed by u0000 is text, not an escape.
		{`{"a":"\\u0000"}`, `{"a":"\\u0000"}`},
		{`{"a":"\\\u0000"}`, `{"a":"\\\ufffd"}`},
		// Surrogates: a pair is an emoji, a lone one is refused by jsonb.
		{`{"a":"\ud83d\ude00"}`, `{"a":"\ud83d\ude00"}`},
		{`{"a":"\ud83d x"}`, `{"a":"\ufffd x"}`},
		{`{"a":"\ude00"}`, `{"a":"\ufffd"}`},
		{`{"a":"\uD83D\uDE00 \u00e9"}`, `{"a":"\uD83D\uDE00 \u00e9"}`},
		{"{\"a\":\"\xff\"}", "{\"a\":\"\uFFFD\"}"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, string(cleantext.JSON([]byte(tc.in))), tc.in)
		require.Equal(t, tc.in == tc.want, cleantext.CleanJSON([]byte(tc.in)), tc.in)
		if json.Valid([]byte(tc.in)) {
			require.True(t, json.Valid(cleantext.JSON([]byte(tc.in))), tc.in)
		}
	}
	// What json.Marshal makes of an LLM's text with NUL: stored with U+FFFD.
	b, _ := json.Marshal(map[string]string{"response": "a\x00b"})
	var out map[string]string
	require.NoError(t, json.Unmarshal(cleantext.JSON(b), &out))
	require.Equal(t, "a\uFFFDb", out["response"])
}

func TestFindJSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		doc  string
		path string
		p    cleantext.Problem
	}{
		{`{"name":"a\u0000"}`, "name", cleantext.NUL},
		{`{"ok":"x","input_data":{"items":[1,{"n":"ok"},{"n":"b\u0000"}]}}`, "input_data.items[2].n", cleantext.NUL},
		{`{"a":{"b":[["x","\ud800"]]}}`, "a.b[0][1]", cleantext.InvalidUTF8},
		{"{\"metadata\":{\"k\":\"\xfe\"}}", "metadata.k", cleantext.InvalidUTF8},
		{`{"a":1,"b\u0000c":2}`, "b\uFFFDc", cleantext.NUL},
		{`{"a":{"x":1},"b":{"c":"\u0000"}}`, "b.c", cleantext.NUL},
		{`["ok","\u0000"]`, "[1]", cleantext.NUL},
		{`"\u0000"`, "", cleantext.NUL},
		{`{"a":"\\u0000","b":"\u0000"}`, "b", cleantext.NUL},
	}
	for _, tc := range cases {
		path, p, ok := cleantext.FindJSON([]byte(tc.doc))
		require.True(t, ok, tc.doc)
		require.Equal(t, tc.path, path, tc.doc)
		require.Equal(t, tc.p, p, tc.doc)
	}
	for _, doc := range []string{`{"a":"fine"}`, `{"a":`, `[1,2]`, `{"a":"\\u0000"}`} {
		_, _, ok := cleantext.FindJSON([]byte(doc))
		require.False(t, ok, doc)
	}
}

func TestFindValue(t *testing.T) {
	t.Parallel()
	v := map[string]any{"agents": []any{map[string]any{"name": "ok"}, map[string]any{"name": "b\x00"}}, "a": "fine"}
	path, p, ok := cleantext.FindValue(v)
	require.True(t, ok)
	require.Equal(t, "agents[1].name", path)
	require.Equal(t, cleantext.NUL, p)
	path, p, ok = cleantext.FindValue(map[any]any{1: map[string]any{"x": "\xff"}})
	require.True(t, ok)
	require.Equal(t, "1.x", path)
	require.Equal(t, cleantext.InvalidUTF8, p)
	_, _, ok = cleantext.FindValue(map[string]any{"a": []any{"b", 1.5, nil}})
	require.False(t, ok)
}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"a":"\u0000"}`, `{"a":"\\u0000"}`, `"\ud800\udc00"`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		out := cleantext.JSON(doc)
		require.True(t, cleantext.CleanJSON(out), "%q -> %q", doc, out)
		if json.Valid(doc) {
			require.True(t, json.Valid(out), "%q -> %q", doc, out)
		}
		if cleantext.CleanJSON(doc) {
			require.Equal(t, doc, out)
		}
	})
}

// The cost on every request body and every result: an activation's
// output_data.
func BenchmarkCleanJSON(b *testing.B) {
	doc := []byte(`{"response":"echo: summarise the ticket about the broken login page, caf\u00e9 ☕","model":"echo","provider":"echo",` +
		`"usage":{"prompt_tokens":9,"completion_tokens":11,"total_tokens":20},"finish_reason":"stop"}`)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if !cleantext.CleanJSON(doc) {
			b.Fatal("clean")
		}
	}
}

func TestCapAndError(t *testing.T) {
	t.Parallel()
	require.Equal(t, "short", cleantext.Cap("short", 5))
	require.Equal(t, "sho"+cleantext.Truncated, cleantext.Cap("short", 3))
	// Never in the middle of a character.
	require.Equal(t, "a"+cleantext.Truncated, cleantext.Cap("aé", 2))
	big := strings.Repeat("x", 3<<20) + "\x00"
	got := cleantext.Error(big)
	require.Len(t, got, cleantext.ErrorBytes+len(cleantext.Truncated))
	require.True(t, strings.HasSuffix(got, cleantext.Truncated))
	require.Equal(t, "a\uFFFDb", cleantext.Error("a\x00b"))
}
