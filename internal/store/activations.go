package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Activation statuses. Stored status is always one of these four.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// StatusWaiting is no stored status: in ActivationFilter.Statuses it
// selects the running activations that wait (waiting set), while
// StatusRunning still selects them all.
const StatusWaiting = "waiting"

// Activation is one run of an agent.
type Activation struct {
	ID              string
	UserID          string
	AppID           string // empty for system agents
	AgentID         string
	Status          string
	InputData       json.RawMessage
	Context         json.RawMessage
	Metadata        json.RawMessage
	Priority        int
	ChatID          string
	OutputData      json.RawMessage // nil until completed
	Error           *string
	CreatedAt       time.Time
	StartedAt       *time.Time
	CompletedAt     *time.Time
	DurationMS      *int64
	Attempt         int
	WorkerID        string
	IdempotencyKey  string
	RequestHash     string
	CancelRequested bool
	// Waiting is the DESIGN's waiting object ({waitpoint_id, kind,
	// tool_calls, expires_at}) while a running activation waits for an
	// answer and holds no worker; nil otherwise.
	Waiting json.RawMessage
	// APIKeyID is the API key that created the activation (0: a session,
	// or none), to whose usage and budgets its LLM calls count.
	APIKeyID int64
}

const activationColumns = `id, user_id, app_id, agent_id, status, input_data, context, metadata, priority, chat_id,
	output_data, error, created_at, started_at, completed_at, duration_ms, attempt, worker_id,
	idempotency_key, request_hash, cancel_requested, waiting, api_key_id`

// sqliteActivationColumns are activationColumns with the timestamps as
// expressions, which scanActivation parses itself (scantime.go).
var sqliteActivationColumns = strings.NewReplacer(
	"created_at", sqliteTimeColumn("created_at"),
	"started_at", sqliteTimeColumn("started_at"),
	"completed_at", sqliteTimeColumn("completed_at"),
).Replace(activationColumns)

// activationColumns is the column list scanActivation reads, on s's database.
func (s *Store) activationColumns() string {
	if s.d.name() == SQLite {
		return sqliteActivationColumns
	}
	return activationColumns
}

func scanActivation(row interface{ Scan(...any) error }, a *Activation) error {
	var appID, chatID, workerID, idemKey, reqHash, errText sql.NullString
	var input, ctxJSON, meta, output, waiting []byte
	var created, started, completed scanTime
	var duration, keyID sql.NullInt64
	if err := row.Scan(&a.ID, &a.UserID, &appID, &a.AgentID, &a.Status, &input, &ctxJSON, &meta, &a.Priority, &chatID,
		&output, &errText, &created, &started, &completed, &duration, &a.Attempt, &workerID,
		&idemKey, &reqHash, &a.CancelRequested, &waiting, &keyID); err != nil {
		return err
	}
	a.APIKeyID = keyID.Int64
	a.AppID, a.ChatID, a.WorkerID = appID.String, chatID.String, workerID.String
	a.IdempotencyKey, a.RequestHash = idemKey.String, reqHash.String
	a.InputData, a.Context, a.Metadata, a.Waiting = input, ctxJSON, meta, nullJSON(waiting)
	if output != nil {
		a.OutputData = output
	}
	if errText.Valid {
		a.Error = &errText.String
	}
	a.CreatedAt, a.StartedAt, a.CompletedAt = created.Time, started.ptr(), completed.ptr()
	if duration.Valid {
		a.DurationMS = &duration.Int64
	}
	return nil
}

// nullableID is an optional id: 0 is NULL.
func nullableID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

func jsonOr(raw json.RawMessage, empty string) string {
	if len(raw) == 0 {
		return empty
	}
	return string(raw)
}

// ActivationCreate inserts an activation: queued, or running when its
// creator claims it at once. A repeated idempotency key of the same user is
// ErrConflict; an agent (or app, or user) deleted since the caller read it
// is ErrNotFound.
func (s *Store) ActivationCreate(ctx context.Context, a *Activation) error {
	var row Activation
	insert := s.activationInsert(a)
	err := scanActivation(s.writer().QueryRowContext(ctx, insert.sql+` RETURNING `+s.activationColumns(), insert.args...), &row)
	if err != nil {
		return mapCreateErr(err)
	}
	s.cacheActivation(&row)
	return nil
}

// ActivationCreateRecorded is ActivationCreate with the activation's
// events (rows, of its user), in one transaction. Outside a transaction
// on PostgreSQL, that is one statement, its own commit: a transaction
// would be four round trips (BEGIN, the two inserts, COMMIT), the most of
// what an API node spends on a run.
func (s *Store) ActivationCreateRecorded(ctx context.Context, a *Activation, rows ...*EventRow) error {
	if len(rows) == 0 {
		return s.ActivationCreate(ctx, a)
	}
	if s.tx != nil || !s.d.writableCTE() {
		return s.InTx(ctx, func(tx *Store) error {
			if err := tx.ActivationCreate(ctx, a); err != nil {
				return err
			}
			return tx.EventAppend(ctx, rows...)
		})
	}
	if err := oneUser(rows); err != nil {
		return err
	}
	insert := s.activationInsert(a)
	insert.sql = "act AS (" + insert.sql + ")"
	return mapCreateErr(s.d.appendEvents(ctx, s, rows, 0, insert))
}

// mapCreateErr is mapErr for an activation's insert. Its agent can be
// deleted after the caller read it (on PostgreSQL another process may
// still answer that read from its cache for a second: agentcache.go): the
// activation names a row that is gone, not a fault.
func mapCreateErr(err error) error {
	if isForeignKeyViolation(err) {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	return mapErr(err)
}

// activationInsert is the statement that inserts a.
func (s *Store) activationInsert(a *Activation) statement {
	return statement{`INSERT INTO activations
		(id, user_id, app_id, agent_id, status, input_data, context, metadata, priority, chat_id, created_at, idempotency_key, request_hash,
		 started_at, worker_id, attempt, api_key_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`, []any{
		a.ID, a.UserID, nullable(a.AppID), a.AgentID, a.Status, jsonOr(a.InputData, "{}"), jsonOr(a.Context, "{}"),
		jsonOr(a.Metadata, "{}"), a.Priority, nullable(a.ChatID), s.ts(a.CreatedAt), nullable(a.IdempotencyKey), nullable(a.RequestHash),
		s.tsPtr(a.StartedAt), nullable(a.WorkerID), a.Attempt, nullableID(a.APIKeyID)}}
}

// ActivationGet returns the activation with id, whoever owns it.
func (s *Store) ActivationGet(ctx context.Context, id string) (*Activation, error) {
	if s.acts != nil && s.tx == nil {
		if a, ok := s.acts.get(id); ok {
			return a, nil
		}
	}
	var a Activation
	query := `SELECT ` + s.activationColumns() + ` FROM activations WHERE id = $1`
	if s.tx == nil && s.d.multiNode() {
		// Every poll of a run reads it here.
		err := s.queryRowNative(ctx, query, []any{id}, func(row interface{ Scan(...any) error }) error { return scanActivation(row, &a) })
		return &a, mapErr(err)
	}
	err := scanActivation(s.reader().QueryRowContext(ctx, query, id), &a)
	return &a, mapErr(err)
}

// ActivationGetByIdempotencyKey returns the user's activation created with
// key, or ErrNotFound.
func (s *Store) ActivationGetByIdempotencyKey(ctx context.Context, userID, key string) (*Activation, error) {
	var a Activation
	err := scanActivation(s.reader().QueryRowContext(ctx,
		`SELECT `+s.activationColumns()+` FROM activations WHERE user_id = $1 AND idempotency_key = $2`, userID, key), &a)
	return &a, mapErr(err)
}

// ActivationReleaseIdempotencyKey frees a key whose activation is older than
// `before`: the key's 24 h window is over and it may name a new activation.
func (s *Store) ActivationReleaseIdempotencyKey(ctx context.Context, userID, key string, before time.Time) error {
	s.uncacheActivation("")
	_, err := s.writer().ExecContext(ctx, `UPDATE activations SET idempotency_key = NULL
		WHERE user_id = $1 AND idempotency_key = $2 AND created_at < $3`, userID, key, s.ts(before))
	return err
}

// ActivationClaim moves a queued activation to running for workerID and
// returns it; ok is false when it is not queued (already run, cancelled, or
// claimed by another worker), which makes duplicate jobs harmless.
func (s *Store) ActivationClaim(ctx context.Context, id, workerID string, now time.Time) (*Activation, bool, error) {
	claimed, err := s.ActivationClaimMany(ctx, []string{id}, workerID, now)
	if err != nil || len(claimed) == 0 {
		return nil, false, err
	}
	return claimed[0], true, nil
}

// ActivationClaimMany is ActivationClaim of several activations in one
// statement: those still queued move to running for workerID, and are
// returned (in no particular order); the others are left as they are.
func (s *Store) ActivationClaimMany(ctx context.Context, ids []string, workerID string, now time.Time) ([]*Activation, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(ids)+2)
	args = append(args, workerID, s.ts(now))
	for _, id := range ids {
		args = append(args, id)
	}
	return s.claimWhere(ctx, "", placeholders(3, len(ids)), args)
}

// ActivationClaimNext claims for workerID, in one statement, up to n
// queued activations and returns them (in no particular order). Users
// take turns: each user's first (by priority, then creation order) before
// anyone's second, among the oldest queued rows (a window of a few times
// n), so that one user's thousands queued do not hold another's one back.
// The activations of the users in skip (those who hold their share of a
// worker) are left out. On PostgreSQL rows another worker's transaction
// holds are passed over, not waited for, and only the rows taken are
// locked, not the window: a second worker claiming at the same moment
// takes the next ones. One statement where a pick and then a claim were
// two round trips in the dispatcher's transaction.
func (s *Store) ActivationClaimNext(ctx context.Context, n int, skip []string, workerID string, now time.Time) ([]*Activation, error) {
	if n <= 0 {
		return nil, nil
	}
	args := make([]any, 0, len(skip)+4)
	args = append(args, workerID, s.ts(now), n, 4*n+32)
	notSkipped := ""
	if len(skip) > 0 {
		notSkipped = ` AND user_id NOT IN (` + placeholders(5, len(skip)) + `)`
		for _, u := range skip {
			args = append(args, u)
		}
	}
	return s.claimWhere(ctx, `WITH window_ AS (
			SELECT id, user_id, priority FROM activations
			WHERE status = 'queued'`+notSkipped+`
			ORDER BY priority, id LIMIT $4
		), turns AS (
			SELECT id, priority, row_number() OVER (PARTITION BY user_id ORDER BY priority, id) AS turn FROM window_
		), picked AS (
			SELECT a.id FROM activations a JOIN turns t ON t.id = a.id
			WHERE a.status = 'queued'
			ORDER BY t.turn, t.priority, t.id LIMIT $3`+s.d.skipLocked("a")+`
		) `, `SELECT id FROM picked`, args)
}

// claimWhere moves the queued activations among ids (a list or a query,
// after with) to running for worker $1 at $2 and returns them.
func (s *Store) claimWhere(ctx context.Context, with, ids string, args []any) ([]*Activation, error) {
	claimed, err := queryAll(ctx, s.writer(), scanActivation, with+`UPDATE activations
		SET status = 'running', started_at = $2, worker_id = $1, attempt = attempt + 1
		WHERE id IN (`+ids+`) AND status = 'queued'
		RETURNING `+s.activationColumns(), args...)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make([]*Activation, len(claimed))
	for i := range claimed {
		out[i] = &claimed[i]
		// Dropped before the commit, as changingActivation asks: the ids
		// a query picks are known only now.
		s.changingActivation(out[i].ID)
		s.cacheActivation(out[i])
	}
	return out, nil
}

// Outcome is how an activation ended.
type Outcome struct {
	Status      string // completed or failed
	OutputData  json.RawMessage
	Error       string
	CompletedAt time.Time
	// Logs are what the run wrote ([{ts, level, message}]), kept with
	// the end when there are any (custom agents).
	Logs          json.RawMessage
	LogsTruncated bool
}

// Applied is a as o leaves it, but for what the database computes
// (duration_ms): what the event of its end says of it.
func (o Outcome) Applied(a Activation) *Activation {
	a.Status, a.CompletedAt, a.Waiting = o.Status, &o.CompletedAt, nil
	output, errText := o.values()
	a.OutputData, a.Error = nil, nil
	if out, ok := output.(string); ok {
		a.OutputData = json.RawMessage(out)
	}
	if e, ok := errText.(string); ok {
		a.Error = &e
	}
	return &a
}

// values are the output_data and error columns of o.
func (o *Outcome) values() (output, errText any) {
	if o.Status == StatusCompleted {
		return jsonOr(o.OutputData, "{}"), nil
	}
	return nil, o.Error
}

// ActivationFinish records the end of a running activation and returns it;
// ok is false when it was no longer running (cancelled meanwhile, or handed
// to another worker), in which case nothing changes.
func (s *Store) ActivationFinish(ctx context.Context, id string, o Outcome) (*Activation, bool, error) {
	s.changingActivation(id)
	output, errText := o.values()
	var a Activation
	err := scanActivation(s.writer().QueryRowContext(ctx, s.finishSQL("status = 'running'"),
		id, o.Status, output, errText, s.ts(o.CompletedAt)), &a)
	if err == nil && len(o.Logs) > 0 && a.AppID != "" {
		err = s.RunLogsPut(ctx, &RunLogs{RunID: a.ID, UserID: a.UserID, AppID: a.AppID, Logs: o.Logs,
			Truncated: o.LogsTruncated, CreatedAt: o.CompletedAt})
	}
	return s.changed(&a, err)
}

// ActivationFinishRecorded is ActivationFinish with the end's events (one
// user's, given their seqs) and the run's usage records, all written only
// if the activation was still running. On PostgreSQL, outside a
// transaction, without logs and with at most one usage record, it is one
// statement: the update, the usage and the events as WITH queries, where
// BEGIN, three statements and COMMIT were a round trip each. Elsewhere it
// is a transaction of those.
func (s *Store) ActivationFinishRecorded(ctx context.Context, id string, o Outcome, rows []*EventRow, usage ...*UsageRecord) (*Activation, bool, error) {
	if !s.finishesInOneStatement(o, rows, usage) {
		var a *Activation
		var ok bool
		err := s.InTx(ctx, s.finishRecordedTx(ctx, id, o, rows, usage, &a, &ok))
		if err != nil {
			return nil, false, err
		}
		return a, ok, nil
	}
	if err := oneUser(rows); err != nil {
		return nil, false, err
	}
	s.changingActivation(id)
	output, errText := o.values()
	lead := statement{`fin AS (` + s.finishSQL("status = 'running'") + `)`, []any{id, o.Status, output, errText, s.ts(o.CompletedAt)}}
	if len(usage) == 1 {
		lead.sql += ", " + usageIfFinished
		lead.args = append(lead.args, s.usageArgs(usage[0])...)
	}
	with, args := eventsInsert(s, rows, 0, lead, finished)
	var a Activation
	var prefix int64
	err := scanActivation(withColumns{s.writer().QueryRowContext(ctx, with+` SELECT fin.*, x.prefix FROM fin, x`, args...), []any{&prefix}}, &a)
	switch {
	case err == nil:
		numberEvents(rows, prefix, 0)
	case err != sql.ErrNoRows:
		return nil, false, mapErr(err)
	}
	return s.changed(&a, err)
}

// ActivationFinishRecordedThen is ActivationFinishRecorded for a caller
// that need not wait for the commit (InTxThen): then gets what it would
// return. Where that is one statement (PostgreSQL), it runs on the
// caller's goroutine.
func (s *Store) ActivationFinishRecordedThen(ctx context.Context, id string, o Outcome, rows []*EventRow, usage []*UsageRecord, then func(*Activation, bool, error)) {
	if s.finishesInOneStatement(o, rows, usage) {
		then(s.ActivationFinishRecorded(ctx, id, o, rows, usage...))
		return
	}
	var a *Activation
	var ok bool
	s.InTxThen(ctx, s.finishRecordedTx(ctx, id, o, rows, usage, &a, &ok), func(err error) {
		if err != nil {
			then(nil, false, err)
			return
		}
		then(a, ok, nil)
	})
}

// finishesInOneStatement reports whether ActivationFinishRecorded is the
// one statement of its doc.
func (s *Store) finishesInOneStatement(o Outcome, rows []*EventRow, usage []*UsageRecord) bool {
	return s.tx == nil && s.d.writableCTE() && len(o.Logs) == 0 && len(rows) > 0 && len(usage) <= 1
}

// finishRecordedTx is ActivationFinishRecorded as a transaction, which sets
// *a and *ok as ActivationFinish returns them.
func (s *Store) finishRecordedTx(ctx context.Context, id string, o Outcome, rows []*EventRow, usage []*UsageRecord, a **Activation, ok *bool) func(tx *Store) error {
	return func(tx *Store) error {
		var err error
		if *a, *ok, err = tx.ActivationFinish(ctx, id, o); err != nil || !*ok {
			return err
		}
		return tx.EventAppendWithUsage(ctx, rows, usage...)
	}
}

// finished is ActivationFinishRecorded's condition of its writes: the
// update (fin) found the run still running. usageIfFinished is its usage
// writes, their arguments after the update's five; made once, as the
// statement is every run's end.
const finished = "EXISTS (SELECT 1 FROM fin)"

var usageIfFinished = usageWritesIf(finished, 5)

// ActivationCancel fails a queued or running activation with reason and
// flags it so a worker still running it stops.
func (s *Store) ActivationCancel(ctx context.Context, id, reason string, now time.Time) (*Activation, bool, error) {
	s.changingActivation(id)
	var a Activation
	err := scanActivation(s.writer().QueryRowContext(ctx,
		strings.Replace(s.finishSQL("status IN ('queued', 'running')"), "SET ", "SET cancel_requested = TRUE, ", 1),
		id, StatusFailed, nil, reason, s.ts(now)), &a)
	return s.changed(&a, err)
}

// changed is the result of an UPDATE … RETURNING of one activation: ok is
// false when no row matched.
func (s *Store) changed(a *Activation, err error) (*Activation, bool, error) {
	if err == sql.ErrNoRows {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	s.cacheActivation(a)
	return a, true, nil
}

// finishSQL ends an activation whose status matches cond. duration_ms is
// computed from started_at in the database's own time arithmetic. An
// ended run waits for nothing.
func (s *Store) finishSQL(cond string) string {
	duration := `CASE WHEN started_at IS NULL THEN NULL ELSE ` + s.d.millisBetween("started_at", "$5") + ` END`
	return `UPDATE activations SET status = $2, output_data = $3, error = $4, completed_at = $5, waiting = NULL, duration_ms = ` + duration + `
		WHERE id = $1 AND ` + cond + ` RETURNING ` + s.activationColumns()
}

// ActivationRequeue hands a running activation back to the queue (its
// worker stopped before finishing it). A waiting one is left alone: it
// holds no worker, and its answer resumes it.
func (s *Store) ActivationRequeue(ctx context.Context, id string) (bool, error) {
	s.uncacheActivation(id)
	res, err := s.writer().ExecContext(ctx, `UPDATE activations SET status = 'queued', started_at = NULL, worker_id = NULL
		WHERE id = $1 AND status = 'running' AND waiting IS NULL`, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ActivationWait marks an activation running on workerID as waiting: it
// keeps status running with waiting set, and worker_id NULL so it holds no
// worker slot and no reaper hands it back. ok is false when it is not
// running on workerID (cancelled meanwhile, or taken from a dead worker).
func (s *Store) ActivationWait(ctx context.Context, id, workerID string, waiting json.RawMessage) (bool, error) {
	s.changingActivation(id)
	if len(waiting) == 0 {
		return false, errors.New("store: ActivationWait needs the waiting object")
	}
	var a Activation
	err := scanActivation(s.writer().QueryRowContext(ctx, `UPDATE activations SET waiting = $3, worker_id = NULL
		WHERE id = $1 AND status = 'running' AND worker_id = $2 AND waiting IS NULL
		RETURNING `+s.activationColumns(), id, workerID, string(waiting)), &a)
	_, ok, err := s.changed(&a, err)
	return ok, err
}

// ActivationResume clears waiting of a running activation that waits (its
// answer came): it stays running with no worker until one takes it over
// (ActivationTakeOver). ok is false when it does not wait.
func (s *Store) ActivationResume(ctx context.Context, id string) (bool, error) {
	s.changingActivation(id)
	var a Activation
	err := scanActivation(s.writer().QueryRowContext(ctx, `UPDATE activations SET waiting = NULL
		WHERE id = $1 AND status = 'running' AND waiting IS NOT NULL
		RETURNING `+s.activationColumns(), id), &a)
	_, ok, err := s.changed(&a, err)
	return ok, err
}

// ActivationTakeOver gives a running activation that no worker holds and
// that waits for nothing (resumed) to workerID, and returns it. ok is false
// otherwise (another worker took it, it waits again, it ended), which
// makes duplicate resume jobs harmless. Unlike ActivationClaim it keeps
// attempt and started_at: a resumed run goes on, it does not start again.
func (s *Store) ActivationTakeOver(ctx context.Context, id, workerID string) (*Activation, bool, error) {
	s.changingActivation(id)
	var a Activation
	err := scanActivation(s.writer().QueryRowContext(ctx, `UPDATE activations SET worker_id = $2
		WHERE id = $1 AND status = 'running' AND worker_id IS NULL AND waiting IS NULL
		RETURNING `+s.activationColumns(), id, workerID), &a)
	return s.changed(&a, err)
}

// cancelBatch bounds the ids of one ActivationsCancelled statement, well
// under both databases' limits on parameters.
const cancelBatch = 1000

// ActivationsCancelled returns which of ids have had a cancel requested:
// a process's poll of the runs it has in flight, one statement for a
// thousand of them instead of one each.
func (s *Store) ActivationsCancelled(ctx context.Context, ids []string) ([]string, error) {
	var out []string
	for len(ids) > 0 {
		n := min(len(ids), cancelBatch)
		args := make([]any, n)
		for i, id := range ids[:n] {
			args[i] = id
		}
		ids = ids[n:]
		got, err := s.strings(ctx, `SELECT id FROM activations WHERE cancel_requested = TRUE AND id IN (`+placeholders(1, n)+`)`, args...)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// ActivationEndedLocked reports whether activation id has ended and its
// state, locking its row on PostgreSQL until the commit: an end committing
// meanwhile waits, then sees what this transaction wrote.
func (s *Store) ActivationEndedLocked(ctx context.Context, id string) (*Activation, bool, error) {
	var a Activation
	err := scanActivation(s.writer().QueryRowContext(ctx, `SELECT `+s.activationColumns()+` FROM activations WHERE id = $1`+s.d.forUpdate(), id), &a)
	if err != nil {
		return nil, false, mapErr(err)
	}
	return &a, a.Status == StatusCompleted || a.Status == StatusFailed, nil
}

// ActivationFilter selects activations of one user.
type ActivationFilter struct {
	UserID   string
	AgentID  string
	AppID    string
	Statuses []string
	ChatID   string
	Limit    int
	Offset   int
}

// ActivationList returns a page of activations, newest first, and the total.
func (s *Store) ActivationList(ctx context.Context, f ActivationFilter) ([]Activation, int, error) {
	where := []string{"user_id = $1"}
	args := []any{f.UserID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if f.AgentID != "" {
		add("agent_id = ?", f.AgentID)
	}
	if f.AppID != "" {
		add("app_id = ?", f.AppID)
	}
	if f.ChatID != "" {
		add("chat_id = ?", f.ChatID)
	}
	if len(f.Statuses) > 0 {
		var ph, alts []string
		for _, st := range f.Statuses {
			if st == StatusWaiting {
				alts = append(alts, "(status = 'running' AND waiting IS NOT NULL)")
				continue
			}
			args = append(args, st)
			ph = append(ph, "$"+strconv.Itoa(len(args)))
		}
		if len(ph) > 0 {
			alts = append(alts, "status IN ("+strings.Join(ph, ", ")+")")
		}
		where = append(where, "("+strings.Join(alts, " OR ")+")")
	}
	cond := strings.Join(where, " AND ")
	total, err := s.count(ctx, `SELECT COUNT(*) FROM activations WHERE `+cond, args...)
	if err != nil {
		return nil, 0, err
	}
	args = append(args, f.Limit, f.Offset)
	list, err := queryPage(ctx, s, scanActivation, `SELECT `+s.activationColumns()+` FROM activations WHERE `+cond+
		` ORDER BY created_at DESC, id DESC LIMIT $`+strconv.Itoa(len(args)-1)+` OFFSET $`+strconv.Itoa(len(args)), args...)
	return list, total, err
}

// ActivationLastInput returns the input of the user's latest activation
// of an agent (nil before its first): an activate form starts from it.
// The agent's index (agent_id, created_at) finds it without a scan.
func (s *Store) ActivationLastInput(ctx context.Context, userID, agentID string) (json.RawMessage, error) {
	var input []byte
	err := s.reader().QueryRowContext(ctx, `SELECT input_data FROM activations WHERE agent_id = $1 AND user_id = $2
		ORDER BY created_at DESC, id DESC LIMIT 1`, agentID, userID).Scan(&input)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return json.RawMessage(input), err
}

// ActivationChatHistory returns the completed turns of a chat with an agent
// created before `before`, oldest first, at most limit of the latest ones.
func (s *Store) ActivationChatHistory(ctx context.Context, userID, agentID, chatID string, before time.Time, limit int) ([]Activation, error) {
	turns, err := queryAll(ctx, s.reader(), scanActivation, s.chatHistorySQL(), agentID, chatID, userID, s.ts(before), limit)
	slices.Reverse(turns) // the latest turns, read newest first, sent oldest first
	return turns, err
}

// chatHistorySQL is ActivationChatHistory's statement. The chat's index
// finds its turns at once; SQLite took the user's index instead (both
// serve the order) and walked the user's history back to the chat's
// turns: 52 ms a turn with 50,000 runs of the user, where PostgreSQL
// took 0.26 ms.
func (s *Store) chatHistorySQL() string {
	return `SELECT ` + s.activationColumns() + ` FROM ` + s.d.indexedBy("activations", "activations_chat") + `
		WHERE agent_id = $1 AND chat_id = $2 AND user_id = $3 AND status = 'completed' AND created_at < $4
		ORDER BY created_at DESC LIMIT $5`
}

// ActivationsRunningOn lists the ids of activations a worker is running.
func (s *Store) ActivationsRunningOn(ctx context.Context, workerID string) ([]string, error) {
	return s.strings(ctx, `SELECT id FROM activations WHERE status = 'running' AND worker_id = $1`, workerID)
}

// ActivationCountsSince counts activations that ended at or after `since`,
// by status (worker throughput).
func (s *Store) ActivationCountsSince(ctx context.Context, since time.Time) (completed, failed int, err error) {
	err = s.reader().QueryRowContext(ctx, `SELECT
		COALESCE(SUM(CASE WHEN status = 'completed' THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END), 0)
		FROM activations WHERE completed_at >= $1`, s.ts(since)).Scan(&completed, &failed)
	return completed, failed, err
}

// ActivationDepth counts queued and running activations of all users,
// each through its partial index (activations_queued, activations_running),
// which hold only those rows.
func (s *Store) ActivationDepth(ctx context.Context) (queued, running int, err error) {
	err = s.reader().QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM activations WHERE status = 'queued'),
		(SELECT COUNT(*) FROM activations WHERE status = 'running')`).Scan(&queued, &running)
	return queued, running, err
}
