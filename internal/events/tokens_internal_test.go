package events

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// clock is a settable time for a bus.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (b *Bus) logCount() int {
	b.tokens.mu.Lock()
	defer b.tokens.mu.Unlock()
	return len(b.tokens.logs)
}

// TestTokenRetention: an ended run's log goes TokenRetention later, or
// sooner when the retained logs are over their budget, but not while a
// stream reads it; a copy goes with its last reader.
func TestTokenRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testdb.Open(t, store.SQLite)
	b := New(s, testdb.Logger())
	t.Cleanup(b.Stop)
	c := &clock{now: time.Now()}
	b.now = c.Now
	user := uuid.NewString()

	old, read, fresh := uuid.NewString(), uuid.NewString(), uuid.NewString()
	for _, id := range []string{old, read} {
		b.PublishDelta(ctx, user, id, "x")
		b.EndTokens(user, id)
	}
	reader := b.ReadTokens(user, read)
	c.add(TokenRetention + time.Second)
	b.EndTokens(user, fresh) // ends a run, which sweeps
	require.Equal(t, 2, b.logCount(), "the old log is gone, the read one and the fresh one stay")
	require.Equal(t, []string{"x"}, reader.After(0).Frags)
	reader.Close()
	b.EndTokens(user, uuid.NewString())
	require.Equal(t, 2, b.logCount(), "the read log went with its reader")

	// A copy (nothing runs it here) goes with its last reader.
	copyID := uuid.NewString()
	r1, r2 := b.ReadTokens(user, copyID), b.ReadTokens(user, copyID)
	r1.Close()
	require.Equal(t, 3, b.logCount())
	r2.Close()
	require.Equal(t, 2, b.logCount())

	// Over the byte budget, the oldest ended logs go at once.
	b.tokens.mu.Lock()
	b.tokens.budget = 10_000
	b.tokens.mu.Unlock()
	big := strings.Repeat("a", 3000)
	var ids []string
	for range 10 {
		id := uuid.NewString()
		ids = append(ids, id)
		b.PublishDelta(ctx, user, id, big)
		b.EndTokens(user, id)
	}
	b.tokens.mu.Lock()
	retained := b.tokens.retainedBytes
	_, oldest := b.tokens.logs[ids[0]]
	_, newest := b.tokens.logs[ids[9]]
	b.tokens.mu.Unlock()
	require.LessOrEqual(t, retained, 10_000)
	require.False(t, oldest)
	require.True(t, newest)
}

// TestTokenGapIsRepaired: a copy that misses a notification asks again and
// gets the whole log from the node that runs the activation.
func TestTokenGapIsRepaired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t, store.Postgres)
	open := func() *Bus {
		s, err := store.Open(ctx, url)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		require.NoError(t, s.Migrate(ctx, testdb.Logger()))
		b := New(s, testdb.Logger())
		require.NoError(t, b.Start(ctx))
		t.Cleanup(b.Stop)
		return b
	}
	reader, runner := open(), open()
	user, id := uuid.NewString(), uuid.NewString()
	runner.PublishDelta(ctx, user, id, "a")
	runner.PublishDelta(ctx, user, id, "b")
	runner.tokens.mu.Lock()
	run := runner.tokens.logs[id].run
	runner.tokens.mu.Unlock()

	// A copy here that never watched, then fragment 2 alone: a gap.
	reader.tokens.mu.Lock()
	reader.tokens.init()
	reader.tokens.logs[id] = &tokenLog{user: user, readers: 1}
	reader.tokens.mu.Unlock()
	r := &TokenReader{b: reader, id: id}
	reader.onTokenNote(user, &tokenNote{Activation: id, Run: run, From: 2, Frags: []string{"b"}})
	require.Empty(t, r.After(0).Frags, "fragment 2 is not taken without fragment 1")

	deadline := time.After(10 * time.Second)
	for tk := r.After(0); len(tk.Frags) < 2; tk = r.After(0) {
		select {
		case <-tk.Changed:
		case <-deadline:
			t.Fatalf("gap not repaired: %q", tk.Frags)
		}
	}
	require.Equal(t, []string{"a", "b"}, r.After(0).Frags)
	r.Close()
}

// BenchmarkTokenLogUnread is what the token log adds to an activation
// nobody streams: a fragment, then the end of the run.
func BenchmarkTokenLogUnread(b *testing.B) {
	s := testdb.Open(b, store.SQLite)
	bus := New(s, testdb.Logger())
	b.Cleanup(bus.Stop)
	ctx := context.Background()
	user := uuid.NewString()
	ids := make([]string, 4096)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := ids[i%len(ids)]
		bus.PublishDelta(ctx, user, id, "a reply of some words")
		bus.EndTokens(user, id)
	}
}
