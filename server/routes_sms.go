package server

// smsRoutes lists the routes of this area.
func (s *Server) smsRoutes() []route {
	return nil
}
