package web

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
)

// TestStepViews: how steps read whatever they hold: arguments as the
// model wrote them (JSON in a string, or not JSON at all), an LLM output
// of another shape as JSON, a wait's answers per call, and values cut at
// maxShown on a character's boundary.
func TestStepViews(t *testing.T) {
	t.Parallel()
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	v := stepViews([]store.Step{
		{Kind: store.StepLLM, Status: store.StepCompleted,
			Output: raw(`{"text": "", "tool_calls": [{"id": "c1", "name": "a", "arguments": "{\"x\":1}"}, {"id": "c2", "name": "b", "arguments": "not json"}]}`)},
		{Kind: store.StepLLM, Status: store.StepCompleted, Output: raw(`["odd"]`)},
		{Kind: store.StepWait, Status: store.StepCompleted,
			Input:  raw(`{"waitpoint_id": "w", "kind": "approval", "tool_calls": [{"tool_call_id": "c1", "name": "a", "arguments": {"x": 1}}, {"tool_call_id": "c2", "name": "b", "arguments": {}}]}`),
			Output: raw(`{"decisions": [{"tool_call_id": "c1", "type": "edit", "arguments": {"x": 2}}, {"tool_call_id": "c2", "type": "reject"}], "expired": true}`)},
		{Kind: store.StepWait, Status: store.StepCompleted,
			Input:  raw(`{"waitpoint_id": "w", "kind": "tool_result", "tool_calls": [{"tool_call_id": "c3", "name": "c", "arguments": {}}]}`),
			Output: raw(`{"results": [{"tool_call_id": "c3", "error": "no such ticket"}]}`)},
	})
	require.Equal(t, "The model asks for 2 tool calls", v[0].Title())
	require.Equal(t, "{\n  \"x\": 1\n}", v[0].Calls[0].Arguments)
	require.Equal(t, "not json", v[0].Calls[1].Arguments)
	require.Equal(t, "The model answers", v[1].Title())
	require.Equal(t, "[\n  \"odd\"\n]", v[1].Output)
	require.Equal(t, "Waiting for approval", v[2].Title())
	require.True(t, v[2].Expired)
	require.Equal(t, callView{ToolCallID: "c1", Name: "a", Arguments: "{\n  \"x\": 1\n}", Answer: "edit", Detail: "{\n  \"x\": 2\n}"}, v[2].Calls[0])
	require.Equal(t, "reject", v[2].Calls[1].Answer)
	require.Equal(t, "Waiting for the caller's result", v[3].Title())
	require.Equal(t, callView{ToolCallID: "c3", Name: "c", Arguments: "{}", Answer: "result", Detail: "no such ticket"}, v[3].Calls[0])

	big, err := json.Marshal(strings.Repeat("é", maxShown))
	require.NoError(t, err)
	s := shown(big)
	require.True(t, utf8.ValidString(s))
	require.Contains(t, s, "more bytes: the API has it whole")
	require.Less(t, len(s), maxShown+100)

	// A running activation that waits shows as waiting; one whose waiting
	// cannot be read, as running.
	a := store.Activation{ID: "a", Status: store.StatusRunning, Waiting: raw(`{"waitpoint_id": "w", "kind": "approval", "tool_calls": []}`)}
	require.NotNil(t, waitOf(&a))
	require.Equal(t, "waiting", activationRows([]store.Activation{a}, nil)[0].Shown)
	a.Waiting = raw(`{}`)
	require.Nil(t, waitOf(&a))
	require.Equal(t, "running", activationRows([]store.Activation{a}, nil)[0].Shown)
}
