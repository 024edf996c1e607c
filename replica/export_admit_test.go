package replica

// OpenConns counts the connections a server has admitted and not
// released (tests wait on it instead of sleeping).
func OpenConns(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lim.conns
}
