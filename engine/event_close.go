package engine

import (
	"context"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// CloseEvent closes an incident by hand with a disposition (POST /v1/events/{id}/close;
// missions:manage; docs/decisions/0173-incident-disposition.md): the event is closed (it
// leaves the open events and cannot be dispatched), its record keeps the disposition, its
// alerts close, and event.closed goes to the stream. Teams still on it are left as they
// are: standing them down is each mission's move (FAILED with feedback stood_down), which
// the console offers in the same dialog. A closed event is 409 event_closed; a replica is
// closed where it came from (409 conflict).
func (e *Engine) CloseEvent(ctx context.Context, p model.Principal, id string, in model.CloseEventInput, w *model.Write) (*model.Event, error) {
	if err := p.Require(model.PermMissionsManage); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return write(ctx, e, p.TenantID, w, func(tx model.Tx) (*model.Event, error) {
		ev, err := tx.Event(p.TenantID, id)
		if err != nil {
			return nil, err
		}
		if ev.Status == model.EventClosed {
			return nil, model.Errorf(model.KindEventClosed, "event %s is closed", ev.ID)
		}
		if ev.Origin != nil {
			return nil, model.Errorf(model.KindConflict, "event %s is replicated from node %s: it is closed there", ev.ID, *ev.Origin)
		}
		now := model.At(e.clock.Now())
		ev.Status, ev.ClosedAt, ev.UpdatedAt = model.EventClosed, &now, now
		ev.Disposition = &model.Disposition{Code: in.Disposition, Note: in.Note, ClosedBy: p.ActorID(), At: now}
		if err := putEvent(tx, p.TenantID, ev); err != nil {
			return nil, err
		}
		if err := e.closeEventAlerts(tx, p.TenantID, ev.ID); err != nil {
			return nil, err
		}
		return ev, e.publish(tx, p.TenantID, StreamEventClosed, model.PermEventsRead, "", ev)
	})
}
