package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// setDown changes the fake upstream's downstream log: its end, and whether its answers
// stop short of it.
func (f *fakeUpstream) setDown(end int64, stuck bool) {
	f.mu.Lock()
	f.down, f.downEnd, f.downStuck = true, end, stuck
	f.mu.Unlock()
}

// TestWatch_DownstreamLagging: a site whose link is up but whose pulls stop short of the
// central log's end (a stuck checkpoint) raises downstream_lagging once it has not been
// caught up for 2 minutes (by the pull that finds it, or the watch), naming how far
// behind it is; the pull that catches up ends it. A link that is down raises
// upstream_down, not this; a paused link closes it; pulls that stop coming are found by
// the watch.
func TestWatch_DownstreamLagging(t *testing.T) {
	ctx := context.Background()
	n := newUpNode(t, model.UpstreamOptions{})
	up := newFakeUpstream(t, upKey)
	up.setDown(0, false)
	n.setUpstream(t, model.UpstreamInput{URL: up.srv.URL, APIKey: upKey})
	round := func() {
		t.Helper()
		n.e.RunUpstream(ctx)
		if err := n.e.Watch(ctx); err != nil {
			t.Fatal(err)
		}
	}
	lagging := func() []model.Alert { t.Helper(); return n.openAlerts(t, model.AlertDownstreamLagging) }

	round() // the snapshot of an empty log: caught up
	caught := n.status(t).Downstream.CaughtUpAt
	if caught == nil || !caught.Equal(n.clock.Now()) || len(lagging()) != 0 {
		t.Fatalf("after the snapshot: caught up at %v, alerts %+v", caught, lagging())
	}

	up.setDown(5, true)
	n.clock.Advance(model.DefaultLagAlert - time.Second)
	round()
	if st := n.status(t).Downstream; !st.Lagging || st.Behind != 5 || !st.CaughtUpAt.Equal(caught.Time) || len(lagging()) != 0 {
		t.Fatalf("behind for less than %s: %+v, alerts %+v", model.DefaultLagAlert, st, lagging())
	}
	n.clock.Advance(time.Second)
	round()
	got := lagging()
	if len(got) != 1 || got[0].Priority != model.PriorityHigh || !strings.Contains(got[0].Message, "5 changes behind") ||
		!strings.Contains(got[0].Message, "2m0s") {
		t.Fatalf("behind for %s while up: %+v", model.DefaultLagAlert, got)
	}
	round()
	if again := lagging(); len(again) != 1 || again[0].ID != got[0].ID {
		t.Fatalf("one alert a link: %+v", again)
	}

	up.setDown(5, false)
	n.clock.Advance(time.Second)
	round()
	if st := n.status(t).Downstream; st.Lagging || st.Cursor != 5 || len(lagging()) != 0 {
		t.Fatalf("caught up: %+v, alerts %+v", st, lagging())
	}

	// Down: upstream_down says it, the lag alert is not raised.
	up.setDown(9, true)
	up.set("down")
	n.clock.Advance(2 * model.DefaultLagAlert)
	round()
	if len(lagging()) != 0 || len(n.openAlerts(t, model.AlertUpstreamDown)) != 1 {
		t.Fatalf("down: lagging %+v, upstream_down %+v", lagging(), n.openAlerts(t, model.AlertUpstreamDown))
	}
	// Up again but still stuck: raised; paused: closed.
	up.set("")
	n.clock.Advance(time.Minute)
	round()
	if len(lagging()) != 1 || len(n.openAlerts(t, model.AlertUpstreamDown)) != 0 {
		t.Fatalf("up and stuck: lagging %+v", lagging())
	}
	mustDo(t, func() error {
		_, err := n.e.AdminPauseUpstream(ctx, "acme", true)
		return err
	})
	round()
	if len(lagging()) != 0 {
		t.Fatalf("paused: %+v", lagging())
	}
	// Resumed, and the pulls no longer answer (404): the push goes through, nothing is
	// applied, and the watch alone finds that the site has not caught up for long.
	up.mu.Lock()
	up.down = false
	up.mu.Unlock()
	mustDo(t, func() error {
		_, err := n.e.AdminPauseUpstream(ctx, "acme", false)
		return err
	})
	n.e.RunUpstream(ctx)
	if st := n.status(t); st.State == engine.UpstreamDown || len(lagging()) != 0 {
		t.Fatalf("resumed, before the watch: %+v, %+v", st, lagging())
	}
	if err := n.e.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if len(lagging()) != 1 {
		t.Fatal("the watch did not raise downstream_lagging for pulls that stopped")
	}
}
