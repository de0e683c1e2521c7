package server

// deviceRoutes lists the routes of this area.
func (s *Server) deviceRoutes() []route {
	return nil
}
