package server

import "github.com/fieldrelay/fieldrelay/engine/model"

// upstreamRoutes lists the routes of upstream sync: the settings and the state of the
// caller's tenant's link.
func (s *Server) upstreamRoutes() []route {
	return []route{
		{method: "PUT", path: "/v1/tenant/upstream", perm: model.PermTenantAdmin, h: s.handlePutUpstream},
		{method: "GET", path: "/v1/tenant/upstream", perm: model.PermTenantAdmin, h: s.handleGetUpstream},
		{method: "GET", path: "/v1/tenant/upstream/status", perm: model.PermTenantAdmin, h: s.handleUpstreamStatus},
	}
}
