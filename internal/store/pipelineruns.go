package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
)

// PipelineRun is one run of a pipeline. Definition is the steps as they
// were when the run started; Steps their states; Current the index of the
// step running (len(Steps) once ended).
type PipelineRun struct {
	ID         string
	PipelineID string
	AppID      string
	UserID     string
	Status     string
	Input      json.RawMessage
	Definition json.RawMessage
	Steps      json.RawMessage
	Current    int
	Output     json.RawMessage
	Error      string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// WorkerID is the worker running the current step ("" when none
	// does: queued, waiting on an activation, or ended); Attempt counts
	// the claims of the current step.
	WorkerID string
	Attempt  int
	// APIKeyID is the API key that started the run (0: a session): its
	// steps' LLM calls count to it.
	APIKeyID int64
}

const pipelineRunColumns = `id, pipeline_id, app_id, user_id, status, input, definition, steps, current, output, error, created_at, updated_at, worker_id, attempt, api_key_id`

func scanPipelineRun(row interface{ Scan(...any) error }, r *PipelineRun) error {
	var input, def, steps, output []byte
	var errText, worker sql.NullString
	var keyID sql.NullInt64
	err := row.Scan(&r.ID, &r.PipelineID, &r.AppID, &r.UserID, &r.Status, &input, &def, &steps, &r.Current, &output, &errText, &r.CreatedAt, &r.UpdatedAt,
		&worker, &r.Attempt, &keyID)
	r.Input, r.Definition, r.Steps, r.Output, r.Error, r.WorkerID = input, def, steps, output, errText.String, worker.String
	r.APIKeyID = keyID.Int64
	return err
}

// PipelineRunCreate inserts r.
func (s *Store) PipelineRunCreate(ctx context.Context, r *PipelineRun) error {
	_, err := s.writer().ExecContext(ctx, `INSERT INTO pipeline_runs (`+pipelineRunColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, NULL, $10, $11, $12, $13, $14)`,
		r.ID, r.PipelineID, r.AppID, r.UserID, r.Status, jsonOr(r.Input, "null"), string(r.Definition), string(r.Steps), r.Current, s.ts(r.CreatedAt), s.ts(r.UpdatedAt),
		nullable(r.WorkerID), r.Attempt, nullableID(r.APIKeyID))
	return mapErr(err)
}

// PipelineRunGet returns the run with id, whoever owns it; in a
// transaction on PostgreSQL the row is locked until the commit, so that
// two steps' ends never move one run at once.
func (s *Store) PipelineRunGet(ctx context.Context, id string) (*PipelineRun, error) {
	lock := ""
	if s.tx != nil {
		lock = s.d.forUpdate()
	}
	var r PipelineRun
	err := scanPipelineRun(s.reader().QueryRowContext(ctx, `SELECT `+pipelineRunColumns+` FROM pipeline_runs WHERE id = $1`+lock, id), &r)
	return &r, mapErr(err)
}

// PipelineRunUpdate writes r's state.
func (s *Store) PipelineRunUpdate(ctx context.Context, r *PipelineRun) error {
	var output, errText any
	if len(r.Output) > 0 {
		output = string(r.Output)
	}
	if r.Error != "" {
		errText = r.Error
	}
	return expectOne(s.writer().ExecContext(ctx, `UPDATE pipeline_runs SET status = $2, steps = $3, current = $4, output = $5, error = $6, updated_at = $7,
		worker_id = $8, attempt = $9 WHERE id = $1`,
		r.ID, r.Status, string(r.Steps), r.Current, output, errText, s.ts(r.UpdatedAt), nullable(r.WorkerID), r.Attempt))
}

// PipelineRunsClaimedBy lists the ids of the runs whose current step
// worker workerID runs.
func (s *Store) PipelineRunsClaimedBy(ctx context.Context, workerID string) ([]string, error) {
	return s.strings(ctx, `SELECT id FROM pipeline_runs WHERE worker_id = $1`, workerID)
}

// PipelineRunList returns a page of pipeline's runs, newest first, and how
// many there are.
func (s *Store) PipelineRunList(ctx context.Context, userID, pipelineID string, limit, offset int) ([]PipelineRun, int, error) {
	var total int
	if err := s.reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM pipeline_runs WHERE user_id = $1 AND pipeline_id = $2`, userID, pipelineID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := queryPage(ctx, s, scanPipelineRun, `SELECT `+pipelineRunColumns+` FROM pipeline_runs WHERE user_id = $1 AND pipeline_id = $2
		ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`, userID, pipelineID, limit, offset)
	return rows, total, err
}

// PipelineWaitPut records that step of run waits on activation.
func (s *Store) PipelineWaitPut(ctx context.Context, activationID, runID string, step int) error {
	_, err := s.writer().ExecContext(ctx, `INSERT INTO pipeline_waits (activation_id, run_id, step) VALUES ($1, $2, $3)
		ON CONFLICT (activation_id) DO NOTHING`, activationID, runID, step)
	return mapErr(err)
}

// PipelineWaitTake removes and returns the step waiting on activation;
// ok is false when none does (most activations are no step's).
func (s *Store) PipelineWaitTake(ctx context.Context, activationID string) (runID string, step int, ok bool, err error) {
	err = s.writer().QueryRowContext(ctx, `DELETE FROM pipeline_waits WHERE activation_id = $1 RETURNING run_id, step`, activationID).Scan(&runID, &step)
	if err == sql.ErrNoRows {
		return "", 0, false, nil
	}
	return runID, step, err == nil, err
}
