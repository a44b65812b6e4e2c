package store

// QueuedTxs is how many transactions wait for the SQLite committer.
func (s *Store) QueuedTxs() int {
	if s.commits == nil {
		return 0
	}
	return len(s.commits.reqs)
}
