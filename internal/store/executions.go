package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
)

// Execution is one run of a function.
type Execution struct {
	ID          string
	FunctionID  string
	AppID       string
	UserID      string
	Status      string // completed or failed
	Input       json.RawMessage
	Output      json.RawMessage // null when failed
	Error       string
	DurationMS  int64
	CreatedAt   time.Time
	CompletedAt time.Time
	// Logs are the run's logs, written to run_logs with the execution
	// when there are any; read back by ExecutionLogs.
	Logs          json.RawMessage
	LogsTruncated bool
	// PipelineRunID and PipelineStep name the pipeline step the execution
	// ran for, if any: one execution per step of a run (ErrConflict for a
	// second).
	PipelineRunID string
	PipelineStep  string
}

const executionColumns = `id, function_id, app_id, user_id, status, input, output, error, duration_ms, created_at, completed_at, pipeline_run_id, pipeline_step`

func scanExecution(row interface{ Scan(...any) error }, e *Execution) error {
	var input, output []byte
	var errText, runID, step sql.NullString
	err := row.Scan(&e.ID, &e.FunctionID, &e.AppID, &e.UserID, &e.Status, &input, &output, &errText, &e.DurationMS, &e.CreatedAt, &e.CompletedAt,
		&runID, &step)
	e.Input, e.Output, e.Error, e.PipelineRunID, e.PipelineStep = input, output, errText.String, runID.String, step.String
	return err
}

// ExecutionGetByStep returns the execution of step stepID of pipeline run
// runID, or ErrNotFound.
func (s *Store) ExecutionGetByStep(ctx context.Context, runID, stepID string) (*Execution, error) {
	var e Execution
	err := scanExecution(s.reader().QueryRowContext(ctx, `SELECT `+executionColumns+` FROM function_executions
		WHERE pipeline_run_id = $1 AND pipeline_step = $2`, runID, stepID), &e)
	return &e, mapErr(err)
}

// ExecutionGet returns execution id, or ErrNotFound.
func (s *Store) ExecutionGet(ctx context.Context, id string) (*Execution, error) {
	var e Execution
	err := scanExecution(s.reader().QueryRowContext(ctx, `SELECT `+executionColumns+` FROM function_executions WHERE id = $1`, id), &e)
	return &e, mapErr(err)
}

// ExecutionCreate records an ended execution, with its logs.
func (s *Store) ExecutionCreate(ctx context.Context, e *Execution) error {
	var output, errText any
	if len(e.Output) > 0 {
		output = string(e.Output)
	}
	if e.Error != "" {
		errText = e.Error
	}
	_, err := s.writer().ExecContext(ctx, `INSERT INTO function_executions (`+executionColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		e.ID, e.FunctionID, e.AppID, e.UserID, e.Status, jsonOr(e.Input, "null"), output, errText, e.DurationMS, s.ts(e.CreatedAt), s.ts(e.CompletedAt),
		nullable(e.PipelineRunID), nullable(e.PipelineStep))
	if err == nil && len(e.Logs) > 0 {
		err = s.RunLogsPut(ctx, &RunLogs{RunID: e.ID, UserID: e.UserID, AppID: e.AppID, Logs: e.Logs, Truncated: e.LogsTruncated, CreatedAt: e.CompletedAt})
	}
	return mapErr(err)
}

// ExecutionList returns a page of the user's executions of app (of one
// function when functionID is set), newest first, and how many there are.
func (s *Store) ExecutionList(ctx context.Context, userID, appID, functionID string, limit, offset int) ([]Execution, int, error) {
	cond := `user_id = $1 AND app_id = $2 AND ($3 = '' OR ` + s.d.cast("function_id", "text") + ` = $3)`
	var total int
	if err := s.reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM function_executions WHERE `+cond, userID, appID, functionID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := queryPage(ctx, s, scanExecution, `SELECT `+executionColumns+` FROM function_executions WHERE `+cond+
		` ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5`, userID, appID, functionID, limit, offset)
	return rows, total, err
}
