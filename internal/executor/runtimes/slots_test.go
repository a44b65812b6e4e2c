package runtimes_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/egress"
	"github.com/agentplatform/agentplatform/internal/egress/egresstest"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/executor/runtimes"
	"github.com/agentplatform/agentplatform/internal/fairshare"
)

// TestJavaScriptRunsAtMostSlotsAtOnce: eight users' runs, each holding
// a fetch open a moment, execute at most two at once with two slots
// (AP_WORKERS) and no bound of the VMs apart (Live nil: a run keeps its
// slot through its host calls), and every one of them still runs.
func TestJavaScriptRunsAtMostSlotsAtOnce(t *testing.T) {
	t.Parallel()
	var now, most, calls atomic.Int32
	srv := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := now.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(50 * time.Millisecond) //nolint:forbidigo // a receiver that takes a moment
		now.Add(-1)
		calls.Add(1)
	}))
	js := runtimes.NewJavaScript(nil, egress.New(egresstest.AllowPrefixes()), nil, 16)
	js.Slots = fairshare.Shared(2)
	code := fmt.Sprintf(`async function run(input, ctx) { await ctx.http.fetch(%q); return "ok"; }`, srv.URL)
	runAll(t, js, code, 8)
	require.Equal(t, int32(8), calls.Load())
	require.Equal(t, int32(2), most.Load(), "runs executing at once")
}

// TestJavaScriptSlotWaitEndsWithTheContext: a run waiting for a slot stops
// waiting when its context ends (a cancelled request, the run's timeout).
func TestJavaScriptSlotWaitEndsWithTheContext(t *testing.T) {
	t.Parallel()
	js := runtimes.NewJavaScript(nil, egress.New(egresstest.AllowPrefixes()), nil, 16)
	js.Slots = fairshare.Shared(1)
	require.NoError(t, js.Slots.Acquire(context.Background(), "other"))
	defer js.Slots.Release("other")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := js.Execute(ctx, &executor.Run{Kind: executor.Execution, ID: "1", UserID: "u",
		Config: []byte(`{"code":"async function run() { return 1; }"}`)})
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestJavaScriptWaitsHoldNoCPUSlot: with the VMs bounded apart (Live),
// a run gives its CPU slot back while a host call waits: eight users'
// runs, with two CPU slots, have all eight fetches open at once, none of
// them holding a slot meanwhile, and the code that runs between the
// calls never holds more than the two.
func TestJavaScriptWaitsHoldNoCPUSlot(t *testing.T) {
	t.Parallel()
	const runs = 8
	js := runtimes.NewJavaScript(nil, egress.New(egresstest.AllowPrefixes()), nil, 16)
	js.Slots, js.Live = fairshare.Shared(2), fairshare.Shared(runs)
	var mu sync.Mutex
	arrived, mostHeld := 0, 0
	all := make(chan struct{})
	srv := egresstest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		mostHeld = max(mostHeld, js.Slots.Held())
		if arrived++; arrived == runs {
			close(all)
		}
		mu.Unlock()
		if r.URL.Query().Get("round") == "1" {
			// Answered once every run's first fetch is open.
			select {
			case <-all:
			case <-r.Context().Done():
			}
		}
	}))
	code := fmt.Sprintf(`async function run(input, ctx) {
		let x = 0;
		for (let round = 1; round <= 3; round++) {
			for (let i = 0; i < 20000; i++) x += i;
			await ctx.http.fetch(%q + "?round=" + round);
		}
		return x;
	}`, srv.URL)
	runAll(t, js, code, runs)
	require.Equal(t, 3*runs, arrived)
	require.LessOrEqual(t, mostHeld, 2, "CPU slots held while a fetch waits")
	require.Zero(t, js.Slots.Held())
	require.Zero(t, js.Live.Held())
}

// runAll executes code n times at once, each run a user of its own, and
// requires every run to succeed.
func runAll(t *testing.T, js *runtimes.JavaScript, code string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := js.Execute(ctx, &executor.Run{Kind: executor.Execution, ID: fmt.Sprint(i), UserID: fmt.Sprint("user-", i),
				Config: []byte(fmt.Sprintf(`{"code":%q}`, code))})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
