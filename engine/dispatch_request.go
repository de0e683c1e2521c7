package engine

import (
	"context"
	"errors"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// Dispatch requests (docs/decisions/0197-dispatch-requests.md): on a central node, a
// dispatch of a team routed to a site (site_id) to an event replicated from that site is
// not made here but asked of the site: the request goes down the site's downstream log,
// the site runs its own dispatch (dispatchRequested), and its answer comes back up.

// DispatchOrRequest is POST /v1/teams/dispatch: DispatchTeam, or, for a site's event and
// a team routed to that site, a *model.DispatchRequest (202).
func (e *Engine) DispatchOrRequest(ctx context.Context, p model.Principal, in model.DispatchInput, w *model.Write) (any, error) {
	if err := p.Require(model.PermDispatchAssign); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return write(ctx, e, p.TenantID, w, func(tx model.Tx) (any, error) {
		r, err := e.requestDispatch(tx, p, in)
		if r != nil || err != nil {
			return r, err
		}
		return e.dispatchTeam(tx, p, in)
	})
}

// requestDispatch makes a dispatch request when the event is a site's replica and the
// team is routed to that site; nil, nil otherwise (a dispatch made here, or refused as
// before).
func (e *Engine) requestDispatch(tx model.Tx, p model.Principal, in model.DispatchInput) (*model.DispatchRequest, error) {
	ev, err := tx.Event(p.TenantID, in.EventID)
	if err != nil {
		return nil, err
	}
	team, err := tx.Team(p.TenantID, in.TeamID)
	if err != nil {
		return nil, err
	}
	if ev.Origin == nil && team.SiteID != nil && team.Origin == nil {
		// The team's status is its site's (docs/decisions/0202-team-status-up.md): only
		// the site dispatches it, to its own events.
		return nil, model.Errorf(model.KindConflict, "team %s is at site %s: dispatch it to an event of that site",
			model.Quote(team.Name), *team.SiteID)
	}
	if ev.Origin == nil || team.SiteID == nil || team.Origin != nil {
		return nil, nil
	}
	site, err := tx.Device(p.TenantID, *team.SiteID)
	if err != nil && !model.IsKind(err, model.KindNotFound) {
		return nil, err
	}
	if site == nil || site.HardwareID == nil || *site.HardwareID != *ev.Origin {
		return nil, model.Errorf(model.KindConflict, "event %s is at node %s and team %s is not routed to that site: "+
			"dispatch a team of the event's site", ev.ID, *ev.Origin, model.Quote(team.Name))
	}
	if ev.Status == model.EventClosed {
		return nil, model.Errorf(model.KindEventClosed, "event %s is closed", ev.ID)
	}
	now := model.At(e.clock.Now())
	r := &model.DispatchRequest{ID: e.ids.at(now.Time), EventID: ev.ID, TeamID: team.ID, Notes: in.Notes,
		Status: model.RequestRequested, SiteID: site.ID, RequestedBy: p.ActorID(), RequestedAt: now}
	if err := tx.PutDispatchRequest(p.TenantID, r); err != nil {
		return nil, err
	}
	writes.Changed(tx, p.TenantID, model.DownRequest, r.ID)
	return withWait(r, now.Time), nil
}

// DispatchRequest returns a dispatch request (GET /v1/dispatch-requests/:id) and how long
// it waited. It needs events:read.
func (e *Engine) DispatchRequest(ctx context.Context, p model.Principal, id string) (*model.DispatchRequest, error) {
	if err := p.Require(model.PermEventsRead); err != nil {
		return nil, err
	}
	var r *model.DispatchRequest
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		r, err = tx.DispatchRequest(p.TenantID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return withWait(r, e.clock.Now()), nil
}

// withWait fills how long r waited: until the site decided, or until now.
func withWait(r *model.DispatchRequest, now time.Time) *model.DispatchRequest {
	end := now
	if r.DecidedAt != nil {
		end = r.DecidedAt.Time
	}
	r.WaitedSeconds = max(end.Sub(r.RequestedAt.Time), 0).Seconds()
	return r
}

// dispatchRequested runs, at the site within the transaction that applies it, a dispatch
// the central node asked for: the site's own checks and dispatch (availability,
// notification, ledger), the dispatch carrying the request's id. A refusal is the
// request refused with the check's error code; any other error fails the transaction.
// The request is stored as decided and goes back up.
func (e *Engine) dispatchRequested(tx model.Tx, tenantID string, r *model.DispatchRequest) error {
	if _, err := tx.DispatchRequest(tenantID, r.ID); err == nil {
		return nil // decided already
	} else if !model.IsKind(err, model.KindNotFound) {
		return err
	}
	now := model.At(e.clock.Now())
	refuse := func(err error) error {
		var me *model.Error
		if !errors.As(err, &me) || me.Kind == model.KindInternal || me.Kind == model.KindUnavailable {
			return err
		}
		reason, msg := string(me.Kind), me.Msg
		r.Status, r.Reason, r.Message = model.RequestRefused, &reason, &msg
		return nil
	}
	ev, err := tx.Event(tenantID, r.EventID)
	var team *model.Team
	if err == nil {
		team, err = tx.Team(tenantID, r.TeamID)
	}
	if err == nil {
		err = dispatchable(ev, team, false)
	}
	if err == nil {
		var d *model.Dispatch
		if d, _, err = e.dispatch(tx, tenantID, ev, team, dispatchOrder{actor: r.RequestedBy, source: MoveSourceAPI,
			notes: r.Notes, requestID: &r.ID}); err == nil {
			r.Status, r.MissionID = model.RequestDispatched, &d.MissionID
		}
	}
	if err != nil {
		if err := refuse(err); err != nil {
			return err
		}
	}
	r.DecidedAt, r.WaitedSeconds = &now, 0
	if err := tx.PutDispatchRequest(tenantID, r); err != nil {
		return err
	}
	writes.Changed(tx, tenantID, model.ChangeDispatchRequest, r.ID)
	return nil
}
