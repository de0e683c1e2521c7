package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

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
