package events

import (
	"encoding/json"
	"strings"
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

// A node's interest goes out in as few signals as fit, every user once.
func TestInterestChunks(t *testing.T) {
	t.Parallel()
	require.Empty(t, interestChunks(nil, 20))
	require.Equal(t, []string{"aaaa,bbbb", "cccc,dddd", "e"}, interestChunks([]string{"aaaa", "bbbb", "cccc", "dddd", "e"}, 9))
	require.Equal(t, []string{"a-very-long-id", "b"}, interestChunks([]string{"a-very-long-id", "b"}, 5))
	var users []string
	for range 1000 {
		users = append(users, uuid.NewString())
	}
	chunks := interestChunks(users, maxInterestBytes)
	require.Len(t, chunks, 7) // 1,000 ids of 36 bytes and a comma, 6,000 bytes a signal
	var back []string
	for _, c := range chunks {
		require.LessOrEqual(t, len(c), maxInterestBytes)
		back = append(back, strings.Split(c, ",")...)
	}
	require.Equal(t, users, back)
}
