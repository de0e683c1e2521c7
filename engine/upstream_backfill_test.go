package engine_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// history makes, on a node without an upstream yet, k events a millisecond apart and a
// mission (and its dispatch) for every fourth, each taken through its moves to
// completed but the last, only acknowledged: a site's past. It returns the missions.
func (n *upNode) history(t *testing.T, k int) []string {
	t.Helper()
	var missions []string
	for i := range k {
		n.clock.Advance(time.Millisecond)
		ev := n.post(t, "low", "north").EventID
		if i%4 != 0 {
			continue
		}
		if len(missions) > 0 {
			n.complete(t, missions[len(missions)-1])
		}
		d, err := n.dispatch(t, model.DispatchInput{EventID: ev, TeamID: n.alpha.ID})
		if err != nil {
			t.Fatal(err)
		}
		missions = append(missions, d.MissionID)
		n.move(t, d.MissionID, model.MissionAck)
	}
	return missions
}

// complete takes an acknowledged mission to completed.
func (n *upNode) complete(t *testing.T, mission string) {
	t.Helper()
	for _, to := range []string{model.MissionOnRoute, model.MissionOnSite, model.MissionCompleted} {
		n.move(t, mission, to)
	}
}

func (n *upNode) move(t *testing.T, mission, to string) {
	t.Helper()
	n.clock.Advance(time.Millisecond)
	mustDo(t, func() error {
		_, err := n.e.UpdateMissionStatus(context.Background(), n.p, mission, model.MissionStatusInput{Status: to},
			engine.MoveSourceAPI, nil, nil)
		return err
	})
}

// local lists the node's records of a kind, by id.
func (n *upNode) local(t *testing.T, kind string) []string {
	t.Helper()
	var ids []string
	if err := n.e.View(context.Background(), func(tx model.Tx) (err error) {
		ids, err = tx.RecordIDs(n.p.TenantID, kind, "", 1<<20)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// checkWhole checks that the upstream holds every event, dispatch and mission of the node
// as it stands, that no sequence reached it twice or is missing, and that it applied
// every dispatch and mission after their event (and a mission after its dispatch).
func checkWhole(t *testing.T, n *upNode, up *fakeUpstream) {
	t.Helper()
	received, records, applied := up.snapshot()
	if end := n.logEnd(t); applied != end || int64(len(received)) != end {
		t.Errorf("the upstream applied through %d and received %d sequences; the log ends at %d", applied, len(received), end)
	}
	for seq, k := range received {
		if k != 1 {
			t.Errorf("sequence %d reached the upstream %d times", seq, k)
		}
	}
	for _, id := range n.local(t, model.ChangeEvent) {
		var ev model.Event
		if raw := records[model.ChangeEvent+"/"+id]; raw == nil || json.Unmarshal(raw, &ev) != nil ||
			ev.Status != n.event(t, id).Status {
			t.Errorf("event %s upstream: %s", id, raw)
		}
	}
	for _, id := range n.local(t, model.ChangeDispatch) {
		if records[model.ChangeDispatch+"/"+id] == nil {
			t.Errorf("dispatch %s is missing upstream", id)
		}
	}
	for _, id := range n.local(t, model.ChangeMission) {
		var m model.Mission
		want := n.mission(t, id)
		if raw := records[model.ChangeMission+"/"+id]; raw == nil || json.Unmarshal(raw, &m) != nil ||
			m.Status != want.Status || len(m.History) != len(want.History) {
			t.Errorf("mission %s upstream: %s; here %s with %d moves", id, raw, want.Status, len(want.History))
		}
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	seen := map[string]bool{}
	for _, it := range up.appliedLog {
		var r struct {
			ID         string `json:"id"`
			EventID    string `json:"event_id"`
			DispatchID string `json:"dispatch_id"`
		}
		_ = json.Unmarshal(it.Payload, &r)
		switch it.Kind {
		case model.ChangeEvent:
			seen[it.Kind+"/"+r.EventID] = true
		case model.ChangeDispatch, model.ChangeMission:
			if !seen[model.ChangeEvent+"/"+r.EventID] {
				t.Errorf("sequence %d: %s %s came before its event %s", it.Seq, it.Kind, r.ID, r.EventID)
			}
			if it.Kind == model.ChangeMission && !seen[model.ChangeDispatch+"/"+r.DispatchID] {
				t.Errorf("sequence %d: mission %s came before its dispatch %s", it.Seq, r.ID, r.DispatchID)
			}
			seen[it.Kind+"/"+r.ID] = true
		}
	}
}

// checkWalkOrder checks that what the upstream applied, a history walked without
// changes in between, came kind by kind (events, dispatches, missions), oldest first.
func checkWalkOrder(t *testing.T, up *fakeUpstream) {
	t.Helper()
	up.mu.Lock()
	defer up.mu.Unlock()
	order := []string{model.ChangeEvent, model.ChangeDispatch, model.ChangeMission}
	var last struct{ kind, id string }
	for _, it := range up.appliedLog {
		var r struct {
			ID      string `json:"id"`
			EventID string `json:"event_id"`
		}
		_ = json.Unmarshal(it.Payload, &r)
		if it.Kind == model.ChangeEvent {
			r.ID = r.EventID
		}
		if slices.Index(order, it.Kind) < slices.Index(order, last.kind) || (it.Kind == last.kind && r.ID <= last.id) {
			t.Fatalf("sequence %d: %s %s after %s %s", it.Seq, it.Kind, r.ID, last.kind, last.id)
		}
		last.kind, last.id = it.Kind, r.ID
	}
}

// TestUpstreamBackfill_Order: the records a node held before its upstream was set reach
// the upstream through the change log: events, then dispatches, then missions (with
// their moves), each oldest first, once each. Changes made while the history is walked
// are not lost and do not overtake what they refer to: a record the walk has passed
// is logged again, one it has not reached is logged by the walk as it stands then.
func TestUpstreamBackfill_Order(t *testing.T) {
	ctx := context.Background()
	n := newUpNode(t, model.UpstreamOptions{BatchSize: 5})
	missions := n.history(t, 40)
	events := n.local(t, model.ChangeEvent)
	up := newFakeUpstream(t, upKey)
	n.setUpstream(t, model.UpstreamInput{URL: up.srv.URL, APIKey: upKey})
	if st := n.status(t); st.State != engine.UpstreamPushing || st.Backfill == nil ||
		st.Backfill.State != model.BackfillWalking || st.Backfill.Queued != 0 {
		t.Fatalf("set: %+v %+v", st, st.Backfill)
	}

	// Two transactions: the ten oldest events are in the log.
	if steps, err := n.e.WalkUpstreamHistory(ctx, n.p.TenantID, 2); err != nil || steps != 2 {
		t.Fatalf("walk: %d steps, %v", steps, err)
	}
	if got := n.changes(t); len(got) != 10 || got[9].ID != events[9] {
		t.Fatalf("after two steps: %+v", got)
	}
	// Meanwhile: an event the walk has not reached is dispatched, a mission of the past
	// moves, a new event comes, and an event it has passed is dispatched.
	d, err := n.dispatch(t, model.DispatchInput{EventID: events[30], TeamID: n.bravo.ID})
	if err != nil {
		t.Fatal(err)
	}
	n.move(t, d.MissionID, model.MissionAck)
	n.complete(t, d.MissionID)
	n.move(t, missions[len(missions)-1], model.MissionOnRoute)
	n.clock.Advance(time.Millisecond)
	n.post(t, "high", "north")
	if _, err := n.dispatch(t, model.DispatchInput{EventID: events[2], TeamID: n.bravo.ID}); err != nil {
		t.Fatal(err)
	}
	for _, c := range n.changes(t)[10:] {
		if c.Kind != model.ChangeEvent || c.ID > events[9] {
			t.Fatalf("a change the walk has not reached was logged: %+v", c)
		}
	}

	n.e.RunUpstream(ctx)
	st := n.status(t)
	if st.State != engine.UpstreamIdle || st.Backlog != 0 || st.Backfill == nil || st.Backfill.State != model.BackfillDone ||
		st.Backfill.Kind != nil || st.Backfill.WalkedAt == nil || st.Backfill.Through > st.AckedThrough {
		t.Fatalf("after the push: %+v %+v", st, st.Backfill)
	}
	want := int64(len(n.local(t, model.ChangeEvent)) + len(n.local(t, model.ChangeDispatch)) + len(n.local(t, model.ChangeMission)))
	if st.Backfill.Queued != want {
		t.Fatalf("the walk logged %d records, the node holds %d", st.Backfill.Queued, want)
	}

	// Once walked, every change is logged as before.
	n.move(t, missions[len(missions)-1], model.MissionOnSite)
	n.e.RunUpstream(ctx)
	checkWhole(t, n, up)

}

// TestUpstreamBackfill_RestartExactlyOnce: the node restarts in the middle of its
// history, after the upstream applied a batch whose answer was lost: it goes on from
// the walk's last transaction, and every record reaches the upstream once.
func TestUpstreamBackfill_RestartExactlyOnce(t *testing.T) {
	ctx := context.Background()
	n := newUpNode(t, model.UpstreamOptions{BatchSize: 10})
	n.history(t, 300)
	up := newFakeUpstream(t, upKey)
	n.setUpstream(t, model.UpstreamInput{URL: up.srv.URL, APIKey: upKey})
	up.set("drop")
	n.e.RunUpstream(ctx)
	st := n.status(t)
	_, _, applied := up.snapshot()
	// The walk stops 200 entries (20 batches) ahead of what the upstream acknowledged.
	if st.State != engine.UpstreamDown || st.Backfill == nil || st.Backfill.State != model.BackfillWalking ||
		st.Backfill.Queued != 200 || st.Backlog != 200 || applied != 10 {
		t.Fatalf("before the restart: upstream at %d, %+v %+v", applied, st, st.Backfill)
	}

	n.open(t)
	n.clock.Advance(2 * time.Second)
	n.e.RunUpstream(ctx)
	st = n.status(t)
	total := int64(len(n.local(t, model.ChangeEvent)) + len(n.local(t, model.ChangeDispatch)) + len(n.local(t, model.ChangeMission)))
	if st.State != engine.UpstreamIdle || st.Backfill.State != model.BackfillDone || st.Backfill.Queued != total ||
		n.logEnd(t) != total {
		t.Fatalf("after the restart: %+v %+v; %d records, log end %d", st, st.Backfill, total, n.logEnd(t))
	}
	checkWhole(t, n, up)
	checkWalkOrder(t, up)
}

// TestUpstreamBackfill_SmallTransactions: a long history is put in the log a batch per
// transaction (so the store's one writer is never held for long), and the link pushes it
// all.
func TestUpstreamBackfill_SmallTransactions(t *testing.T) {
	ctx := context.Background()
	n := newUpNode(t, model.UpstreamOptions{BatchSize: 25})
	n.history(t, 400)
	up := newFakeUpstream(t, upKey)
	n.setUpstream(t, model.UpstreamInput{URL: up.srv.URL, APIKey: upKey})

	cs := &countingStore{Store: n.db.(model.Store)}
	e := engine.New(cs, engine.Options{Clock: n.clock, Logger: slog.New(slog.DiscardHandler), Upstream: n.up,
		Password: cheapPasswords})
	e.RunUpstream(ctx)
	total := len(n.local(t, model.ChangeEvent)) + len(n.local(t, model.ChangeDispatch)) + len(n.local(t, model.ChangeMission))
	if cs.most > 25 || cs.appended < total/25 {
		t.Fatalf("%d records logged by %d transactions, the largest appending %d (want at most 25)", total, cs.appended, cs.most)
	}
	checkWhole(t, n, up)
	checkWalkOrder(t, up)
}

// TestUpstreamBackfill_NewUpstream: a link moved to another URL (another central node)
// sends the history again from the start, then the log as before; the same URL with a new
// key does not.
func TestUpstreamBackfill_NewUpstream(t *testing.T) {
	ctx := context.Background()
	n := newUpNode(t, model.UpstreamOptions{BatchSize: 10})
	missions := n.history(t, 30)
	first := newFakeUpstream(t, upKey)
	n.setUpstream(t, model.UpstreamInput{URL: first.srv.URL, APIKey: upKey})
	n.e.RunUpstream(ctx)
	checkWhole(t, n, first)
	queued := n.status(t).Backfill.Queued

	n.setUpstream(t, model.UpstreamInput{URL: first.srv.URL, APIKey: upKey}) // same URL, key again
	if st := n.status(t); st.Backfill.State != model.BackfillDone || st.Backfill.Queued != queued {
		t.Fatalf("the same upstream set again restarted the backfill: %+v", st.Backfill)
	}

	second := newFakeUpstream(t, upKey)
	n.setUpstream(t, model.UpstreamInput{URL: second.srv.URL, APIKey: upKey})
	if st := n.status(t); st.Backfill.State != model.BackfillWalking || st.Backfill.Queued != 0 {
		t.Fatalf("a new upstream: %+v", st.Backfill)
	}
	n.complete(t, missions[len(missions)-1])
	n.history(t, 4)
	n.e.RunUpstream(ctx)
	_, records, _ := second.snapshot()
	for _, kind := range []string{model.ChangeEvent, model.ChangeDispatch, model.ChangeMission} {
		for _, id := range n.local(t, kind) {
			if records[kind+"/"+id] == nil {
				t.Errorf("%s %s is missing on the new upstream", kind, id)
			}
		}
	}
	if st := n.status(t); st.State != engine.UpstreamIdle || st.Backfill.State != model.BackfillDone {
		t.Fatalf("after the push to the new upstream: %+v %+v", st, st.Backfill)
	}
}
