package store

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Record is one record of an app's data model.
type Record struct {
	ID        string
	ModelID   string
	AppID     string
	UserID    string
	Data      json.RawMessage
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

const recordColumns = `id, model_id, app_id, user_id, data, created_by, created_at, updated_at`

// recordSelect is recordColumns as read: data as JSON text.
func (s *Store) recordSelect() string {
	return strings.Replace(recordColumns, "data", s.d.jsonLoad("data"), 1)
}

func scanRecord(row interface{ Scan(...any) error }, r *Record) error {
	var data []byte
	err := row.Scan(&r.ID, &r.ModelID, &r.AppID, &r.UserID, &data, &r.CreatedBy, &r.CreatedAt, &r.UpdatedAt)
	r.Data = data
	return err
}

// RecordGet returns the user's record id of model, or ErrNotFound.
func (s *Store) RecordGet(ctx context.Context, userID, modelID, id string) (*Record, error) {
	var r Record
	err := scanRecord(s.reader().QueryRowContext(ctx, `SELECT `+s.recordSelect()+` FROM app_records WHERE id = $1 AND model_id = $2 AND user_id = $3`,
		id, modelID, userID), &r)
	return &r, mapErr(err)
}

// RecordCount is how many records of model the user has: the count a
// list's total_count gives, without reading a page (on the model's index).
func (s *Store) RecordCount(ctx context.Context, userID, modelID string) (int, error) {
	return s.count(ctx, `SELECT COUNT(*) FROM app_records WHERE model_id = $1 AND user_id = $2`, modelID, userID)
}

// How a field's JSON value compares: as text, as a number or as a boolean.
const (
	CompareText   = "text"
	CompareNumber = "number"
	CompareBool   = "bool"
)

// RecordFilter keeps records whose Field equals Value (a string, a float64
// or a bool, per Compare).
type RecordFilter struct {
	Field   string
	Compare string
	Value   any
}

// RecordQuery lists a model's records. Field names are checked against
// the model by the caller; they reach SQL only as bound JSON paths.
type RecordQuery struct {
	UserID, ModelID string
	Filters         []RecordFilter
	// SortField is a data field, or "" for created_at; SortCompare says
	// how it orders.
	SortField, SortCompare string
	Desc                   bool
	Limit, Offset          int
	// MaxBytes bounds the page's records' data: no more records are read
	// once it is passed (the first always comes); 0 is no bound.
	MaxBytes int
}

// RecordList returns a page of q's records and how many match in all. The
// filters and the order run in the database, on the JSON's fields.
func (s *Store) RecordList(ctx context.Context, q RecordQuery) ([]Record, int, error) {
	args := []any{q.ModelID, q.UserID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	where := []string{"model_id = $1", "user_id = $2"}
	for _, f := range q.Filters {
		where = append(where, s.d.jsonField(arg(s.d.jsonPath(f.Field)), f.Compare)+" = "+arg(s.d.jsonValue(f.Value, f.Compare)))
	}
	cond := strings.Join(where, " AND ")
	condArgs := len(args)
	budget := s.pageBudget()
	if q.MaxBytes > 0 {
		budget = min(budget, q.MaxBytes)
	}
	dir := " ASC"
	if q.Desc {
		dir = " DESC"
	}
	count := func() (int, error) {
		var total int
		err := s.reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM app_records WHERE `+cond, args[:condArgs]...).Scan(&total)
		return total, err
	}
	if q.SortField == "" {
		// The count and the page apart: a count beside each row (a window)
		// would make the database sort every match instead of keeping the
		// top LIMIT+OFFSET, which the created_at index gives in order.
		total, err := count()
		if err != nil {
			return nil, 0, err
		}
		rows, err := queryPageWithin(ctx, s, budget, scanRecord, `SELECT `+s.recordSelect()+` FROM app_records WHERE `+cond+
			` ORDER BY created_at`+dir+`, id`+dir+` LIMIT `+arg(q.Limit)+` OFFSET `+arg(q.Offset), args...)
		return rows, total, err
	}
	// A data field's order reads every match anyway: one pass keeps each
	// match's id and key, which give the count and the page's ids, and
	// only the page's records are read whole (twice as fast as a count
	// and a page, each reading every match). Records without the field
	// sort after the others either way.
	key := s.d.jsonField(arg(s.d.jsonPath(q.SortField)), q.SortCompare)
	var total int
	rows, err := queryPageWithin(ctx, s, budget, func(row interface{ Scan(...any) error }, r *Record) error {
		return scanRecord(countedRow{row, &total}, r)
	}, `WITH m AS MATERIALIZED (SELECT id, `+key+` AS k FROM app_records WHERE `+cond+`), `+
		`p AS (SELECT id, k FROM m ORDER BY k`+dir+` NULLS LAST, id`+dir+` LIMIT `+arg(q.Limit)+` OFFSET `+arg(q.Offset)+`) `+
		`SELECT (SELECT COUNT(*) FROM m), `+s.recordSelectOf("a")+` FROM p JOIN app_records a ON a.id = p.id `+
		`ORDER BY p.k`+dir+` NULLS LAST, p.id`+dir, args...)
	if err == nil && len(rows) == 0 {
		// No row to carry the count: none match, or the page is past them.
		total, err = count()
	}
	return rows, total, err
}

// countedRow scans a row's first column, a count, into n and the others
// into the destinations given.
type countedRow struct {
	row interface{ Scan(...any) error }
	n   *int
}

func (c countedRow) Scan(dest ...any) error { return c.row.Scan(append([]any{c.n}, dest...)...) }

// recordSelectOf is recordSelect for the table named t in the query.
func (s *Store) recordSelectOf(t string) string {
	cols := strings.Split(recordColumns, ", ")
	for i, c := range cols {
		cols[i] = t + "." + c
		if c == "data" {
			cols[i] = s.d.jsonLoad(t + ".data")
		}
	}
	return strings.Join(cols, ", ")
}

// RecordScan calls fn with the data of every record of model (of every
// user), one row at a time: what a check over all of them reads without
// holding them all.
func (s *Store) RecordScan(ctx context.Context, modelID string, fn func(data []byte) error) error {
	rows, err := s.reader().QueryContext(ctx, `SELECT `+s.d.jsonLoad("data")+` FROM app_records WHERE model_id = $1`, modelID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return err
		}
		if err := fn(data); err != nil {
			return err
		}
	}
	return rows.Err()
}
