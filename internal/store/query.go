package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
)

// queryAll runs a SELECT and scans every row with scan. The answer is never
// nil, so an empty list encodes as [] rather than null.
func queryAll[T any](ctx context.Context, q querier, scan func(row interface{ Scan(...any) error }, v *T) error, query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		var v T
		if err := scan(rows, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// DefaultPageBytes is the budget of a list page before SetPageBytes.
const DefaultPageBytes = 4 << 20

// SetPageBytes sets how many bytes of items one list page and one replay
// batch read (AP_LIST_PAGE_BYTES): large items make a page shorter than
// its limit. Call it before the store is used.
func (s *Store) SetPageBytes(n int) { s.pageBytes = n }

func (s *Store) pageBudget() int {
	if s.pageBytes > 0 {
		return s.pageBytes
	}
	return DefaultPageBytes
}

// queryPage is queryAll for a page of items that may be large (inputs,
// outputs, errors, records): it stops reading rows once the items read
// hold the store's page budget, counted as the bytes of their text and
// binary columns as stored. It always keeps the first item, and never
// one that would take the page past the budget, so a page holds at most
// the budget or one item. The caller's has_more then comes from the
// total: offset + len(items) < total.
func queryPage[T any](ctx context.Context, s *Store, scan func(row interface{ Scan(...any) error }, v *T) error, query string, args ...any) ([]T, error) {
	return queryPageWithin(ctx, s, s.pageBudget(), scan, query, args...)
}

// queryPageWithin is queryPage with a budget of its own (a page that a
// host call answers JavaScript with is smaller than an API page).
func queryPageWithin[T any](ctx context.Context, s *Store, budget int, scan func(row interface{ Scan(...any) error }, v *T) error, query string, args ...any) ([]T, error) {
	rows, err := s.reader().QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	used := 0
	for rows.Next() {
		var v T
		sized := &sizedRow{row: rows}
		if err := scan(sized, &v); err != nil {
			return nil, err
		}
		if len(out) > 0 && used+sized.size > budget {
			return out, nil
		}
		used += sized.size
		out = append(out, v)
	}
	return out, rows.Err()
}

// sizedRow measures what a row's Scan read into text and binary values.
type sizedRow struct {
	row  interface{ Scan(...any) error }
	size int
}

func (r *sizedRow) Scan(dest ...any) error {
	if err := r.row.Scan(dest...); err != nil {
		return err
	}
	for _, d := range dest {
		switch v := d.(type) {
		case *[]byte:
			r.size += len(*v)
		case *string:
			r.size += len(*v)
		case *sql.NullString:
			r.size += len(v.String)
		case *json.RawMessage:
			r.size += len(*v)
		}
	}
	return nil
}

// count runs a SELECT COUNT(*).
func (s *Store) count(ctx context.Context, query string, args ...any) (int, error) {
	var n int
	err := s.reader().QueryRowContext(ctx, query, args...).Scan(&n)
	return n, err
}

// tuples is the VALUES list of a multi-row INSERT: rows tuples of width
// parameters numbered from $1, "($1, $2), ($3, $4)" (placeholders).
func tuples(rows, width int) string {
	var b strings.Builder
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + placeholders(1+i*width, width) + ")")
	}
	return b.String()
}
