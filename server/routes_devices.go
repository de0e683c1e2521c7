package server

// deviceRoutes lists the routes of this area. Each admits any authenticated caller: the
// engine asks for the permission, which depends on the device (a field operator registers,
// syncs and reads the devices of its own teams).
func (s *Server) deviceRoutes() []route {
	return []route{
		{method: "POST", path: "/v1/devices/register", perm: authenticated, h: s.handleRegisterDevice},
		{method: "POST", path: "/v1/devices/sync", perm: authenticated, h: s.handleSyncDevice},
		{method: "GET", path: "/v1/devices/:id/queue", perm: authenticated, h: s.handleDeviceQueue},
	}
}
