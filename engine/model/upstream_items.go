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
)
