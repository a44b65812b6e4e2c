package store

import "context"

// QueuedTxs is how many transactions wait for the SQLite committer.
func (s *Store) QueuedTxs() int {
	if s.commits == nil {
		return 0
	}
	return len(s.commits.reqs)
}

// ExecOnWriter runs q on the SQLite writer connection, the one the
// committer's transactions use: what a test needs to plant TEMP objects
// (per connection) those transactions will meet.
func (s *Store) ExecOnWriter(ctx context.Context, q string) error {
	_, err := s.write.ExecContext(ctx, q)
	return err
}
