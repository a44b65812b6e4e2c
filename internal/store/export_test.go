package store

import (
	"context"
	"log/slog"

	"github.com/riverqueue/river/rivermigrate"
)

// QueuedTxs is how many transactions wait for the SQLite committer.
func (s *Store) QueuedTxs() int {
	if s.commits == nil {
		return 0
	}
	return len(s.commits.reqs)
}

// MigrateRiverTo migrates like Migrate but stops River's migrations at
// version, to build a database as an older River left it.
func (s *Store) MigrateRiverTo(ctx context.Context, log *slog.Logger, version int) error {
	return s.migrate(ctx, log, &rivermigrate.MigrateOpts{TargetVersion: version})
}
