package server

// syncRoutes lists the routes of this area. Both check their permission in the engine:
// the batch wants an API key (a user token is api_key_required, not forbidden), the
// status either of two permissions.
func (s *Server) syncRoutes() []route {
	return []route{
		{method: "POST", path: "/v1/sync/batch", perm: authenticated, h: s.handleSyncBatch},
		{method: "GET", path: "/v1/sync/status", perm: authenticated, h: s.handleSyncStatus},
	}
}
