package events_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/events"
	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
)

// tokensUntil waits until r has at least n fragments after `after` (and,
// if done, is done), and returns them.
func tokensUntil(t *testing.T, r *events.TokenReader, after, n int, done bool) events.Tokens {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		tk := r.After(after)
		if len(tk.Frags) >= n && (!done || tk.Done) {
			return tk
		}
		select {
		case <-tk.Changed:
		case <-deadline:
			t.Fatalf("have %q (done %v), want %d fragments (done %v)", tk.Frags, tk.Done, n, done)
		}
	}
}

// TestTokenLogOneNode: a stream that starts late or resumes gets the
// fragments it has not seen, from a log kept until the run ends and a
// little after; nothing of it goes to the database.
func TestTokenLogOneNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testdb.Open(t, store.SQLite)
	b := events.New(s, testdb.Logger())
	t.Cleanup(b.Stop)
	user, id := uuid.NewString(), uuid.NewString()

	b.PublishDelta(ctx, user, id, "Hel")
	b.PublishDelta(ctx, user, id, "lo")
	late := b.ReadTokens(user, id)
	defer late.Close()
	tk := late.After(0)
	require.Equal(t, []string{"Hel", "lo"}, tk.Frags)
	require.False(t, tk.Done)
	require.Equal(t, []string{"lo"}, late.After(1).Frags)
	require.Empty(t, late.After(2).Frags)

	// A new fragment wakes the reader.
	changed := late.After(2).Changed
	long := strings.Repeat("é", 1500) // 3000 bytes: stored in pieces that fit a notification
	b.PublishDelta(ctx, user, id, long)
	<-changed
	pieces := late.After(2).Frags
	require.Greater(t, len(pieces), 1)
	require.Equal(t, long, strings.Join(pieces, ""))
	for _, p := range pieces {
		require.LessOrEqual(t, len(p), 1000)
	}

	changed = late.After(2 + len(pieces)).Changed
	b.EndTokens(user, id)
	<-changed
	require.True(t, late.After(0).Done)

	// After the end, a new reader still gets everything.
	after := b.ReadTokens(user, id)
	tk = after.After(0)
	require.Equal(t, "Hello"+long, strings.Join(tk.Frags, ""))
	require.True(t, tk.Done)
	after.Close()
	after.Close()

	// An activation nothing ran here: on one node, nothing will come.
	none := b.ReadTokens(user, uuid.NewString())
	defer none.Close()
	require.Empty(t, none.After(0).Frags)
	require.True(t, none.After(0).Done)

	// A run with no fragment has an empty, done log.
	quiet := uuid.NewString()
	b.EndTokens(user, quiet)
	q := b.ReadTokens(user, quiet)
	defer q.Close()
	require.True(t, q.After(0).Done)

	// A reader waiting before the run starts reads the run.
	queued := uuid.NewString()
	early := b.ReadTokens(user, queued)
	defer early.Close()
	b.PublishDelta(ctx, user, queued, "first")
	require.Equal(t, []string{"first"}, early.After(0).Frags)
	require.False(t, early.After(0).Done)
}

// TestTokensCrossNodes: a stream on one node reads the tokens of an
// activation another node runs: the fragments so far when it starts
// watching, then each new one, then the end; also when it watched before
// the run started, and when the run ended before it watched.
func TestTokensCrossNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, s1, _, b1, b2 := twoNodes(t) // b2 runs the activations, b1 serves streams
	user := newUser(t, s1)

	// Fragments before anyone reads go nowhere; a reader's watch fetches
	// them.
	id := uuid.NewString()
	b2.PublishDelta(ctx, user, id, "one ")
	b2.PublishDelta(ctx, user, id, "two ")
	r := b1.ReadTokens(user, id)
	defer r.Close()
	require.Equal(t, []string{"one ", "two "}, tokensUntil(t, r, 0, 2, false).Frags)
	// Watched now: new fragments follow, then the end.
	b2.PublishDelta(ctx, user, id, strings.Repeat("ü", 700)) // two pieces
	tk := tokensUntil(t, r, 2, 2, false)
	require.Equal(t, strings.Repeat("ü", 700), strings.Join(tk.Frags, ""))
	b2.EndTokens(user, id)
	tk = tokensUntil(t, r, 0, 4, true)
	require.Equal(t, "one two "+strings.Repeat("ü", 700), strings.Join(tk.Frags, ""))

	// A reader opened after the end gets the retained log and its end.
	r.Close()
	again := b1.ReadTokens(user, id)
	defer again.Close()
	require.Equal(t, "one two "+strings.Repeat("ü", 700), strings.Join(tokensUntil(t, again, 0, 4, true).Frags, ""))

	// Watched while queued: the run's fragments come as they are written,
	// and a run that writes none still ends its readers' wait.
	queued, quiet := uuid.NewString(), uuid.NewString()
	rq := b1.ReadTokens(user, queued)
	defer rq.Close()
	rz := b1.ReadTokens(user, quiet)
	defer rz.Close()
	b2.PublishDelta(ctx, user, queued, "a")
	b2.PublishDelta(ctx, user, queued, "b")
	b2.EndTokens(user, queued)
	b2.EndTokens(user, quiet)
	require.Equal(t, []string{"a", "b"}, tokensUntil(t, rq, 0, 2, true).Frags)
	require.Empty(t, tokensUntil(t, rz, 0, 0, true).Frags)

	// The activation runs again (a retry): its readers follow the new run.
	b2.PublishDelta(ctx, user, queued, "c")
	b2.EndTokens(user, queued)
	deadline := time.After(10 * time.Second)
	for tk := rq.After(0); !tk.Done || strings.Join(tk.Frags, "") != "c"; tk = rq.After(0) {
		select {
		case <-tk.Changed:
		case <-deadline:
			t.Fatalf("still %q", tk.Frags)
		}
	}
}
