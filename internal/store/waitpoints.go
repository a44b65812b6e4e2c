package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Waitpoint kinds: a person approves tool calls, or the caller sends the
// results of client tools.
const (
	WaitApproval   = "approval"
	WaitToolResult = "tool_result"
)

// Waitpoint is what a waiting activation waits for. It is stored in the
// transaction that ends the waiting step, before the run gives up its
// worker, so an answer that comes early finds it; it is answered once.
type Waitpoint struct {
	ID           string
	ActivationID string
	UserID       string
	Kind         string
	ToolCalls    json.RawMessage
	StepIndex    int // the idx of the wait step
	ExpiresAt    time.Time
	CreatedAt    time.Time
	AnsweredAt   *time.Time
	Answer       json.RawMessage // nil until answered
}

const waitpointColumns = `id, activation_id, user_id, kind, tool_calls, step_index, expires_at, created_at, answered_at, answer`

func scanWaitpoint(row interface{ Scan(...any) error }, w *Waitpoint) error {
	var toolCalls, answer []byte
	var answered sql.NullTime
	if err := row.Scan(&w.ID, &w.ActivationID, &w.UserID, &w.Kind, &toolCalls, &w.StepIndex, &w.ExpiresAt, &w.CreatedAt,
		&answered, &answer); err != nil {
		return err
	}
	w.ToolCalls, w.Answer = toolCalls, nullJSON(answer)
	w.ExpiresAt, w.CreatedAt, w.AnsweredAt = w.ExpiresAt.UTC(), w.CreatedAt.UTC(), nullTime(answered)
	return nil
}

// WaitpointCreate stores w, unanswered.
func (s *Store) WaitpointCreate(ctx context.Context, w *Waitpoint) error {
	_, err := s.writer().ExecContext(ctx, `INSERT INTO waitpoints (id, activation_id, user_id, kind, tool_calls, step_index, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		w.ID, w.ActivationID, w.UserID, w.Kind, jsonOr(w.ToolCalls, "[]"), w.StepIndex, s.ts(w.ExpiresAt), s.ts(w.CreatedAt))
	return mapErr(err)
}

// WaitpointGet returns the waitpoint with id, or ErrNotFound. An id that
// is no UUID names none (PostgreSQL would refuse it as a parameter).
func (s *Store) WaitpointGet(ctx context.Context, id string) (*Waitpoint, error) {
	if !isUUID(id) {
		return nil, ErrNotFound
	}
	var w Waitpoint
	if err := scanWaitpoint(s.reader().QueryRowContext(ctx, `SELECT `+waitpointColumns+` FROM waitpoints WHERE id = $1`, id), &w); err != nil {
		return nil, mapErr(err)
	}
	return &w, nil
}

// WaitpointAnswer records the answer of an unanswered waitpoint and returns
// it; ok is false when it was answered already, and the waitpoint returned
// then keeps its first answer. An unknown id is ErrNotFound.
func (s *Store) WaitpointAnswer(ctx context.Context, id string, answer json.RawMessage, now time.Time) (*Waitpoint, bool, error) {
	if !isUUID(id) {
		return nil, false, ErrNotFound
	}
	var w Waitpoint
	err := scanWaitpoint(s.writer().QueryRowContext(ctx, `UPDATE waitpoints SET answer = $2, answered_at = $3
		WHERE id = $1 AND answered_at IS NULL RETURNING `+waitpointColumns, id, jsonOr(answer, "{}"), s.ts(now)), &w)
	if err == sql.ErrNoRows {
		got, err := s.WaitpointGet(ctx, id)
		return got, false, err
	}
	if err != nil {
		return nil, false, mapErr(err)
	}
	return &w, true, nil
}

// WaitpointsOf returns an activation's waitpoints, oldest first.
func (s *Store) WaitpointsOf(ctx context.Context, activationID string) ([]Waitpoint, error) {
	return queryAll(ctx, s.reader(), scanWaitpoint, `SELECT `+waitpointColumns+` FROM waitpoints
		WHERE activation_id = $1 ORDER BY created_at, id`, activationID)
}

// isUUID reports whether id is a UUID in its canonical 36-character form,
// the only one ids are given out in (PostgreSQL reads a few others, and
// refuses the rest).
func isUUID(id string) bool { return len(id) == 36 && uuid.Validate(id) == nil }
