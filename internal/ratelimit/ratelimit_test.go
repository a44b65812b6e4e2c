package ratelimit

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPerKeyBuckets(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	l := PerMinute(60, 3) // one token a second, burst 3
	l.now = func() time.Time { return now }
	for range 3 {
		require.True(t, l.Allow("a"))
	}
	require.False(t, l.Allow("a"))
	require.True(t, l.Exhausted("a"))
	require.True(t, l.Allow("b"), "each key has its own bucket")
	now = now.Add(time.Second)
	require.False(t, l.Exhausted("a"), "a token a second comes back")
	require.True(t, l.Allow("a"))
	require.False(t, l.Allow("a"))
}

func TestIdleBucketsAreForgotten(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	l := PerMinute(60, 3)
	l.now = func() time.Time { return now }
	for i := range 1000 {
		l.Allow(fmt.Sprint(i))
	}
	require.Len(t, l.buckets, 1000)
	now = now.Add(2 * time.Minute)
	l.Allow("fresh")
	require.Len(t, l.buckets, 1, "buckets idle long enough to be full again are dropped")
}
