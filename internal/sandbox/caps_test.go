package sandbox_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/cleantext"
	"github.com/agentplatform/agentplatform/internal/sandbox"
)

// goAlloc is how many bytes the Go heap allocated while f ran. The VM's own
// memory is not Go's heap: this counts what crossed from the VM to Go.
// Tests that use it do not run in parallel, so that only f is counted.
func goAlloc(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A 8 MB error is recorded cut to 64 KiB, its stack too, and the Go side
// never holds the whole of it.
func TestAHugeThrowIsCappedBeforeItReachesGo(t *testing.T) { //nolint:paralleltest // counts Go allocations
	var err error
	var res *sandbox.Result
	n := goAlloc(func() {
		res, err = runCode(t, 20*time.Second, `async function run() { throw new Error("x".repeat(8 << 20)); }`, nil)
	})
	var se *sandbox.ScriptError
	require.ErrorAs(t, err, &se)
	require.Len(t, se.Message, sandbox.ErrorBytes+len(cleantext.Truncated))
	require.True(t, strings.HasSuffix(se.Message, cleantext.Truncated))
	for _, l := range res.Logs {
		require.LessOrEqual(t, len(l.Message), 256<<10)
	}
	require.Less(t, n, uint64(4<<20), "the Go side allocated %d bytes for an 8 MB throw", n)
}

func TestAHugeThrowAtTheTopLevelIsCapped(t *testing.T) {
	t.Parallel()
	_, err := runCode(t, 20*time.Second, `throw new Error("y".repeat(2 << 20)); async function run() {}`, nil)
	var se *sandbox.ScriptError
	require.ErrorAs(t, err, &se)
	require.Len(t, se.Message, sandbox.ErrorBytes+len(cleantext.Truncated))
	_, err = runCode(t, 20*time.Second, `async function run() { throw "z".repeat(2 << 20); }`, nil)
	require.ErrorAs(t, err, &se)
	require.Len(t, se.Message, sandbox.ErrorBytes+len(cleantext.Truncated))
}

// Values that are not Errors read as engines print them uncaught, and a
// thrown null is not reported as running out of memory.
func TestThrownValuesThatAreNotErrors(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]string{
		`async function run() { throw null; }`:      "Uncaught null",
		`throw null; async function run() {}`:       "Uncaught null",
		`async function run() { throw undefined; }`: "Uncaught undefined",
		`async function run() { throw 42; }`:        "Uncaught 42",
		`async function run() { throw "no"; }`:      "no",
	} {
		_, err := runCode(t, 5*time.Second, code, nil)
		require.Error(t, err, code)
		require.NotErrorIs(t, err, sandbox.ErrOutOfMemory, code)
		require.True(t, strings.HasPrefix(err.Error(), want), "%s: %v", code, err)
	}
	// Memory still full when the run failed with null: out of memory.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := sandbox.Run(ctx, sandbox.Program{Code: `const keep = []; async function run() { for (;;) keep.push({}); }`,
		Limits: sandbox.Limits{MemoryBytes: 16 << 20, OutputBytes: 1 << 20, LogBytes: 1 << 10}})
	require.ErrorIs(t, err, sandbox.ErrOutOfMemory)
}

// One console.log over the log cap is kept cut to the cap and marks the
// logs truncated; the Go side never holds the whole line.
func TestOneHugeLogLineIsKeptCut(t *testing.T) { //nolint:paralleltest // counts Go allocations
	var err error
	var res *sandbox.Result
	n := goAlloc(func() {
		res, err = runCode(t, 20*time.Second, `async function run() { console.log("x".repeat(8 << 20)); console.log("after"); return 1; }`, nil)
	})
	require.NoError(t, err)
	require.True(t, res.LogsTruncated)
	require.Len(t, res.Logs, 1)
	require.LessOrEqual(t, len(res.Logs[0].Message), 256<<10)
	require.Greater(t, len(res.Logs[0].Message), 255<<10)
	require.True(t, strings.HasSuffix(res.Logs[0].Message, cleantext.Truncated))
	require.Less(t, n, uint64(4<<20), "the Go side allocated %d bytes for an 8 MB log line", n)
}

// Arguments bigger than any host call takes are refused in the VM, before
// they cross to Go.
func TestHostCallArgumentsAreCapped(t *testing.T) {
	t.Parallel()
	called := false
	res, err := sandbox.Run(context.Background(), sandbox.Program{
		Code: `async function run(input, ctx) {
			try { await ctx.data.create("notes", {body: "x".repeat(5000)}); } catch (e) { return e.name + ": " + e.message; }
		}`,
		Calls: map[string]sandbox.Call{"data.create": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			called = true
			return nil, nil
		}},
		Limits: sandbox.Limits{MemoryBytes: 16 << 20, OutputBytes: 1 << 20, LogBytes: 1 << 10, CallBytes: 4096}})
	require.NoError(t, err)
	require.False(t, called)
	require.Equal(t, `"RangeError: the arguments of ctx.data.create are 5021 characters of JSON, over the limit of 4096"`, string(res.Output))
}
