package activation

// Running is how many runs this process tracks, for the tests.
func (s *Service) Running() int { return s.runningCount() }
