package server

import "github.com/fieldrelay/fieldrelay/engine/model"

// adminRoutes lists the routes of this area: usage, billing, API keys and /metrics.
func (s *Server) adminRoutes() []route {
	return []route{
		{method: "GET", path: "/metrics", perm: public, h: s.handleMetrics},
		{method: "GET", path: "/v1/tenant/usage", perm: model.PermUsageRead, h: s.handleUsage},
		{method: "GET", path: "/v1/tenant/billing", perm: model.PermTenantAdmin, h: s.handleBilling},
		{method: "GET", path: "/v1/tenant/api-keys", perm: model.PermAPIKeysManage, h: s.handleListAPIKeys},
		{method: "POST", path: "/v1/tenant/api-keys", perm: model.PermAPIKeysManage, h: s.handleCreateAPIKey},
		{method: "POST", path: "/v1/tenant/api-keys/rotate", perm: model.PermAPIKeysManage, h: s.handleRotateAPIKey},
		{method: "DELETE", path: "/v1/tenant/api-keys/:id", perm: model.PermAPIKeysManage, h: s.handleRevokeAPIKey},
	}
}
