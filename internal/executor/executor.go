// Package executor owns what one run of an agent or a function does: an LLM
// completion, JavaScript in the sandbox, or a call to a webhook agent. The
// life around a run (claim, execution slot, timeout, cancel, recording the
// end, recovery) belongs to its caller: activation for agents, function for
// executions, pipeline for steps. A run is cancelled through its context.
package executor

import (
	"context"
	"encoding/json"
	"errors"
	"time"
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
	// AgentKey is the run's agk_ key (custom agents), else "".
	AgentKey string
	// OnDelta receives streamed output fragments (LLM tokens); may be nil.
	OnDelta func(text string)
}

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
}

// Executor runs one kind of agent or function. Execute returns a non-nil
// Result whenever it has logs to keep, with or without an error.
type Executor interface {
	Execute(ctx context.Context, run *Run) (*Result, error)
}

// ErrNoExecutor is the error of a run whose kind this platform cannot run.
var ErrNoExecutor = errors.New("executor: no executor for this agent")

// Set chooses the executor of an agent by its agent_type_id and
// agent_config.runtime. A nil member cannot run.
type Set struct {
	LLM        Executor
	JavaScript Executor
	Webhook    Executor
}

// For is the executor of an agent of type agentType with config cfg.
func (s *Set) For(agentType string, cfg json.RawMessage) (Executor, error) {
	var e Executor
	var runtime string
	if agentType == "llm" {
		e = s.LLM
	} else {
		var c struct {
			Runtime string `json:"runtime"`
		}
		_ = json.Unmarshal(cfg, &c)
		runtime = c.Runtime
		switch c.Runtime {
		case "javascript":
			e = s.JavaScript
		case "webhook":
			e = s.Webhook
		}
	}
	if e == nil {
		if runtime != "" {
			return nil, errors.New("custom agents (runtime " + runtime + ") cannot run on this version of the platform yet")
		}
		return nil, ErrNoExecutor
	}
	return e, nil
}
