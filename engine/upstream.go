package engine

import (
	"github.com/fieldrelay/fieldrelay/engine/upstream"
)

// The use cases of upstream sync are upstream.Links', embedded in the Engine; the
// capability itself is engine/upstream.

// Upstream link states of GET /v1/tenant/upstream/status.
const (
	UpstreamUnconfigured = upstream.StateUnconfigured
	UpstreamPaused       = upstream.StatePaused
	UpstreamIdle         = upstream.StateIdle
	UpstreamPushing      = upstream.StatePushing
	UpstreamDown         = upstream.StateDown
)

// PlatformNode is the platform of a device that is another fieldrelay node: the only
// devices whose upstream_* items are accepted. Its hardware_id is the node's id.
const PlatformNode = upstream.PlatformNode

// CheckUpstreamURL validates an upstream's base URL (upstream.CheckURL).
func CheckUpstreamURL(raw string) (string, error) { return upstream.CheckURL(raw) }
