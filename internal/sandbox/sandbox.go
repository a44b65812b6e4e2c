// Package sandbox runs users' JavaScript (ES2023) on QuickJS
// (modernc.org/quickjs, pure Go) with hard limits: a fresh VM per run, a
// wall-clock limit from the run's context that interrupts loops, a memory
// ceiling, caps on the output and the logs, and nothing of the host but the
// calls the caller hands in — no file system, no process, no modules.
//
// The code defines `async function run(input, ctx)`. The caller describes
// ctx: plain JSON fields and named host calls (Go functions that take the
// run's context, so a blocking one — an LLM call, a fetch — ends on cancel
// and timeout). A JS prelude turns the calls into async functions and
// rethrows their errors with the names the caller gave them.
package sandbox

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"modernc.org/quickjs"

	"github.com/agentplatform/agentplatform/internal/cleantext"
	"github.com/agentplatform/agentplatform/internal/executor"
)

// Limits of one run.
type Limits struct {
	// MemoryBytes is the VM's memory ceiling.
	MemoryBytes int
	// OutputBytes caps the JSON of run's result.
	OutputBytes int
	// LogBytes caps the logs; what comes after is dropped and the logs are
	// marked truncated (a line that does not fit whole is kept cut).
	LogBytes int
	// CallBytes caps the JSON of a host call's arguments, checked in the
	// VM: arguments no call could take never cross to Go (0: 8 MiB, more
	// than any call accepts; a fetch body is at most 5 MiB).
	CallBytes int
}

// ErrorBytes caps the message and the stack of a script's exception, as
// every recorded error text is capped (cleantext.ErrorBytes).
const ErrorBytes = cleantext.ErrorBytes

// DefaultLimits are DESIGN's: 64 MiB, 1 MiB of output, 256 KiB of logs;
// a host call takes at most 8 MiB of JSON arguments.
var DefaultLimits = Limits{MemoryBytes: 64 << 20, OutputBytes: 1 << 20, LogBytes: 256 << 10, CallBytes: 8 << 20}

// Call is a host function: args is the JSON array of the JS arguments; the
// result is JSON (nil for null). An error of type *Thrown is thrown in JS
// with its name; any other error as an Error with its message.
type Call func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)

// Thrown is a host error that JS sees as an exception with this name (e.g.
// ValidationError, CredentialNotFoundError).
type Thrown struct {
	Name    string
	Message string
}

func (t *Thrown) Error() string { return t.Name + ": " + t.Message }

// Program is one run.
type Program struct {
	Code  string
	Input json.RawMessage
	// Ctx holds ctx's plain fields (a JSON object).
	Ctx json.RawMessage
	// Calls are ctx's functions by dotted path, e.g. "storage.get",
	// "http.fetch"; each becomes an async function at that path of ctx.
	Calls  map[string]Call
	Limits Limits
}

// A run's result and log lines are executor's, which says what any run
// produces: the JavaScript executor hands them on as they are, and the
// sandbox depends only on that package of plain types, not on a runtime.
type (
	// LogLine is one line the run wrote.
	LogLine = executor.LogLine
	// Result is what a run produced; Logs are kept whether it failed or not.
	Result = executor.Result
)

// Errors of a run, besides the script's own exceptions (*ScriptError).
var (
	ErrOutOfMemory = errors.New("the run exceeded its memory limit (out of memory)")
	// ErrThrewNull is a run that failed with null: the code threw null,
	// or QuickJS could not allocate even an error, which it throws as null
	// too. When the memory is still full afterwards the run fails with
	// ErrOutOfMemory instead; otherwise the two cannot be told apart.
	ErrThrewNull    = errors.New("Uncaught null: the code threw null, or ran out of memory (the engine throws null when it cannot allocate an error)")
	ErrNeverSettles = errors.New("run() awaits a promise that never settles: nothing is left that could settle it")
)

// ScriptError is an exception the script threw (or a syntax error).
type ScriptError struct {
	Name    string
	Message string
	Stack   string
}

func (e *ScriptError) Error() string {
	if e.Name == "" || e.Name == "Error" {
		return e.Message
	}
	return e.Name + ": " + e.Message
}

//go:embed prelude.js
var prelude string

// preludeBytecode is the prelude compiled once: each run's fresh VM loads
// it instead of parsing the source again (parsing was a fifth of a trivial
// run's time). It is QuickJS's own output for our own source, never code
// from outside.
var preludeBytecode = sync.OnceValues(func() ([]byte, error) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	return vm.Compile(prelude, quickjs.EvalGlobal)
})

// Run runs p; ctx's end (cancel, deadline) interrupts it, whatever it is
// doing. The error is ctx's cause when ctx ended the run.
func Run(ctx context.Context, p Program) (*Result, error) {
	if p.Limits == (Limits{}) {
		p.Limits = DefaultLimits
	}
	if p.Limits.CallBytes <= 0 {
		p.Limits.CallBytes = DefaultLimits.CallBytes
	}
	r := &run{ctx: ctx, p: p, res: &Result{}}
	err := r.exec()
	if ctx.Err() != nil {
		// Whatever the VM reported (an interrupt looks like an
		// InternalError), the run ended because its context did.
		err = context.Cause(ctx)
	}
	return r.res, err
}

type run struct {
	ctx context.Context
	p   Program
	vm  *quickjs.VM

	mu       sync.Mutex // guards res's logs and logBytes
	res      *Result
	logBytes int
}

func (r *run) exec() error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		return fmt.Errorf("sandbox: new VM: %w", err)
	}
	r.vm = vm
	defer vm.Close()
	// Interrupt from another goroutine is the one thing the VM allows:
	// it stops a loop, and a host call returning into JS. Each call from
	// Go into JS clears a pending interrupt, so one that lands between
	// two calls (a run cancelled while it sets up) would be lost until
	// the eval timeout: it is repeated until the run ends.
	ended := make(chan struct{})
	defer close(ended)
	stop := context.AfterFunc(r.ctx, func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			vm.Interrupt()
			select {
			case <-ended:
				return
			case <-t.C:
			}
		}
	})
	defer stop()
	if d, ok := r.ctx.Deadline(); ok {
		// A backstop in case an interrupt lands between two evals; later
		// than the deadline, so that the context has ended (and says why)
		// whenever it fires.
		_ = vm.SetEvalTimeout(time.Until(d) + 500*time.Millisecond)
	}
	vm.SetMemoryLimit(uintptr(r.p.Limits.MemoryBytes))
	// No module can be imported, static or dynamic.
	vm.SetModuleLoader(func(*quickjs.VM, string) (string, error) {
		return "", errors.New("module imports are not available in the sandbox")
	}, nil)
	if err := vm.RegisterHostFunc("__host", r.host); err != nil {
		return fmt.Errorf("sandbox: register: %w", err)
	}
	code, err := preludeBytecode()
	if err != nil {
		return fmt.Errorf("sandbox: prelude: %w", err)
	}
	if _, err := vm.EvalBytecode(code); err != nil {
		return fmt.Errorf("sandbox: prelude: %w", err)
	}
	paths := make([]string, 0, len(r.p.Calls))
	for name := range r.p.Calls {
		paths = append(paths, name)
	}
	names, _ := json.Marshal(paths)
	fields := r.p.Ctx
	if len(fields) == 0 {
		fields = json.RawMessage("{}")
	}
	caps, _ := json.Marshal(map[string]int{"log": r.p.Limits.LogBytes, "error": ErrorBytes, "call": r.p.Limits.CallBytes})
	if err := r.enter("__setup", string(fields), string(names), string(caps)); err != nil {
		return err
	}
	if _, err := vm.Eval(r.p.Code, quickjs.EvalGlobal); err != nil {
		var qe *quickjs.Error
		if errors.As(err, &qe) && qe.Error() == "null" && r.ctx.Err() == nil {
			return r.null(true) // the top level threw null, or ran out of memory
		}
		return r.scriptError(err)
	}
	input := r.p.Input
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	if err := r.enter("__start", string(input)); err != nil {
		return err
	}
	for {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		state, err := r.state()
		if err != nil {
			return err
		}
		switch state {
		case "done":
			return r.output()
		case "failed":
			return r.failure()
		}
		n, err := vm.ExecutePendingJobs()
		if err != nil {
			return r.scriptError(err)
		}
		if n == 0 {
			if err := r.ctx.Err(); err != nil {
				return err
			}
			// Host calls are synchronous: with no job queued, nothing
			// can ever settle what run() waits for — unless a job that
			// would have was dropped for want of memory.
			if s, _ := r.state(); s == "pending" {
				return ErrNeverSettles
			}
		}
	}
}

// enter calls one of the prelude's entry points, which answer true once
// they got to their end; no answer and no error is a null exception, what
// QuickJS throws when it cannot allocate even an error.
func (r *run) enter(name string, args ...any) error {
	v, err := r.vm.Call(name, args...)
	if err != nil {
		return r.scriptError(err)
	}
	if v != true {
		return ErrOutOfMemory
	}
	return nil
}

// text calls one of the prelude's readers, which answer a string; no string
// means out of memory, as for enter.
func (r *run) text(name string) (string, error) {
	v, err := r.vm.Call(name)
	if err != nil {
		return "", r.scriptError(err)
	}
	s, ok := v.(string)
	if !ok {
		return "", ErrOutOfMemory
	}
	return s, nil
}

// state is run()'s: pending, done or failed.
func (r *run) state() (string, error) { return r.text("__state") }

// output reads run's JSON result, within the cap.
func (r *run) output() error {
	out, err := r.text("__output")
	if err != nil {
		return err
	}
	if len(out) > r.p.Limits.OutputBytes {
		return fmt.Errorf("the output is %d bytes, over the limit of %d", len(out), r.p.Limits.OutputBytes)
	}
	if !json.Valid([]byte(out)) {
		return errors.New("the output is not JSON")
	}
	r.res.Output = json.RawMessage(out)
	return nil
}

// failure turns run's rejection into the run's error, its stack into the
// logs.
func (r *run) failure() error {
	s, err := r.text("__failure")
	if err != nil {
		return err
	}
	if s == "null" {
		return r.null(false)
	}
	var e ScriptError
	if json.Unmarshal([]byte(s), &e) != nil || (e.Message == "" && e.Name == "") {
		e.Message = "run() failed"
	}
	e.capped()
	if e.Stack != "" {
		r.log("error", e.Error()+"\n"+e.Stack)
	}
	if e.Name == "InternalError" && strings.Contains(e.Message, "out of memory") {
		return ErrOutOfMemory
	}
	return &e
}

// null is the error of a run that failed with null (see ErrThrewNull):
// out of memory when a quarter of the ceiling cannot be allocated now.
// thrown is a null the top level threw, which is no failure to record.
func (r *run) null(thrown bool) error {
	if v, err := r.vm.Call("__roomy", r.p.Limits.MemoryBytes/4, thrown); err != nil || v != true {
		return ErrOutOfMemory
	}
	return ErrThrewNull
}

// capped cuts e's texts to ErrorBytes each: a 20 MB throw fails the run
// with 64 KiB of its message.
func (e *ScriptError) capped() {
	e.Name = cleantext.Cap(e.Name, 256)
	e.Message = cleantext.Cap(e.Message, ErrorBytes)
	e.Stack = cleantext.Cap(e.Stack, ErrorBytes)
}

// scriptError translates an exception that escaped to Go: one the top
// level of the code threw (the run's own rejections go through the
// prelude, which cuts them before they cross). The binding has copied
// such an exception whole; it is cut here, before it goes anywhere.
func (r *run) scriptError(err error) error {
	if r.ctx.Err() != nil {
		return r.ctx.Err()
	}
	var qe *quickjs.Error
	if errors.As(err, &qe) {
		// An exception whose value is null is what QuickJS throws when it
		// cannot allocate even the error.
		if strings.Contains(qe.Error(), "out of memory") || qe.Error() == "null" {
			return ErrOutOfMemory
		}
		e := &ScriptError{Name: qe.Name, Message: qe.Message, Stack: qe.Stack}
		if e.Message == "" {
			e.Message = qe.Error()
		}
		e.capped()
		if e.Stack != "" {
			r.log("error", e.Error()+"\n"+e.Stack)
		}
		return e
	}
	if strings.Contains(err.Error(), "out of memory") {
		return ErrOutOfMemory
	}
	return &ScriptError{Message: cleantext.Cap(err.Error(), ErrorBytes)}
}

// host is the one Go function JS sees: __host(name, argsJSON) answers
// {"value": …} or {"error": {name, message}}; the prelude unwraps it.
func (r *run) host(args []any) (any, error) {
	if len(args) != 2 {
		return nil, errors.New("bad host call")
	}
	name, _ := args[0].(string)
	raw, _ := args[1].(string)
	if name == "log" {
		var parts []string
		var lv struct {
			Level string   `json:"level"`
			Parts []string `json:"parts"`
		}
		if json.Unmarshal([]byte(raw), &lv) == nil {
			parts = lv.Parts
		}
		r.log(lv.Level, strings.Join(parts, " "))
		return `{"value":null}`, nil
	}
	call, ok := r.p.Calls[name]
	if !ok {
		return answer(nil, &Thrown{Name: "TypeError", Message: name + " is not available"})
	}
	if err := r.ctx.Err(); err != nil {
		return nil, err
	}
	v, err := call(r.ctx, json.RawMessage(raw))
	return answer(v, err)
}

func answer(v json.RawMessage, err error) (any, error) {
	if err != nil {
		var t *Thrown
		if !errors.As(err, &t) {
			t = &Thrown{Name: "Error", Message: err.Error()}
		}
		b, _ := json.Marshal(map[string]any{"error": map[string]string{"name": t.Name, "message": t.Message}})
		return string(b), nil
	}
	if len(v) == 0 {
		v = json.RawMessage("null")
	}
	return `{"value":` + string(v) + `}`, nil
}

// log keeps one line, within the cap.
func (r *run) log(level, msg string) {
	switch level {
	case "error", "warn", "info", "debug":
	default:
		level = "info"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.res.LogsTruncated {
		return
	}
	if r.logBytes+len(msg) > r.p.Limits.LogBytes {
		// The line that does not fit is kept cut to what is left, so that
		// one oversized line still shows; nothing after it is kept.
		r.res.LogsTruncated = true
		if left := r.p.Limits.LogBytes - r.logBytes - len(cleantext.Truncated); left > 0 {
			msg = cleantext.Cap(msg, left)
			r.logBytes = r.p.Limits.LogBytes
			r.res.Logs = append(r.res.Logs, LogLine{TS: time.Now().UTC(), Level: level, Message: msg})
		}
		return
	}
	r.logBytes += len(msg)
	r.res.Logs = append(r.res.Logs, LogLine{TS: time.Now().UTC(), Level: level, Message: msg})
}
