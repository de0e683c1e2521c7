package server

import "github.com/fieldrelay/fieldrelay/engine/model"

// consoleRoutes lists the routes of the console area: the change stream, the embedded web
// console and the redirects to it.
func (s *Server) consoleRoutes() []route {
	return []route{
		{method: "GET", path: "/v1/stream", perm: model.PermEventsRead, h: s.handleStream},
		{method: "GET", path: "/", perm: public, h: s.handleRootRedirect},
		{method: "GET", path: "/console", perm: public, h: s.handleConsoleRedirect},
		{method: "GET", path: "/console/*file", perm: public, h: s.handleConsole},
	}
}
