package server

import "github.com/fieldrelay/fieldrelay/engine/model"

// smsRoutes lists the routes of this area.
func (s *Server) smsRoutes() []route {
	return []route{
		// The SMS gateway's key only: sms:inbound is a key scope no role holds, so a JWT
		// is forbidden here whatever its role.
		{method: "POST", path: "/v1/sms/inbound", perm: model.PermSMSInbound, h: s.handleSMSInbound},
	}
}
