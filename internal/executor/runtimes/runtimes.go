// Package runtimes holds the executors, one per runtime: LLM agents (a
// completion, with the chat's history), JavaScript agents and functions
// (code in the sandbox) and webhook agents (the run POSTed to the agent).
// The server registers them by name (executor.NewRegistry); their callers
// see them only as executor.Executor.
package runtimes

import (
	"context"

	"github.com/agentplatform/agentplatform/internal/executor"
)

// custom is what the runtimes of custom agents share: the platform cannot
// check a request against code it does not read, and the code calls the
// platform back with the run's agent key.
type custom struct{}

// Validate accepts every request: the agent's code judges its input.
func (custom) Validate(context.Context, *executor.Check) error { return nil }

// NeedsAgentKey: custom code calls the platform back with it.
func (custom) NeedsAgentKey() bool { return true }
