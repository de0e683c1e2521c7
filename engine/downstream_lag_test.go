package engine_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// setDown changes the fake upstream's downstream log: its end, and whether its answers
// stop short of it; the pulls it holds are answered.
func (f *fakeUpstream) setDown(end int64, stuck bool) {
	f.mu.Lock()
	f.down, f.downEnd, f.downStuck = true, end, stuck
	if f.downNews != nil {
		close(f.downNews)
	}
	f.downNews = make(chan struct{})
	f.mu.Unlock()
}

// serveDown answers POST /v1/devices/downstream as a central node does, of a log of
// downEnd changes that carry no record: a pull at the end that asks to wait is held
// until setDown or the wait's end.
func (f *fakeUpstream) serveDown(w http.ResponseWriter, r *http.Request) {
	var in model.DownPullInput
	derr := json.NewDecoder(r.Body).Decode(&in)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Header.Get("x-svc-api-key") != f.key:
		answer(w, 401, map[string]string{"error": "unauthorized", "message": "invalid API key"})
		return
	case f.mode == "down":
		answer(w, 503, map[string]string{"error": "unavailable", "message": "down for the test"})
		return
	case !f.down:
		answer(w, 404, map[string]string{"error": "not_found", "message": "no such route"})
		return
	case derr != nil || in.DeviceID != f.deviceID:
		answer(w, 400, map[string]string{"error": "validation_error", "message": "bad pull"})
		return
	}
	f.downPulls++
	if in.Wait > 0 {
		f.downWaits++
	}
	if in.Wait > 0 && !in.Snapshot && !f.downStuck && in.After == f.downEnd {
		news := f.downNews
		f.mu.Unlock()
		select {
		case <-news:
		case <-time.After(time.Duration(in.Wait) * time.Second):
		case <-r.Context().Done():
		}
		f.mu.Lock()
	}
	through := f.downEnd
	if f.downStuck {
		through = in.After
	}
	answer(w, 200, model.DownPull{NodeID: "central-fake", Snapshot: in.Snapshot, Through: through, End: f.downEnd,
		Changes: []model.DownItem{}})
}

// TestDownstream_LongPollLoop: the pusher's loop keeps one pull held at the central node
// while the link is up (docs/decisions/0211-downstream-long-poll.md): a change of the
// central log comes down within a fraction of the 2 s a pull every PullEvery took; the
// upstream down ends the held pull and the link is recorded down, then up again; the loop
// ends at once with a pull held.
func TestDownstream_LongPollLoop(t *testing.T) {
	n := newUpNode(t, model.UpstreamOptions{RetryMax: time.Second, Timeout: 3 * time.Second})
	up := newFakeUpstream(t, upKey)
	up.setDown(0, false)
	n.setUpstream(t, model.UpstreamInput{URL: up.srv.URL, APIKey: upKey})
	ctx, cancel := context.WithCancel(context.Background())
	if err := n.e.StartScheduler(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			n.e.StopScheduler()
		}
	}
	t.Cleanup(stop)
	waitFor := func(what string, limit time.Duration, cond func(d *model.DownStatus) bool) {
		t.Helper()
		for deadline := time.Now().Add(limit); ; time.Sleep(10 * time.Millisecond) {
			if d := n.status(t).Downstream; d != nil && cond(d) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: %+v", what, n.status(t))
			}
		}
	}
	waitFor("the snapshot", 5*time.Second, func(d *model.DownStatus) bool { return d.Snapshots == 1 })
	for end := int64(1); end <= 3; end++ {
		time.Sleep(50 * time.Millisecond) // a pull is held by now
		began := time.Now()
		up.setDown(end, false)
		waitFor("a change", 5*time.Second, func(d *model.DownStatus) bool { return d.Cursor == end })
		if took := time.Since(began); took > time.Second {
			t.Fatalf("change %d came down %s after it was made", end, took)
		}
	}
	up.mu.Lock()
	waits := up.downWaits
	up.mu.Unlock()
	if waits < 3 {
		t.Fatalf("%d pulls asked to wait", waits)
	}

	up.set("down")
	up.setDown(4, false) // the held pull ends; the next attempts fail
	for deadline := time.Now().Add(5 * time.Second); n.status(t).State != engine.UpstreamDown; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			up.mu.Lock()
			pulls := up.downPulls
			up.mu.Unlock()
			t.Fatalf("the link is not down: %+v, %+v, %d pulls\n%s", n.status(t), n.status(t).Downstream, pulls, n.logs.String())
		}
	}
	up.set("")
	up.setDown(5, false)
	n.clock.Advance(2 * time.Second) // the retry is due (the backoff runs on the engine's clock)
	waitFor("up again", 10*time.Second, func(d *model.DownStatus) bool { return d.Cursor == 5 })
	time.Sleep(50 * time.Millisecond)
	began := time.Now()
	stop()
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("the scheduler stopped %s after it was asked, with a pull held", took)
	}
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
