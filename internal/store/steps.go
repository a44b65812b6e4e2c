package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// Step statuses. A step is running or waiting until it ends, completed or
// failed; an ended step never changes again.
const (
	StepRunning   = "running"
	StepWaiting   = "waiting"
	StepCompleted = "completed"
	StepFailed    = "failed"
)

// Step kinds: one LLM call, one tool call, or a wait for a waitpoint.
const (
	StepLLM  = "llm"
	StepTool = "tool"
	StepWait = "wait"
)

// Step is one entry of an activation's step journal, committed before the
// next step starts so a run taken over after a crash resumes at its first
// unfinished step instead of asking or calling again.
type Step struct {
	ActivationID string
	Index        int
	Kind         string
	Name         string
	ToolCallID   string
	Input        json.RawMessage // nil: NULL
	Output       json.RawMessage // nil: NULL
	Error        *string
	Status       string
	Usage        json.RawMessage // nil: NULL
	StartedAt    time.Time
	EndedAt      *time.Time
	// Bill is, on an llm step being recorded, the usage record of its
	// call (provider, model, tokens, cost): the journal adds it to the
	// ledger in the step's transaction, with who spent it. Not a column;
	// nil on a step read back.
	Bill *UsageRecord
}

const stepColumns = `activation_id, idx, kind, name, tool_call_id, input, output, error, status, usage, started_at, ended_at`

func scanStep(row interface{ Scan(...any) error }, st *Step) error {
	var input, output, usage []byte
	var errText sql.NullString
	var ended sql.NullTime
	if err := row.Scan(&st.ActivationID, &st.Index, &st.Kind, &st.Name, &st.ToolCallID, &input, &output, &errText,
		&st.Status, &usage, &st.StartedAt, &ended); err != nil {
		return err
	}
	st.Input, st.Output, st.Usage = nullJSON(input), nullJSON(output), nullJSON(usage)
	st.Error = nil
	if errText.Valid {
		st.Error = &errText.String
	}
	st.StartedAt, st.EndedAt = st.StartedAt.UTC(), nullTime(ended)
	return nil
}

// nullJSON is a scanned nullable JSON column: nil for NULL.
func nullJSON(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

// stepsPerInsert bounds the rows of one INSERT: SQLite looks a numbered
// parameter up in a list, so one statement for the 1,000 calls of a
// hostile answer (12,000 parameters) takes quadratic time, seconds of the
// one writer; statements of 50 rows keep it linear.
const stepsPerInsert = 50

// StepsInsert records steps (the calls of one LLM answer start together),
// in statements of at most stepsPerInsert rows: in a transaction, all or
// none of them are stored. An index the activation already has is
// ErrConflict.
func (s *Store) StepsInsert(ctx context.Context, steps ...*Step) error {
	for rest := steps; len(rest) > 0; {
		n := min(len(rest), stepsPerInsert)
		if err := s.stepsInsert(ctx, rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

func (s *Store) stepsInsert(ctx context.Context, steps []*Step) error {
	const perRow = 12
	args := make([]any, 0, perRow*len(steps))
	for _, st := range steps {
		args = append(args, st.ActivationID, st.Index, st.Kind, st.Name, st.ToolCallID, nullable(string(st.Input)),
			nullable(string(st.Output)), st.Error, st.Status, nullable(string(st.Usage)), s.ts(st.StartedAt), s.tsPtr(st.EndedAt))
	}
	_, err := s.writer().ExecContext(ctx, `INSERT INTO activation_steps (`+stepColumns+`) VALUES `+tuples(len(steps), perRow), args...)
	return mapErr(err)
}

// StepEnd ends a step that is running or waiting with status (completed or
// failed); a nil output or usage keeps what the step holds. ok is false
// when the step was not running or waiting (already ended, or no such
// step): nothing changes then, so a step ends once.
func (s *Store) StepEnd(ctx context.Context, activationID string, idx int, status string, output json.RawMessage, errText *string,
	usage json.RawMessage, endedAt time.Time) (ok bool, err error) {
	if status != StepCompleted && status != StepFailed {
		return false, fmt.Errorf("store: a step ends completed or failed, not %q", status)
	}
	return rowChanged(s.writer().ExecContext(ctx, `UPDATE activation_steps
		SET status = $3, output = COALESCE($4, output), error = $5, usage = COALESCE($6, usage), ended_at = $7
		WHERE activation_id = $1 AND idx = $2 AND status IN ('running', 'waiting')`,
		activationID, idx, status, nullable(string(output)), errText, nullable(string(usage)), s.ts(endedAt)))
}

// StepSetStatus moves a step from one not-ended status to another (a wait
// step whose answer came goes from waiting back to running); ok is false
// when the step is not in status from. Ending a step is StepEnd's.
func (s *Store) StepSetStatus(ctx context.Context, activationID string, idx int, from, to string) (bool, error) {
	for _, st := range []string{from, to} {
		if st != StepRunning && st != StepWaiting {
			return false, fmt.Errorf("store: StepSetStatus moves between running and waiting, not %q", st)
		}
	}
	return rowChanged(s.writer().ExecContext(ctx, `UPDATE activation_steps SET status = $4
		WHERE activation_id = $1 AND idx = $2 AND status = $3`, activationID, idx, from, to))
}

// rowChanged reports whether an UPDATE changed a row.
func rowChanged(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// StepsAll returns every step of an activation in index order: what a run
// resuming replays.
func (s *Store) StepsAll(ctx context.Context, activationID string) ([]Step, error) {
	return queryAll(ctx, s.reader(), scanStep, `SELECT `+stepColumns+` FROM activation_steps
		WHERE activation_id = $1 ORDER BY idx`, activationID)
}

// StepsList returns a page of an activation's steps in index order and
// their total. Like every list page it may stop short of limit when its
// steps are large (queryPage): has_more comes from the total.
func (s *Store) StepsList(ctx context.Context, activationID string, limit, offset int) ([]Step, int, error) {
	total, err := s.count(ctx, `SELECT COUNT(*) FROM activation_steps WHERE activation_id = $1`, activationID)
	if err != nil {
		return nil, 0, err
	}
	list, err := queryPage(ctx, s, scanStep, `SELECT `+stepColumns+` FROM activation_steps
		WHERE activation_id = $1 ORDER BY idx LIMIT $2 OFFSET $3`, activationID, limit, offset)
	return list, total, err
}
