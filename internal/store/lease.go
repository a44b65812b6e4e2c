package store

import (
	"context"
	"errors"
	"time"
)

// leaseTables are the tables whose rows TakeLease may lease: each has
// lease_owner and lease_until columns.
var leaseTables = map[string]bool{"connections": true}

// TakeLease makes owner the holder of row id of table until `until`, if
// nobody holds it or its holder's lease ended before now; it reports
// whether owner holds it now. It is one conditional UPDATE, atomic on both
// databases (SQLite's single writer, PostgreSQL's row lock), so across
// every process exactly one caller wins, and it holds no transaction open:
// the holder does its slow work (a provider call) between TakeLease and
// writing its outcome, which ends the lease. A holder that dies leaves a
// lease that ends at `until`.
func (s *Store) TakeLease(ctx context.Context, table, id, owner string, now, until time.Time) (bool, error) {
	if !leaseTables[table] {
		return false, errors.New("store: no lease on table " + table)
	}
	res, err := s.writer().ExecContext(ctx, `UPDATE `+table+` SET lease_owner = $2, lease_until = $3
		WHERE id = $1 AND (lease_owner = '' OR lease_until IS NULL OR lease_until < $4)`, id, owner, s.ts(until), s.ts(now))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ReleaseLease ends owner's lease on row id of table, if it still holds it.
func (s *Store) ReleaseLease(ctx context.Context, table, id, owner string) error {
	if !leaseTables[table] {
		return errors.New("store: no lease on table " + table)
	}
	_, err := s.writer().ExecContext(ctx, `UPDATE `+table+` SET lease_owner = '', lease_until = NULL
		WHERE id = $1 AND lease_owner = $2`, id, owner)
	return err
}
