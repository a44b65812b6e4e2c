package events

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// peek reads what notify writes: node, user and whether it is an event,
// for events inline or by reference, signals and token notes; anything
// else it leaves to the whole parse.
func TestPeek(t *testing.T) {
	for _, c := range []struct {
		w     wire
		event bool
	}{
		{wire{Node: "n1", User: "u1", Event: json.RawMessage(`{"type":"x"}`), Num: 1}, true},
		{wire{Node: "n1", User: "u1", Seq: 7, Num: 2}, true},
		{wire{Node: "n1", User: "", Topic: "activation.queued", Num: 3}, false},
		{wire{Node: "n1", User: "u1", Tok: &tokenNote{}, Num: 4}, false},
	} {
		b, err := json.Marshal(c.w)
		require.NoError(t, err)
		node, user, event, ok := peek(string(b))
		require.True(t, ok, string(b))
		require.Equal(t, c.w.Node, node)
		require.Equal(t, c.w.User, user)
		require.Equal(t, c.event, event, string(b))
	}
	for _, p := range []string{`{"u":"u1","n":"n1"}`, `{"n":"n\"1","u":"u"}`, `{"n":"n1"}`, `not json`} {
		_, _, _, ok := peek(p)
		require.False(t, ok, p)
	}
}
