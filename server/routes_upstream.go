package server

import "github.com/fieldrelay/fieldrelay/engine"

// upstreamRoutes lists the routes of upstream sync: the settings and the state of the
// caller's tenant's link.
func (s *Server) upstreamRoutes() []route {
	return []route{
		{method: "PUT", path: "/v1/tenant/upstream", perm: engine.PermTenantAdmin, h: s.handlePutUpstream},
		{method: "GET", path: "/v1/tenant/upstream", perm: engine.PermTenantAdmin, h: s.handleGetUpstream},
		{method: "GET", path: "/v1/tenant/upstream/status", perm: engine.PermTenantAdmin, h: s.handleUpstreamStatus},
	}
}
