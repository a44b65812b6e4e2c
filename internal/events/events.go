// Package events owns what the platform announces: activation lifecycle
// events, stored per user with an increasing seq for replay, published only
// after the transaction that caused them commits, delivered to WebSocket
// clients on every node (PostgreSQL LISTEN/NOTIFY) and to webhooks.
package events

import (
	"encoding/json"
	"time"
)

// The event types.
const (
	ActivationCreated   = "activation_created"
	ActivationStarted   = "activation_started"
	ActivationCompleted = "activation_completed"
	ActivationFailed    = "activation_failed"
	// ActivationStep announces an ended step of a run that goes in steps
	// (Step is its /steps record); ActivationWaiting, that the run waits
	// for a person or its caller (Waiting is the activation's waiting).
	ActivationStep    = "activation_step"
	ActivationWaiting = "activation_waiting"
	// Token is an ephemeral fragment of an LLM's answer (Delta), for
	// streaming; it is not stored and has no seq.
	Token = "token"
)

// Event is one announcement, as sent to clients.
type Event struct {
	Type         string `json:"type"`
	Seq          int64  `json:"seq"`
	UserID       string `json:"-"`
	ActivationID string `json:"activation_id,omitempty"`
	AgentID      string `json:"agent_id,omitempty"`
	// RunID and PipelineID are a pipeline run's (pipeline_run_* events).
	RunID      string          `json:"run_id,omitempty"`
	PipelineID string          `json:"pipeline_id,omitempty"`
	Status     string          `json:"status"`
	Context    map[string]any  `json:"context"` // chat_id, app_id, …
	OutputData json.RawMessage `json:"output_data,omitempty"`
	Error      string          `json:"error,omitempty"`
	Delta      string          `json:"delta,omitempty"`
	Step       json.RawMessage `json:"step,omitempty"`
	Waiting    json.RawMessage `json:"waiting,omitempty"`
	Timestamp  time.Time       `json:"timestamp"`
}
