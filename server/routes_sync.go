package server

// syncRoutes lists the routes of this area.
func (s *Server) syncRoutes() []route {
	return nil
}
