package gcpace

import (
	"runtime/debug"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// percent is the collector's GOGC now.
func percent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// reset puts the process back as the test found it: tests here share the
// collector and the count, so none runs in parallel.
func reset(t *testing.T) {
	was := percent()
	t.Cleanup(func() {
		inflight.Store(0)
		busy.Store(false)
		debug.SetGCPercent(was)
	})
}

// The pace switches at high and back below low, not between.
func TestPaceFollowsRunsInFlight(t *testing.T) {
	t.Setenv("GOGC", "")
	reset(t)
	debug.SetGCPercent(defaultPercent)
	Add(high - 1)
	require.False(t, busy.Load())
	require.Equal(t, defaultPercent, percent())
	Add(1)
	require.True(t, busy.Load())
	require.Equal(t, busyPercent, percent())
	Add(low - high) // low in flight: still busy
	require.True(t, busy.Load())
	require.Equal(t, busyPercent, percent())
	Add(-1)
	require.False(t, busy.Load())
	require.Equal(t, defaultPercent, percent())
	Add(-(low - 1))
	require.Zero(t, inflight.Load())
}

// An operator's GOGC is never overridden.
func TestOperatorsGOGCStands(t *testing.T) {
	t.Setenv("GOGC", "200")
	reset(t)
	debug.SetGCPercent(200)
	Add(high)
	require.True(t, busy.Load())
	require.Equal(t, 200, percent())
	Add(-high)
	require.False(t, busy.Load())
	require.Equal(t, 200, percent())
}

// Runs starting and ending at once across the thresholds leave the pace
// where the count says.
func TestPaceUnderConcurrentRuns(t *testing.T) {
	t.Setenv("GOGC", "")
	reset(t)
	debug.SetGCPercent(defaultPercent)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 3 * high {
				Add(1)
			}
			for range 3 * high {
				Add(-1)
			}
		})
	}
	wg.Wait()
	require.Zero(t, inflight.Load())
	require.False(t, busy.Load())
	require.Equal(t, defaultPercent, percent())
}
