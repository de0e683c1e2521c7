package model

// Kinds of the items an edge node pushes to its central node (upstream sync): the records
// of the edge as they stand there, replicated under their own ids.
const (
	ItemUpstreamEvent    = "upstream_event"
	ItemUpstreamDispatch = "upstream_dispatch"
	ItemUpstreamMission  = "upstream_mission"
	// ItemUpstreamDispatchRequest is a site's decision on a dispatch request of the
	// central node (docs/decisions/0197-dispatch-requests.md).
	ItemUpstreamDispatchRequest = "upstream_dispatch_request"
	// ItemUpstreamTeamStatus is the status of a central node's team at the site it is
	// routed to: the site's operational state (docs/decisions/0202-team-status-up.md).
	ItemUpstreamTeamStatus = "upstream_team_status"
	// ItemUpstreamSiteZone is a zone a site created itself, or its removal
	// (docs/decisions/0204-site-zone-collisions.md).
	ItemUpstreamSiteZone = "upstream_site_zone"
)

// TeamStatusReport is the payload of an upstream_team_status item: the status of a copy
// of a central team as the site holds it.
type TeamStatusReport struct {
	TeamID      string `json:"team_id"`
	Status      string `json:"status"`
	StatusSince *Time  `json:"status_since"`
}
