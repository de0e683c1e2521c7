package engine

import (
	"context"
	"slices"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/stream"
	"github.com/fieldrelay/fieldrelay/engine/teams"
	"github.com/fieldrelay/fieldrelay/engine/zones"
)

// Names of the stream's changes that are not webhook names (the webhook names of
// WebhookNames are sent as they are).
const (
	// StreamEventClosed: an event closed by the end of its mission; the Event record.
	StreamEventClosed = "event.closed"
	// StreamTeamUpdated: a team's status, members or a member's position changed; the Team.
	StreamTeamUpdated = teams.StreamUpdated
	// StreamZoneConnectivity: a zone's reported link state; the ConnectivityStatus.
	StreamZoneConnectivity = zones.StreamConnectivity
	// StreamMissionTerminalConflict: a mission recorded both COMPLETED and FAILED (on two
	// nodes); the Mission, with its terminal_conflict.
	StreamMissionTerminalConflict = "mission.terminal_conflict"
)

// StreamRingSize is how many changes of a tenant the broker keeps for Last-Event-ID
// resume (engine/stream).
const StreamRingSize = stream.RingSize

// Broker fans a tenant's committed changes out to its stream subscribers (stream.Broker).
type Broker = stream.Broker

// Subscription receives the changes of one tenant (stream.Subscription).
type Subscription = stream.Subscription

// NewBroker returns a broker keeping ring changes per tenant (StreamRingSize when ≤ 0).
func NewBroker(ring int) *Broker { return stream.NewBroker(ring) }

// Stream returns the engine's broker.
func (e *Engine) Stream() *Broker { return e.pub.Broker() }

// publish sends a change of a tenant to its stream once tx commits (stream.Publisher).
func (e *Engine) publish(tx model.TxCommit, tenantID, name string, perm model.Permission, teamID string, payload any) error {
	return e.pub.Publish(tx, tenantID, name, perm, teamID, payload)
}

// streamScope says who may see a webhook-named change, and of which team it is.
func streamScope(name string, payload any) (model.Permission, string) {
	switch p := payload.(type) {
	case *model.Event, model.Event:
		return model.PermEventsRead, ""
	case *model.Dispatch:
		return model.PermMissionsView, p.TeamID
	case model.MissionStatusUpdate:
		return model.PermMissionsView, p.TeamID
	case reinforced:
		return model.PermMissionsView, p.TeamID
	case model.MissionMessageNote:
		return model.PermMissionsView, p.TeamID
	}
	switch {
	case strings.HasPrefix(name, "event."):
		return model.PermEventsRead, ""
	case strings.HasPrefix(name, "mission."), strings.HasPrefix(name, "team."), strings.HasPrefix(name, "dispatch."):
		return model.PermMissionsView, ""
	}
	// sync.* and names to come: what the caller sees of events.
	return model.PermEventsRead, ""
}

// StreamViewer decides which changes a caller of GET /v1/stream may see: the change's
// permission, and for a field operator (see teamRestricted) only the mission and team
// changes of its own teams.
type StreamViewer struct {
	p          model.Principal
	restricted bool
	own        []string
}

// StreamViewer returns the viewer of p, reading p's teams. p needs events:read.
func (e *Engine) StreamViewer(ctx context.Context, p model.Principal) (*StreamViewer, error) {
	if err := p.Require(model.PermEventsRead); err != nil {
		return nil, err
	}
	v := &StreamViewer{p: p, restricted: teamRestricted(p)}
	return v, v.Refresh(ctx, e)
}

// Refresh reads the viewer's own teams again (after a team changed its members).
func (v *StreamViewer) Refresh(ctx context.Context, e *Engine) error {
	if !v.restricted {
		return nil
	}
	return e.store.View(ctx, func(tx model.Tx) (err error) {
		v.own, err = ownTeamIDs(tx, v.p.TenantID, v.p.UserID)
		return err
	})
}

// Sees reports whether the viewer may see c.
func (v *StreamViewer) Sees(c *model.Change) bool {
	if v.restricted && c.TeamID != "" && slices.Contains(v.own, c.TeamID) {
		return true
	}
	if !v.p.Can(c.Perm) {
		return false
	}
	// A field operator sees no mission of another team, nor a mission alert of no team.
	return !(v.restricted && c.Perm == model.PermMissionsView)
}
