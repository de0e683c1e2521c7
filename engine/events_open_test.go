package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/alerts"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestEvents_OpenFollowsMissions: GET /v1/events?open=true follows the ways the use cases
// close an event (docs/decisions/0170-open-events.md): a completion closes it, a failure
// only when it was the event's last active mission; a dispatched event stays open.
func TestEvents_OpenFollowsMissions(t *testing.T) {
	f := newLifecycleFix(t)
	var evs []*model.Event
	for range 3 {
		evs = append(evs, f.event(t))
		f.clock.Advance(time.Millisecond) // oldest first: ids of distinct milliseconds
	}
	done, twice, waiting := evs[0], evs[1], evs[2]
	open := func() string {
		t.Helper()
		evs, _, err := f.e.Events(context.Background(), f.sup, model.EventFilter{Open: true}, model.Page{Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, ev := range evs {
			ids = append(ids, ev.ID)
		}
		return strings.Join(ids, ",")
	}
	all := strings.Join([]string{done.ID, twice.ID, waiting.ID}, ",")
	m1 := f.mission(t, f.teamA, done)
	if got := open(); got != all {
		t.Fatalf("open after a dispatch = %s; want %s (a dispatched event stays open)", got, all)
	}
	for _, s := range []string{model.MissionAck, model.MissionOnRoute, model.MissionOnSite, model.MissionCompleted} {
		f.mustMove(t, f.sup, m1.ID, s)
	}
	if got, want := open(), twice.ID+","+waiting.ID; got != want {
		t.Fatalf("open after a completion = %s; want %s", got, want)
	}
	mA, mB := f.mission(t, f.teamA, twice), f.mission(t, f.teamB, twice)
	f.mustMove(t, f.sup, mA.ID, model.MissionFailed)
	if got, want := open(), twice.ID+","+waiting.ID; got != want {
		t.Fatalf("open after a failure with a backup still active = %s; want %s", got, want)
	}
	f.mustMove(t, f.sup, mB.ID, model.MissionFailed)
	if got := open(); got != waiting.ID {
		t.Fatalf("open after the last failure = %s; want %s", got, waiting.ID)
	}
	if _, _, err := f.e.Events(context.Background(), f.sup, model.EventFilter{Query: "--"}, model.Page{Limit: 5}); !model.IsKind(err, model.KindValidation) {
		t.Fatalf("q without a word: %v; want a validation error", err)
	}
}

// TestEvents_CloseWithDisposition: a supervisor closes an incident by hand; it leaves the
// open events, its record keeps the disposition, its alert closes, and it cannot be closed
// or dispatched again (docs/decisions/0173-incident-disposition.md).
func TestEvents_CloseWithDisposition(t *testing.T) {
	f := newLifecycleFix(t)
	ev := f.event(t) // high
	ctx := context.Background()
	MustUpdate(t, f.e, func(tx model.Tx) error {
		_, err := alerts.Raise(f.e.Book, tx, f.tenant.ID, model.AlertInput{Kind: model.AlertEventUndispatched, Subject: ev.ID, EventID: ev.ID})
		return err
	})
	for _, tc := range []struct {
		in   model.CloseEventInput
		p    model.Principal
		kind model.Kind
	}{
		{model.CloseEventInput{Disposition: "solved"}, f.sup, model.KindValidation},
		{model.CloseEventInput{Disposition: model.DispositionOther, Note: "  "}, f.sup, model.KindValidation},
		{model.CloseEventInput{Disposition: model.DispositionResolved}, f.opA, model.KindForbidden},
	} {
		if _, err := f.e.CloseEvent(ctx, tc.p, ev.ID, tc.in, nil); !model.IsKind(err, tc.kind) {
			t.Fatalf("CloseEvent(%+v) = %v; want %s", tc.in, err, tc.kind)
		}
	}
	got, err := f.e.CloseEvent(ctx, f.sup, ev.ID, model.CloseEventInput{Disposition: model.DispositionFalseAlarm, Note: " barbecue next door "}, nil)
	if err != nil || got.Status != model.EventClosed || got.ClosedAt == nil || got.Disposition == nil ||
		got.Disposition.Code != model.DispositionFalseAlarm || got.Disposition.Note != "barbecue next door" || got.Disposition.ClosedBy != f.sup.UserID {
		t.Fatalf("CloseEvent = %+v, %v", got, err)
	}
	_, _, readEvent := f.read(t)
	if stored := readEvent(ev.ID); stored.Disposition == nil || stored.Disposition.Code != model.DispositionFalseAlarm {
		t.Fatalf("the stored event = %+v; want its disposition", stored)
	}
	open, _, err := f.e.Events(ctx, f.sup, model.EventFilter{Open: true}, model.Page{Limit: 10})
	if err != nil || len(open) != 0 {
		t.Fatalf("open events after the close = %d, %v; want none", len(open), err)
	}
	left, _, err := f.e.Alerts(ctx, f.sup, model.AlertFilter{}, model.Page{Limit: 10})
	if err != nil || len(left) != 0 {
		t.Fatalf("open alerts after the close = %+v, %v; want none", left, err)
	}
	if _, err := f.e.CloseEvent(ctx, f.sup, ev.ID, model.CloseEventInput{Disposition: model.DispositionResolved}, nil); !model.IsKind(err, model.KindEventClosed) {
		t.Fatalf("closing twice: %v; want event_closed", err)
	}
	if _, err := f.e.DispatchTeam(ctx, f.sup, model.DispatchInput{EventID: ev.ID, TeamID: f.teamA.ID}, nil); !model.IsKind(err, model.KindEventClosed) {
		t.Fatalf("dispatching a closed incident: %v; want event_closed", err)
	}
}

// TestAlerts_ClosedByAck: an alert whose cause never ends by itself (a terminal conflict)
// closes at its acknowledgement; any other stays open, acknowledged, until its cause ends.
func TestAlerts_ClosedByAck(t *testing.T) {
	f := newLifecycleFix(t)
	ev := f.event(t)
	ctx := context.Background()
	var conflict, undispatched *model.Alert
	MustUpdate(t, f.e, func(tx model.Tx) (err error) {
		if conflict, err = alerts.Raise(f.e.Book, tx, f.tenant.ID, model.AlertInput{Kind: model.AlertTerminalConflict, Subject: ev.ID, EventID: ev.ID}); err != nil {
			return err
		}
		undispatched, err = alerts.Raise(f.e.Book, tx, f.tenant.ID, model.AlertInput{Kind: model.AlertEventUndispatched, Subject: ev.ID, EventID: ev.ID})
		return err
	})
	for _, tc := range []struct {
		a      *model.Alert
		status string
	}{{conflict, model.AlertClosed}, {undispatched, model.AlertOpen}} {
		got, err := f.e.Book.Ack(ctx, f.sup, tc.a.ID, nil)
		if err != nil || got.AckedAt == nil || got.Status != tc.status || (tc.status == model.AlertClosed) != (got.ClosedAt != nil) {
			t.Fatalf("%s acknowledged: %+v, %v; want %s", tc.a.Kind, got, err, tc.status)
		}
	}
}
