package server

import "time"

// RouteInfo is one route of the route table as the tests see it: its method and path,
// whether it is public, and whether its answer carries a secret. The authorization matrix
// reads only the method and path (its expectations come from its own table, never from the
// route's permission).
type RouteInfo struct {
	Method, Path string
	Public       bool
	Secret       bool
	// Perms are the permissions of which the route table wants one (none: public, or
	// any authenticated caller).
	Perms []string
}

// Routes lists the route table of s.
func Routes(s *Server) []RouteInfo {
	var out []RouteInfo
	for _, r := range s.routeTable() {
		ri := RouteInfo{Method: r.method, Path: r.path, Public: r.perm == public, Secret: r.secret}
		if r.perm != public && r.perm != authenticated {
			ri.Perms = append([]string{r.perm}, r.orPerm...)
		}
		out = append(out, ri)
	}
	return out
}

// MaxLingering is how many refused connections the node may still be closing at once
// (conns.go).
const MaxLingering = maxLingering

// SetMinIdleToClose sets how long a connection must have been idle before a new one over a
// cap may take its place (minIdleToClose), before s serves.
func SetMinIdleToClose(s *Server, d time.Duration) { s.conns.minIdle = d }
