package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/sandbox"
)

func runCode(t *testing.T, timeout time.Duration, code string, calls map[string]sandbox.Call) (*sandbox.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return sandbox.Run(ctx, sandbox.Program{Code: code, Input: json.RawMessage(`{"name":"Ada","n":2}`),
		Ctx: json.RawMessage(`{"app_id":"app1"}`), Calls: calls})
}

func TestRunReturnsJSONAndLogs(t *testing.T) {
	t.Parallel()
	res, err := runCode(t, 5*time.Second, `async function run(input, ctx) {
		ctx.log("hello", input.name, {n: input.n});
		console.error("careful");
		const v = await ctx.storage.get("k");
		return {greeting: "hi " + input.name, app: ctx.app_id, v};
	}`, map[string]sandbox.Call{"storage.get": func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		require.JSONEq(t, `["k"]`, string(args))
		return json.RawMessage(`{"x":1}`), nil
	}})
	require.NoError(t, err)
	require.JSONEq(t, `{"greeting":"hi Ada","app":"app1","v":{"x":1}}`, string(res.Output))
	require.Len(t, res.Logs, 2)
	require.Equal(t, `hello Ada {"n":2}`, res.Logs[0].Message)
	require.Equal(t, "info", res.Logs[0].Level)
	require.Equal(t, "error", res.Logs[1].Level)
}

func TestHostErrorsAreThrownWithTheirNames(t *testing.T) {
	t.Parallel()
	res, err := runCode(t, 5*time.Second, `async function run(input, ctx) {
		try { await ctx.data.create("ticket", {}); } catch (e) { return {name: e.name, message: e.message}; }
	}`, map[string]sandbox.Call{"data.create": func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, &sandbox.Thrown{Name: "ValidationError", Message: "data.subject is required"}
	}})
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"ValidationError","message":"data.subject is required"}`, string(res.Output))
}

func TestAThrowFailsTheRunWithItsMessageAndStack(t *testing.T) {
	t.Parallel()
	res, err := runCode(t, 5*time.Second, `function helper() { throw new TypeError("bad ticket"); }
	async function run(input, ctx) { helper(); }`, nil)
	var se *sandbox.ScriptError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "TypeError: bad ticket", err.Error())
	require.NotEmpty(t, res.Logs)
	require.Contains(t, res.Logs[len(res.Logs)-1].Message, "helper")
}

func TestAnInfiniteLoopIsInterrupted(t *testing.T) {
	t.Parallel()
	start := time.Now()
	_, err := runCode(t, 300*time.Millisecond, `async function run() { for (;;) {} }`, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)
	// Top-level code too.
	_, err = runCode(t, 300*time.Millisecond, `while (true) {} async function run() {}`, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestAPromiseThatNeverSettlesEndsTheRun(t *testing.T) {
	t.Parallel()
	start := time.Now()
	_, err := runCode(t, 10*time.Second, `async function run() { await new Promise(() => {}); return 1; }`, nil)
	require.ErrorIs(t, err, sandbox.ErrNeverSettles)
	require.Less(t, time.Since(start), 5*time.Second, "nothing can settle it: no need to wait for the limit")
}

func TestAnEndlessAllocationRunsOutOfMemoryAndTheNextRunIsFine(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := sandbox.Run(ctx, sandbox.Program{Code: `async function run() { const a = []; for (;;) a.push("x".repeat(1000) + a.length); }`,
		Limits: sandbox.Limits{MemoryBytes: 16 << 20, OutputBytes: 1 << 20, LogBytes: 1 << 10}})
	require.ErrorIs(t, err, sandbox.ErrOutOfMemory)
	res, err := runCode(t, 5*time.Second, `async function run() { return 42; }`, nil)
	require.NoError(t, err)
	require.Equal(t, "42", string(res.Output))
}

func TestAnOutputOverTheCapIsRefused(t *testing.T) {
	t.Parallel()
	_, err := runCode(t, time.Minute, `async function run() { return "x".repeat(10 * 1024 * 1024); }`, nil)
	require.ErrorContains(t, err, "over the limit of 1048576")
}

func TestLogsAreCapped(t *testing.T) {
	t.Parallel()
	res, err := runCode(t, 10*time.Second, `async function run(input, ctx) { for (let i = 0; i < 5000; i++) ctx.log("x".repeat(100)); return 1; }`, nil)
	require.NoError(t, err)
	require.True(t, res.LogsTruncated)
	n := 0
	for _, l := range res.Logs {
		n += len(l.Message)
	}
	require.LessOrEqual(t, n, 256<<10)
}

func TestNoWayOutOfTheSandbox(t *testing.T) {
	t.Parallel()
	for name, code := range map[string]string{
		"require":       `async function run() { return require('child_process').execSync('id').toString(); }`,
		"process":       `async function run() { return process.env; }`,
		"dynamicImport": `async function run() { const os = await import('os'); return os.getenv('HOME'); }`,
		"std":           `async function run() { return std.getenv('HOME'); }`,
		"os":            `async function run() { return os.exec(['id']); }`,
		"host":          `async function run() { return __host('log', '{}'); }`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := runCode(t, 5*time.Second, code, nil)
			require.Error(t, err)
			var se *sandbox.ScriptError
			require.True(t, errors.As(err, &se), "%v", err)
		})
	}
	_, err := runCode(t, 5*time.Second, `import * as os from 'os'; async function run() { return 1; }`, nil)
	require.Error(t, err, "a static import is refused")
}

func TestTheEntryPointsCannotBeReplaced(t *testing.T) {
	t.Parallel()
	_, err := runCode(t, 5*time.Second, `globalThis.__state = () => "done"; async function run() { throw new Error("still failing"); }`, nil)
	require.ErrorContains(t, err, "still failing")
}

func TestCancelInterruptsABlockingHostCall(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := sandbox.Run(ctx, sandbox.Program{Code: `async function run(input, ctx) { await ctx.http.fetch("http://slow"); for (;;) {} }`,
			Calls: map[string]sandbox.Call{"http.fetch": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				close(started)
				<-ctx.Done()
				return nil, ctx.Err()
			}}})
		done <- err
	}()
	<-started
	stop := errors.New("cancelled")
	cancel(stop)
	select {
	case err := <-done:
		require.ErrorIs(t, err, stop)
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not end on cancel")
	}
}

func TestRunMustBeDefined(t *testing.T) {
	t.Parallel()
	_, err := runCode(t, 5*time.Second, `const x = 1;`, nil)
	require.ErrorContains(t, err, "must define async function run")
	_, err = runCode(t, 5*time.Second, `async function run( {`, nil)
	var se *sandbox.ScriptError
	require.ErrorAs(t, err, &se)
	require.True(t, strings.Contains(se.Name, "SyntaxError"), se.Name)
}

func BenchmarkTrivialRun(b *testing.B) {
	ctx := context.Background()
	p := sandbox.Program{Code: `async function run(input) { return {ok: input.n + 1}; }`, Input: json.RawMessage(`{"n":1}`)}
	for b.Loop() {
		if _, err := sandbox.Run(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRunningOutOfMemoryWhileReturningIsOutOfMemory(t *testing.T) {
	t.Parallel()
	_, err := sandbox.Run(context.Background(), sandbox.Program{Code: `async function run() { return "z".repeat(10 * 1024 * 1024); }`,
		Limits: sandbox.Limits{MemoryBytes: 16 << 20, OutputBytes: 1 << 20, LogBytes: 1 << 10}})
	require.ErrorIs(t, err, sandbox.ErrOutOfMemory)
}
