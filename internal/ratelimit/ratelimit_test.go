package ratelimit

import (
	"fmt"
	"sync"
	"sync/atomic"
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
	require.True(t, l.Allow("b"), "each key has its own bucket")
	now = now.Add(time.Second)
	require.True(t, l.Allow("a"), "a token a second comes back")
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

func TestWindowShutsUntilThePeriodEnds(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	l := NewWindow(3, time.Minute)
	l.now = func() time.Time { return now }
	for range 3 {
		_, ok := l.Take("a")
		require.True(t, ok)
	}
	_, ok := l.Take("a")
	require.False(t, ok)
	_, ok = l.Take("b")
	require.True(t, ok, "each key has its own window")
	now = now.Add(59 * time.Second)
	_, ok = l.Take("a")
	require.False(t, ok, "a spent window stays shut for the rest of its minute")
	now = now.Add(time.Second)
	for range 3 {
		_, ok := l.Take("a")
		require.True(t, ok, "a new minute, a new window")
	}
}

func TestWindowReleaseGivesTheEventBack(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	l := NewWindow(2, time.Minute)
	l.now = func() time.Time { return now }
	for range 10 {
		release, ok := l.Take("a")
		require.True(t, ok)
		release()
		release() // twice is once
	}
	r1, _ := l.Take("a")
	_, ok := l.Take("a")
	require.True(t, ok)
	_, ok = l.Take("a")
	require.False(t, ok)
	// A release after the window ended does not credit the next one.
	now = now.Add(time.Minute)
	_, ok = l.Take("a")
	require.True(t, ok)
	r1()
	_, ok = l.Take("a")
	require.True(t, ok)
	_, ok = l.Take("a")
	require.False(t, ok)
}

func TestWindowConcurrentTakesNeverExceedTheLimit(t *testing.T) {
	t.Parallel()
	l := NewWindow(10, time.Minute)
	var taken atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if _, ok := l.Take("a"); ok {
				taken.Add(1)
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 10, taken.Load())
}

func TestEndedWindowsAreForgotten(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	l := NewWindow(3, time.Minute)
	l.now = func() time.Time { return now }
	for i := range 1000 {
		l.Take(fmt.Sprint(i))
	}
	require.Len(t, l.windows, 1000)
	now = now.Add(2 * time.Minute)
	l.Take("fresh")
	require.Len(t, l.windows, 1)
}
