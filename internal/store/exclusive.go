package store

import (
	"errors"
	"fmt"
)

var errLocked = errors.New("locked")

// Exclusive makes this process the only server of a SQLite database until
// Close: the group commit (commit.go) and the activation and agent caches
// (actcache.go, agentcache.go) rely on every write going through this
// process, so a second serve or worker process on the same file must not
// start. It is a no-op on PostgreSQL, where processes share nothing but
// the database. One-off commands (migrate, user create) do not call it.
func (s *Store) Exclusive() error {
	if s.d.multiNode() || s.file == "" || s.file == ":memory:" {
		return nil
	}
	f, err := lockFile(s.file + ".lock")
	if errors.Is(err, errLocked) {
		return fmt.Errorf("store: %s is in use by another agentplatform process; one process serves a SQLite database (use PostgreSQL, AP_DATABASE_URL, to run several)", s.file)
	}
	if err != nil {
		return fmt.Errorf("store: lock %s: %w", s.file, err)
	}
	s.lock = f
	return nil
}

// Sole reports whether this process holds its SQLite database through
// Exclusive: then no other process serves it, and any other worker the
// database still lists is a predecessor that died without deregistering
// (its runs need no heartbeat's age to be known orphaned).
func (s *Store) Sole() bool { return s.lock != nil }
