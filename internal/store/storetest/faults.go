// Package storetest injects faults beneath the store for tests: what a
// database does when it refuses a write, in the real database.
package storetest

import (
	"context"
	"testing"

	"github.com/agentplatform/agentplatform/internal/store"
)

// FailFinishes makes the database refuse, with a trigger, every update that
// ends an activation whose column col contains marker: a store error while
// recording an end, injected in the real database. drop removes it.
func FailFinishes(t testing.TB, s *store.Store, col, marker string) (drop func()) {
	t.Helper()
	ctx := context.Background()
	db := s.DB()
	name := "test_fail_finish_" + col
	stmts := []string{`CREATE TRIGGER ` + name + ` BEFORE UPDATE OF status ON activations
		WHEN NEW.status IN ('completed', 'failed') AND CAST(NEW.` + col + ` AS TEXT) LIKE '%` + marker + `%'
		BEGIN SELECT RAISE(ABORT, 'injected fault: cannot record this end'); END`}
	dropSQL := `DROP TRIGGER ` + name
	if s.Dialect() == store.Postgres {
		stmts = []string{
			`CREATE FUNCTION ` + name + `() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN RAISE EXCEPTION 'injected fault: cannot record this end'; END $$`,
			`CREATE TRIGGER ` + name + ` BEFORE UPDATE ON activations FOR EACH ROW
				WHEN (NEW.status IN ('completed', 'failed') AND CAST(NEW.` + col + ` AS TEXT) LIKE '%` + marker + `%')
				EXECUTE FUNCTION ` + name + `()`,
		}
		dropSQL = `DROP TRIGGER ` + name + ` ON activations`
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("install the fault: %v", err)
		}
	}
	return func() {
		if _, err := db.ExecContext(ctx, dropSQL); err != nil {
			t.Fatalf("drop the fault: %v", err)
		}
	}
}
