package events

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
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

// The notifier's goroutine stays a while after it has sent everything
// (what comes meanwhile it sends itself), ends after that, and ends at
// once when the bus stops, or at once when it had stopped before.
func TestNotifierLingers(t *testing.T) {
	t.Parallel()
	s := testdb.Open(t, store.Postgres)
	b := New(s, testdb.Logger())
	b.notes.lingerFor = time.Hour
	running := func() (bool, int) {
		b.notes.mu.Lock()
		defer b.notes.mu.Unlock()
		return b.notes.running, len(b.notes.pending)
	}
	sent := func() {
		t.Helper()
		require.Eventually(t, func() bool { _, n := running(); return n == 0 }, 5*time.Second, time.Millisecond)
	}
	// Another node subscribes to the user: only then is an event notified.
	ev := &Event{Type: ActivationCompleted, UserID: uuid.NewString()}
	b.interest.heard(ev.UserID)

	b.notify(ev)
	sent()
	on, _ := running()
	require.True(t, on, "gone once it had sent")
	b.notify(ev)
	sent()
	on, _ = running()
	require.True(t, on)
	b.Stop()
	require.Eventually(t, func() bool { on, _ := running(); return !on }, 5*time.Second, time.Millisecond, "still there after Stop")

	b = New(s, testdb.Logger())
	b.notes.lingerFor = 10 * time.Millisecond
	b.interest.heard(ev.UserID)
	b.notify(ev)
	require.Eventually(t, func() bool { on, _ := running(); return !on }, 5*time.Second, time.Millisecond, "still there after its time")
	b.Stop()

	b = New(s, testdb.Logger())
	b.notes.lingerFor = time.Hour
	b.interest.heard(ev.UserID)
	b.Stop()
	b.notify(ev)
	require.Eventually(t, func() bool { on, _ := running(); return !on }, 5*time.Second, time.Millisecond, "a notification after Stop lingers")
}
