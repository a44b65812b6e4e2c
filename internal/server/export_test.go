package server

import "github.com/agentplatform/agentplatform/internal/lifecycle"

// WrapServices makes Run and Start wrap each service with wrap, so that a
// test can watch them or make one fail.
func (s *Server) WrapServices(wrap func(name string, svc lifecycle.Service) lifecycle.Service) {
	s.wrapService = wrap
}
