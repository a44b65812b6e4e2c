// Package executor says what one run of an agent or a function is to its
// caller and to the runtime that does it: the Executor interface, a run's
// inputs and result, and the Registry that finds an agent's executor by
// runtime name. The runtimes themselves (an LLM completion, JavaScript in
// the sandbox, a call to a webhook agent) are in executor/runtimes, so
// that callers depend on what a run is and not on what any runtime needs.
// The life around a run (claim, execution slot, timeout, cancel, recording
// the end, recovery) belongs to its caller: activation for agents,
// function for executions, pipeline for steps. A run is cancelled through
// its context.
package executor

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentplatform/agentplatform/internal/store"
)

// Kind says what a run belongs to.
type Kind string

// Kinds of run.
const (
	Activation Kind = "activation"
	Execution  Kind = "execution"
)

// Run is one run's inputs.
type Run struct {
	Kind Kind
	// ID is the activation id or the execution id.
	ID         string
	UserID     string
	AppID      string
	AgentID    string // activations
	FunctionID string // executions
	ChatID     string
	CreatedAt  time.Time
	Input      json.RawMessage
	Context    json.RawMessage
	Metadata   json.RawMessage
	// Config is the agent's agent_config; for a function
	// {"runtime":"javascript","code":...}.
	Config json.RawMessage
	// TimeoutSeconds is the limit the caller enforces through ctx; the
	// executor only reports it (e.g. in a sandbox's error).
	TimeoutSeconds int
	// IdempotencyKey is the tool call a function runs for
	// ({activation_id}:{tool_call_id}, the same on every try), else "".
	IdempotencyKey string
	// AgentKey is the run's agk_ key (custom agents), else "".
	AgentKey string
	// OnDelta receives streamed output fragments (LLM tokens); may be nil.
	OnDelta func(text string)
	// Journal records the run's steps (activations); nil where a run has
	// none (a function's execution, a pipeline's step).
	Journal Journal
	// APIKeyID is the API key the activation was made with (0: none): its
	// LLM calls count to the key, and so do its children's.
	APIKeyID int64
}

// Budgets decides whether a run may make its next LLM call: an error
// (usage.BudgetExceeded) fails the run while a budget that applies to it
// is spent. The runtimes call Allow before every LLM call, and AfterUsage
// with the calls they record themselves, once committed, so that the call
// crossing a budget's warning line is warned of at once.
type Budgets interface {
	Allow(ctx context.Context, run *Run) error
	AfterUsage(ctx context.Context, recs ...*store.UsageRecord) error
}

// Journal is the step record of a run that goes in steps (an LLM agent
// calling tools). The caller owns it: each method commits what it is
// given, with the events it announces, before it returns, so that a run
// taken over after a crash finds every step that ended and does none of
// them again.
type Journal interface {
	// Steps are the steps recorded so far, in index order.
	Steps(ctx context.Context) ([]store.Step, error)
	// Record inserts new steps in one transaction (an LLM answer and the
	// tool calls it asked for) and announces those that have ended. An
	// llm step's Bill goes to the usage ledger in that transaction.
	Record(ctx context.Context, steps ...*store.Step) error
	// End records the end of a running or waiting step, and announces it.
	End(ctx context.Context, step *store.Step) error
	// Wait records a waitpoint and its wait step in one transaction with
	// the run's waiting state, and gives up the run: the executor returns
	// ErrWaiting next. The answer (or the wait's end in time) queues the
	// run again, and it resumes from its steps.
	Wait(ctx context.Context, w *Wait) error
}

// Wait is what a run waits for.
type Wait struct {
	// Kind is store.WaitApproval or store.WaitToolResult.
	Kind string
	// Calls are the tool calls it waits on, in call order.
	Calls []WaitCall
	// Step is the wait step, not yet recorded (index, started_at).
	Step *store.Step
	// For is how long the wait lasts before it ends without an answer.
	For time.Duration
}

// WaitCall is one tool call a wait is about.
type WaitCall struct {
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
}

// ErrWaiting is what Execute returns once Journal.Wait has recorded a
// wait: the run has not ended, it has stopped until an answer comes.
var ErrWaiting = errors.New("executor: the run waits")

// LogLine is one line a run wrote (ctx.log, console.log, a thrown error's
// stack).
type LogLine struct {
	TS      time.Time `json:"ts"`
	Level   string    `json:"level" enum:"debug,info,warn,error"`
	Message string    `json:"message"`
}

// Result is what a run produced. Logs are kept even when the run failed.
type Result struct {
	Output        json.RawMessage
	Logs          []LogLine
	LogsTruncated bool
	// Usage are the LLM calls whose answers the output holds and no
	// journal step recorded (a plain completion's): the caller adds them
	// to the ledger in the transaction that records the run's end, and
	// only if it does (a run cancelled meanwhile records nothing). The
	// caller fills in who spent them.
	Usage []*store.UsageRecord
}

// Executor runs one runtime's agents or functions. The life around a run
// is its caller's and the same for every runtime; what differs per runtime
// is behind these four methods (Woodpecker's pipeline backends: one
// lifecycle, backends registered by name).
type Executor interface {
	// Runtime is the name it is registered under: "llm" for LLM agents,
	// else the agent_config.runtime it runs ("javascript", "webhook").
	Runtime() string
	// Validate checks, before an activation is queued, what of the request
	// only this runtime reads (an LLM agent's metadata.provider_id). A
	// validation error names the request's field.
	Validate(ctx context.Context, c *Check) error
	// NeedsAgentKey says whether a run gets an agent key (agk_) to call
	// the platform back with: code a user wrote does, a completion does
	// not.
	NeedsAgentKey() bool
	// Execute returns a non-nil Result whenever it has logs to keep, with
	// or without an error.
	Execute(ctx context.Context, run *Run) (*Result, error)
}

// Check is an activation being created, as its executor validates it.
type Check struct {
	UserID string
	// Config is the agent's agent_config.
	Config json.RawMessage
	// Metadata is the request's metadata, its known keys' types already
	// checked.
	Metadata map[string]any
	// Input is the request's input_data, already known to be an object.
	Input json.RawMessage
}

// ErrNoExecutor is the error of a run whose kind this platform cannot run.
var ErrNoExecutor = errors.New("executor: no executor for this agent")

// LLMRuntime is the runtime of every agent of agent_type_id "llm".
const LLMRuntime = "llm"

// Registry holds the executors by runtime name. A runtime without an
// executor cannot run: its activations fail.
type Registry map[string]Executor

// NewRegistry registers each of execs under its Runtime.
func NewRegistry(execs ...Executor) Registry {
	r := make(Registry, len(execs))
	for _, e := range execs {
		r[e.Runtime()] = e
	}
	return r
}

// RuntimeOf is the runtime of an agent of type agentType with config cfg:
// "llm" for LLM agents, else agent_config.runtime.
func RuntimeOf(agentType string, cfg json.RawMessage) string {
	if agentType == "llm" {
		return LLMRuntime
	}
	var c struct {
		Runtime string `json:"runtime"`
	}
	_ = json.Unmarshal(cfg, &c)
	return c.Runtime
}

// For is the executor of an agent of type agentType with config cfg.
func (r Registry) For(agentType string, cfg json.RawMessage) (Executor, error) {
	runtime := RuntimeOf(agentType, cfg)
	if e := r[runtime]; e != nil {
		return e, nil
	}
	if runtime != "" && runtime != LLMRuntime {
		return nil, errors.New("custom agents (runtime " + runtime + ") cannot run on this version of the platform yet")
	}
	return nil, ErrNoExecutor
}
