package store

import "context"

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

// queryBudget is queryAll that stops reading rows once the kept rows' size
// (as size measures it) would pass budget: the rest of the answer is never
// read into memory. The first row is always kept, so that a page always
// moves on; the row that did not fit was read, and is dropped.
func queryBudget[T any](ctx context.Context, q querier, scan func(row interface{ Scan(...any) error }, v *T) error, size func(*T) int,
	budget int, query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	used := 0
	for rows.Next() {
		var v T
		if err := scan(rows, &v); err != nil {
			return nil, err
		}
		used += size(&v)
		if used > budget && len(out) > 0 {
			break
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// count runs a SELECT COUNT(*).
func (s *Store) count(ctx context.Context, query string, args ...any) (int, error) {
	var n int
	err := s.reader().QueryRowContext(ctx, query, args...).Scan(&n)
	return n, err
}
