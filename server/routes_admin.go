package server

// adminRoutes lists the routes of this area.
func (s *Server) adminRoutes() []route {
	return nil
}
