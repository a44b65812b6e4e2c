package web

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
)

// TestLiveFormatting: what history rows show (durations, previews, JSON
// for reading) and how a page reads ?offset=.
func TestLiveFormatting(t *testing.T) {
	t.Parallel()
	ms := func(n int64) *int64 { return &n }
	for in, want := range map[*int64]string{nil: "", ms(0): "0 ms", ms(850): "850 ms", ms(1000): "1.0 s", ms(1250): "1.2 s",
		ms(59_949): "59.9 s", ms(125_000): "2 min 5 s"} {
		require.Equal(t, want, duration(in))
	}

	errText := "Activation cancelled"
	long := strings.Repeat("é", 200)
	for _, c := range []struct {
		out  string
		err  *string
		want string
	}{
		{`{"response": "echo: hi", "model": "echo"}`, nil, "echo: hi"},
		{`{"team": "billing", "escalated": false}`, nil, `{"team":"billing","escalated":false}`},
		{`{"a": "\u003cb\u003e \\u003c"}`, nil, `{"a":"<b> \\u003c"}`},
		{`null`, nil, ""},
		{``, nil, ""},
		{`null`, &errText, errText},
		{`"` + long + `"`, nil, `"` + strings.Repeat("é", 138) + "…"},
	} {
		require.Equal(t, c.want, preview(json.RawMessage(c.out), c.err), c.out)
	}

	require.Equal(t, "{\n  \"a\": \"<b> & \\\\u003c\"\n}", pretty(json.RawMessage(`{"a":"\u003cb\u003e \u0026 \\u003c"}`)))
	require.Equal(t, "", pretty(json.RawMessage("null")))
	require.Equal(t, "not json", pretty(json.RawMessage("not json")))

	require.Equal(t, "{\n  \"body\": \"\",\n  \"customer_email\": \"\",\n  \"n\": 0\n}",
		sampleInput(json.RawMessage(`{"properties": {"body": {"type": "string"}, "customer_email": {"type": "string"}, "n": {"type": "integer"}},
			"required": ["body", "customer_email", "n"]}`)))
	require.Equal(t, "{}", sampleInput(json.RawMessage(`{"type": "object"}`)))
	require.Equal(t, "{}", sampleInput(json.RawMessage(`[]`)))
	// An enum starts from its first value, whatever its type says; every
	// JSON Schema type has its empty value.
	require.Equal(t, "{\n  \"flag\": false,\n  \"items\": [],\n  \"meta\": {},\n  \"priority\": \"low\",\n  \"x\": 0\n}",
		sampleInput(json.RawMessage(`{"properties": {"priority": {"type": "string", "enum": ["low", "high"]}, "flag": {"type": "boolean"},
			"items": {"type": "array"}, "meta": {"type": "object"}, "x": {"type": "number"}}, "required": ["priority", "flag", "items", "meta", "x"]}`)))

	// An agent's form: an LLM agent's prompt; a custom agent's last input
	// (indented), or {} before its first run or when that input is too
	// big to be a starting point.
	llm, custom := store.Agent{AgentTypeID: "llm"}, store.Agent{AgentTypeID: "custom"}
	require.Equal(t, `{"prompt": ""}`, agentInput(llm, json.RawMessage(`{"prompt": "earlier"}`)))
	require.Equal(t, "{}", agentInput(custom, nil))
	require.Equal(t, "{\n  \"subject\": \"Refund\"\n}", agentInput(custom, json.RawMessage(`{"subject":"Refund"}`)))
	require.Equal(t, "{}", agentInput(custom, json.RawMessage(`{"body":"`+strings.Repeat("x", maxStartInput)+`"}`)))
	require.Equal(t, "{}", agentInput(custom, json.RawMessage(`[1]`)))

	for q, want := range map[string]int{"": 0, "?offset=20": 20, "?offset=-1": 0, "?offset=x": 0, "?offset=99999999999999999999": 0,
		"?offset=5000000": maxOffset} {
		require.Equal(t, want, offsetParam(httptest.NewRequest("GET", "/apps/x"+q, nil)), q)
	}
}

// TestSampleInputFromSchema: a custom agent's (or a function's) form
// starts from a skeleton of its input_schema: the schema's own example,
// else its required properties with their default, first example, enum
// value or const, else an empty value of their type, nested objects
// filled in likewise; the last input still wins for an agent.
func TestSampleInputFromSchema(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type": "object", "required": ["subject", "priority", "count", "tags", "customer", "note", "ratio"],
		"properties": {
			"subject": {"type": "string", "examples": ["Refund <now>", "Other"]},
			"priority": {"type": "string", "enum": ["low", "high"], "default": "high"},
			"count": {"type": ["integer", "null"]},
			"ratio": {"type": "number", "default": 0.25},
			"tags": {"type": "array", "items": {"type": "string"}},
			"customer": {"type": "object", "required": ["email"], "properties": {"email": {"type": "string", "format": "email"}, "name": {"type": "string"}}},
			"note": {},
			"optional": {"type": "string", "default": "not required: not shown"}}}`)
	require.Equal(t, `{
  "count": 0,
  "customer": {
    "email": ""
  },
  "note": null,
  "priority": "high",
  "ratio": 0.25,
  "subject": "Refund <now>",
  "tags": []
}`, sampleInput(schema))
	require.Equal(t, "{\n  \"subject\": \"Hello\"\n}", sampleInput(json.RawMessage(`{"type": "object", "required": ["x"],
		"examples": [{"subject": "Hello"}]}`)), "the schema's own example wins")
	require.Equal(t, "{\n  \"a\": 1\n}", sampleInput(json.RawMessage(`{"default": {"a": 1}}`)))
	require.Equal(t, "{}", sampleInput(json.RawMessage(`{"default": "not an object"}`)))
	require.Equal(t, "{}", sampleInput(nil))
	require.Equal(t, "{}", sampleInput(json.RawMessage(`{"required": [1, 2]}`)), "no names, nothing to fill")

	// Deep nesting stops at a bound.
	deep := `{"type": "object"}`
	for range 20 {
		deep = `{"type": "object", "required": ["x"], "properties": {"x": ` + deep + `}}`
	}
	require.Equal(t, maxSampleDepth, strings.Count(sampleInput(json.RawMessage(deep)), `"x"`))

	custom := store.Agent{AgentTypeID: "custom", InputSchema: json.RawMessage(`{"type": "object", "required": ["subject"],
		"properties": {"subject": {"type": "string"}}}`)}
	require.Equal(t, "{\n  \"subject\": \"\"\n}", agentInput(custom, nil), "never run: the schema's skeleton")
	require.Equal(t, "{\n  \"subject\": \"Refund\"\n}", agentInput(custom, json.RawMessage(`{"subject":"Refund"}`)), "the last input wins")
	require.Equal(t, "{\n  \"subject\": \"\"\n}", agentInput(custom, json.RawMessage(`{"body":"`+strings.Repeat("x", maxStartInput)+`"}`)),
		"a last input too big to start from: the skeleton")
	require.Equal(t, `{"prompt": ""}`, agentInput(store.Agent{AgentTypeID: "llm", InputSchema: custom.InputSchema}, nil))
}
