package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/lib/pq"
)

// River's database/sql driver passes its arrays as lib/pq's types (every
// job inserted is 13 of them): pgx only knows them as driver.Valuer, so
// each was written out as PostgreSQL's text form by pq and parsed back by
// pgx to send it in binary, a fifth of an API node's CPU under load
// (serve --no-worker). encodePQArrays hands pgx the slice inside instead,
// which it encodes directly; the values sent are the same.
func encodePQArrays(_ context.Context, c *pgx.Conn) error {
	m := c.TypeMap()
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{unwrapPQArray}, m.TryWrapEncodePlanFuncs...)
	return nil
}

// unwrapPQArray is a pgx encode-plan wrapper for lib/pq's array types.
func unwrapPQArray(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	slice, ok := pqArraySlice(value)
	if !ok {
		return nil, nil, false
	}
	return &pqArrayPlan{}, slice, true
}

// pqArraySlice is the slice a lib/pq array wraps; ok is false for any
// other value.
func pqArraySlice(value any) (slice any, ok bool) {
	switch v := value.(type) {
	case *pq.StringArray:
		return []string(*v), true
	case *pq.Int64Array:
		return []int64(*v), true
	case *pq.Int32Array:
		return []int32(*v), true
	case *pq.ByteaArray:
		return [][]byte(*v), true
	case *pq.BoolArray:
		return []bool(*v), true
	case *pq.Float64Array:
		return []float64(*v), true
	case *pq.Float32Array:
		return []float32(*v), true
	case pq.GenericArray:
		return v.A, true
	}
	return nil, false
}

type pqArrayPlan struct{ next pgtype.EncodePlan }

func (p *pqArrayPlan) SetNext(next pgtype.EncodePlan) { p.next = next }

// Encode encodes the slice inside value: the plan was made for its type,
// which pqArraySlice knows.
func (p *pqArrayPlan) Encode(value any, buf []byte) ([]byte, error) {
	slice, _ := pqArraySlice(value)
	return p.next.Encode(slice, buf)
}
