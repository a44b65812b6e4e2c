package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestObjectSchema: a tool takes an object, whatever schema its agent or
// function stored (the SDK refuses a tool whose schema is not an object's).
func TestObjectSchema(t *testing.T) {
	t.Parallel()
	for stored, want := range map[string]map[string]any{
		``:                                      {"type": "object"},
		`null`:                                  {"type": "object"},
		`{}`:                                    {"type": "object"},
		`{"properties": {"a": {}}}`:             {"type": "object", "properties": map[string]any{"a": map[string]any{}}},
		`{"type": "object", "required": ["a"]}`: {"type": "object", "required": []any{"a"}},
		`{"type": "string"}`:                    {"type": "object"},
		`[1]`:                                   {"type": "object"},
	} {
		require.Equal(t, want, objectSchema(json.RawMessage(stored)), stored)
	}
}
