package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// openAlerts lists the node's open alerts of a kind.
func (n *fieldNode) openAlerts(t *testing.T, kind string) []model.Alert {
	t.Helper()
	got, _, err := n.e.Alerts(context.Background(), n.p, model.AlertFilter{Kind: kind}, model.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func (n *fieldNode) move(t *testing.T, id, status string) {
	t.Helper()
	if _, err := n.e.UpdateMissionStatus(context.Background(), n.p, id, model.MissionStatusInput{Status: status},
		engine.MoveSourceAPI, nil, nil); err != nil {
		t.Fatalf("move to %s: %v", status, err)
	}
}

// TestMissionTimers_UnacknowledgedWithoutReinforcement: with no reinforcement timeout, a
// mission not at ACK 5 minutes after its dispatch raises mission_unacknowledged (no
// backup), which its acknowledgement closes.
func TestMissionTimers_UnacknowledgedWithoutReinforcement(t *testing.T) {
	ctx := context.Background()
	n := newFieldNode(t)
	n.settings(t, false, 0.0, 0)
	n.sender.webhook = failing
	acc := n.post(t, "high", "north")
	d, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID})
	if err != nil {
		t.Fatal(err)
	}
	n.e.RunDue(ctx)
	n.clock.Advance(engine.UnacknowledgedAlertMin*time.Minute - time.Second)
	n.e.RunDue(ctx)
	if got := n.openAlerts(t, model.AlertMissionUnacknowledged); len(got) != 0 {
		t.Fatalf("alert a second before the 5 minutes: %+v", got)
	}
	n.clock.Advance(time.Second)
	n.e.RunDue(ctx)
	got := n.openAlerts(t, model.AlertMissionUnacknowledged)
	if len(got) != 1 || got[0].MissionID == nil || *got[0].MissionID != d.MissionID {
		t.Fatalf("alerts at 5 minutes: %+v", got)
	}
	if m := n.mission(t, d.MissionID); m.Reinforced {
		t.Fatal("reinforced with reinforcement off")
	}
	if tm := n.team(t, n.bravo.ID); tm.Status != engine.TeamAvailable {
		t.Fatalf("a backup was sent with reinforcement off: bravo is %s", tm.Status)
	}
	n.move(t, d.MissionID, model.MissionAck)
	if got := n.openAlerts(t, model.AlertMissionUnacknowledged); len(got) != 0 {
		t.Fatalf("alert still open after ACK: %+v", got)
	}
	// Once: time goes on, nothing more.
	n.clock.Advance(time.Hour)
	n.e.RunDue(ctx)
	if got := n.openAlerts(t, model.AlertMissionUnacknowledged); len(got) != 0 {
		t.Fatalf("alert again after ACK: %+v", got)
	}
}

// TestMissionTimers_OverdueOnSite: a mission acknowledged but not ON_SITE when the on-site
// timeout (30 minutes by default, then the tenant's) ends raises mission_overdue, closed
// at ON_SITE; the team's status_since says when it entered its status.
func TestMissionTimers_OverdueOnSite(t *testing.T) {
	ctx := context.Background()
	n := newFieldNode(t)
	n.settings(t, false, 0.0, 0)
	if s := n.team(t, n.alpha.ID); s.StatusSince != nil && s.Status != engine.TeamAvailable {
		t.Fatalf("alpha: %+v", s)
	}
	acc := n.post(t, "high", "north")
	dispatchedAt := model.At(n.clock.Now())
	d, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID})
	if err != nil {
		t.Fatal(err)
	}
	if tm := n.team(t, n.alpha.ID); tm.StatusSince == nil || !tm.StatusSince.Equal(dispatchedAt.Time) {
		t.Fatalf("alpha on_mission since %v, want %v", tm.StatusSince, dispatchedAt)
	}
	n.clock.Advance(time.Minute)
	n.move(t, d.MissionID, model.MissionAck)
	n.move(t, d.MissionID, model.MissionOnRoute)
	n.clock.Advance(model.DefaultOnSiteTimeoutMin*time.Minute - time.Second)
	n.e.RunDue(ctx)
	if got := n.openAlerts(t, model.AlertMissionOverdue); len(got) != 0 {
		t.Fatalf("overdue a second early: %+v", got)
	}
	if tm := n.team(t, n.alpha.ID); !tm.StatusSince.Equal(dispatchedAt.Time) {
		t.Fatalf("status_since moved with the mission's moves: %v", tm.StatusSince)
	}
	n.clock.Advance(time.Second)
	n.e.RunDue(ctx)
	got := n.openAlerts(t, model.AlertMissionOverdue)
	if len(got) != 1 || *got[0].MissionID != d.MissionID || *got[0].TeamID != n.alpha.ID {
		t.Fatalf("overdue alerts at 30 minutes: %+v", got)
	}
	n.move(t, d.MissionID, model.MissionOnSite)
	if got := n.openAlerts(t, model.AlertMissionOverdue); len(got) != 0 {
		t.Fatalf("overdue still open on site: %+v", got)
	}
	completedAt := model.At(n.clock.Now())
	n.move(t, d.MissionID, model.MissionCompleted)
	if tm := n.team(t, n.alpha.ID); tm.Status != engine.TeamAvailable || !tm.StatusSince.Equal(completedAt.Time) {
		t.Fatalf("alpha after the mission: %s since %v", tm.Status, tm.StatusSince)
	}

	// The tenant's timeout: 10 minutes, set while a mission is on its way; the mission
	// fails before reaching the site: the alert closes.
	ten := model.Int(10)
	if s, err := n.e.UpdateDispatchSettings(ctx, n.p, model.DispatchSettingsInput{OnSiteTimeoutMin: &ten}, nil); err != nil || s.OnSiteTimeoutMin != 10 {
		t.Fatalf("settings: %+v %v", s, err)
	}
	acc = n.post(t, "high", "north")
	d, err = n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID})
	if err != nil {
		t.Fatal(err)
	}
	n.move(t, d.MissionID, model.MissionAck)
	n.clock.Advance(10 * time.Minute)
	n.e.RunDue(ctx)
	if got := n.openAlerts(t, model.AlertMissionOverdue); len(got) != 1 {
		t.Fatalf("overdue alerts at the tenant's 10 minutes: %+v", got)
	}
	n.move(t, d.MissionID, model.MissionFailed)
	if got := n.openAlerts(t, model.AlertMissionOverdue); len(got) != 0 {
		t.Fatalf("overdue still open after FAILED: %+v", got)
	}

	// Off: no check.
	off := model.Int(0)
	if _, err := n.e.UpdateDispatchSettings(ctx, n.p, model.DispatchSettingsInput{OnSiteTimeoutMin: &off}, nil); err != nil {
		t.Fatal(err)
	}
	acc = n.post(t, "high", "north")
	d, err = n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID})
	if err != nil {
		t.Fatal(err)
	}
	n.move(t, d.MissionID, model.MissionAck)
	n.clock.Advance(2 * time.Hour)
	n.e.RunDue(ctx)
	if got := n.openAlerts(t, model.AlertMissionOverdue); len(got) != 0 {
		t.Fatalf("overdue with the timeout off: %+v", got)
	}
}
