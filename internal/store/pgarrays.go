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
	switch value.(type) {
	case *pq.StringArray, *pq.Int64Array, *pq.Int32Array, *pq.ByteaArray, *pq.BoolArray, *pq.Float64Array, *pq.Float32Array:
	case pq.GenericArray:
	default:
		return nil, nil, false
	}
	return &pqArrayPlan{}, pqArraySlice(value), true
}

// pqArraySlice is the slice a lib/pq array wraps.
func pqArraySlice(value any) any {
	switch v := value.(type) {
	case *pq.StringArray:
		return []string(*v)
	case *pq.Int64Array:
		return []int64(*v)
	case *pq.Int32Array:
		return []int32(*v)
	case *pq.ByteaArray:
		return [][]byte(*v)
	case *pq.BoolArray:
		return []bool(*v)
	case *pq.Float64Array:
		return []float64(*v)
	case *pq.Float32Array:
		return []float32(*v)
	case pq.GenericArray:
		return v.A
	}
	return value
}

type pqArrayPlan struct{ next pgtype.EncodePlan }

func (p *pqArrayPlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *pqArrayPlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(pqArraySlice(value), buf)
}
