package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
)

// crewFix is a device fixture with two devices of team Alpha and one of team Bravo.
type crewFix struct {
	*deviceFix
	a1, a2, b1 *model.Device
}

func newCrewFix(t *testing.T) *crewFix {
	f := &crewFix{deviceFix: newDeviceFix(t)}
	f.a1 = f.mustRegister(t, f.opA, model.DeviceInput{Name: "ann's phone", Platform: "web", TeamID: f.teamA.ID})
	f.a2 = f.mustRegister(t, f.opA, model.DeviceInput{Name: "truck tablet", Platform: "web", TeamID: f.teamA.ID})
	f.b1 = f.mustRegister(t, f.opB, model.DeviceInput{Name: "bob's phone", Platform: "web", TeamID: f.teamB.ID})
	return f
}

// dispatch sends team to an event by hand (the supervisor) and returns the mission.
func (f *crewFix) dispatch(t *testing.T, eventID string, team *model.Team) *model.Mission {
	t.Helper()
	var d *model.Dispatch
	mustDo(t, func() (err error) {
		d, err = f.e.DispatchTeam(context.Background(), f.sup, model.DispatchInput{EventID: eventID, TeamID: team.ID}, nil)
		return err
	})
	return f.mission(t, d.MissionID)
}

// event stores an open event and returns its id.
func (f *crewFix) event(t *testing.T) string {
	t.Helper()
	m := f.storedMission(t, f.teamB, epoch.Add(-time.Hour))
	// storedMission's team goes back to available: only the event is wanted.
	MustUpdate(t, f.e, func(tx model.Tx) error {
		tm, err := tx.Team(f.tenant.ID, f.teamB.ID)
		if err != nil {
			return err
		}
		tm.Status = engine.TeamAvailable
		if err := tx.PutTeam(f.tenant.ID, tm); err != nil {
			return err
		}
		m.Status = model.MissionFailed
		return tx.PutMission(f.tenant.ID, m)
	})
	return m.EventID
}

// updates lists the mission_update items of a device's pending queue.
func (f *crewFix) updates(t *testing.T, d *model.Device) []model.QueueEntry {
	t.Helper()
	q, _, err := f.e.DeviceQueue(context.Background(), tenantAdmin(f.tenant.ID), d.ID, model.Page{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	var out []model.QueueEntry
	for _, e := range q {
		if e.Kind == model.QueueMissionUpdate {
			out = append(out, e)
		}
	}
	return out
}

// whats lists the what (and to, for a status) of an item's changes.
func whats(e model.QueueEntry) []string {
	var out []string
	for _, c := range e.Changes {
		s := c.What
		if c.To != "" {
			s += ":" + c.To
		}
		out = append(out, s)
	}
	return out
}

func equal(a, b []string) bool {
	b1, _ := json.Marshal(a)
	b2, _ := json.Marshal(b)
	return string(b1) == string(b2)
}

func lastSeq(t *testing.T, f *crewFix, d *model.Device) *model.Int {
	t.Helper()
	q, _, err := f.e.DeviceQueue(context.Background(), tenantAdmin(f.tenant.ID), d.ID, model.Page{Limit: 500})
	if err != nil || len(q) == 0 {
		t.Fatalf("queue of %s: %v, %v", d.Name, q, err)
	}
	n := model.Int(q[len(q)-1].QueueSequence)
	return &n
}

// TestMissionUpdate_EveryMoveByAnotherReachesTheCrew: the system's SENT, a move by another
// phone of the team and the supervisor's stand-down each reach every device of the team
// but the one that made the change, coalesced into one item per device that lists each
// change in order; the other team's device learns nothing; ack_through clears them.
func TestMissionUpdate_EveryMoveByAnotherReachesTheCrew(t *testing.T) {
	f := newCrewFix(t)
	m := f.dispatch(t, f.event(t), f.teamA)
	// a1 receives the mission and acknowledges it: SENT by the system, for a2 only.
	res := f.mustSync(t, f.opA, f.a1.ID, nil)
	if len(res.Queue) != 1 || res.Queue[0].Kind != model.QueueMission {
		t.Fatalf("a1's queue: %+v", res.Queue)
	}
	ack := model.Int(res.Queue[0].QueueSequence)
	f.mustSync(t, f.opA, f.a1.ID, &ack, item(1, "mission_status", map[string]any{"mission_id": m.ID, "status": "ACK"}, epoch))
	if u := f.updates(t, f.a1); len(u) != 0 {
		t.Fatalf("a1 was told of its own changes: %+v", u)
	}
	u := f.updates(t, f.a2)
	if len(u) != 1 || !equal(whats(u[0]), []string{"status:SENT", "status:ACK"}) {
		t.Fatalf("a2's updates: %+v", u)
	}
	if c := u[0].Changes[1]; c.From != model.MissionSent || c.By.ID != f.opA.UserID || c.By.Role != model.RoleFieldOperator ||
		c.Channel != engine.MoveSourceDevice || c.By.Name == "" {
		t.Fatalf("a2's ACK change: %+v", c)
	}
	if c := u[0].Changes[0]; c.By.Role != model.ActorRoleSystem || c.Channel != engine.MoveSourceSystem {
		t.Fatalf("a2's SENT change: %+v", c)
	}
	if u[0].Mission == nil || u[0].Mission.Status != model.MissionAck || u[0].Event == nil || u[0].TeamName != "Alpha" {
		t.Fatalf("a2's update carries %+v", u[0])
	}

	// The supervisor stands the team down.
	_, err := f.e.UpdateMissionStatus(context.Background(), f.sup, m.ID, model.MissionStatusInput{Status: model.MissionFailed,
		Feedback: json.RawMessage(`{"stood_down":true,"reason":"false alarm"}`)}, engine.MoveSourceAPI, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*model.Device{f.a1, f.a2} {
		u := f.updates(t, d)
		if len(u) != 1 {
			t.Fatalf("%s: %d updates, want one (coalesced)", d.Name, len(u))
		}
		c := u[0].Changes[len(u[0].Changes)-1]
		if c.What != model.UpdateStatus || c.To != model.MissionFailed || !c.StoodDown || c.Reason != "false alarm" ||
			c.By.ID != f.sup.UserID || c.By.Role != model.RoleOperationalSupervisor || u[0].Mission.Status != model.MissionFailed {
			t.Fatalf("%s's stand-down: %+v", d.Name, c)
		}
	}
	if u := f.updates(t, f.a2); !equal(whats(u[0]), []string{"status:SENT", "status:ACK", "status:FAILED"}) {
		t.Fatalf("a2's coalesced changes: %v", whats(u[0]))
	}
	if u := f.updates(t, f.b1); len(u) != 0 {
		t.Fatalf("another team's device was told: %+v", u)
	}
	if tm := f.team(t, f.teamA.ID); tm.Status != engine.TeamAvailable {
		t.Fatalf("team after the stand-down: %s", tm.Status)
	}
	// ack_through clears them.
	for _, d := range []*model.Device{f.a1, f.a2} {
		f.mustSync(t, f.opA, d.ID, lastSeq(t, f, d))
		if u := f.updates(t, d); len(u) != 0 {
			t.Fatalf("%s after its ack: %+v", d.Name, u)
		}
	}
}

// TestMissionUpdate_UncoalescedOnePerChange: without coalescing each change is its own
// item (the baseline of the queue's size measure).
func TestMissionUpdate_UncoalescedOnePerChange(t *testing.T) {
	f := newCrewFix(t)
	f.e.SetCoalesce(false)
	m := f.dispatch(t, f.event(t), f.teamA)
	for _, s := range []string{model.MissionAck, model.MissionOnRoute, model.MissionOnSite} {
		f.move(t, f.sup, m.ID, s)
	}
	if u := f.updates(t, f.a1); len(u) != 3 {
		t.Fatalf("a1: %d updates, want 3", len(u))
	}
}

// TestMissionUpdate_StandDownRules: only missions:manage stands a team down, to FAILED
// and with a reason; the mission keeps the feedback.
func TestMissionUpdate_StandDownRules(t *testing.T) {
	f := newCrewFix(t)
	m := f.dispatch(t, f.event(t), f.teamA)
	move := func(p model.Principal, status, feedback string) error {
		_, err := f.e.UpdateMissionStatus(context.Background(), p, m.ID, model.MissionStatusInput{Status: status,
			Feedback: json.RawMessage(feedback)}, engine.MoveSourceAPI, nil, nil)
		return err
	}
	modeltest.AssertKind(t, move(f.opA, model.MissionFailed, `{"stood_down":true,"reason":"x"}`), model.KindForbidden)
	modeltest.AssertInvalid(t, move(f.sup, model.MissionFailed, `{"stood_down":true}`), "feedback.reason")
	modeltest.AssertInvalid(t, move(f.sup, model.MissionFailed, `{"stood_down":true,"reason":"  "}`), "feedback.reason")
	modeltest.AssertInvalid(t, move(f.sup, model.MissionAck, `{"stood_down":true,"reason":"x"}`), "feedback.stood_down")
	modeltest.AssertInvalid(t, move(f.sup, model.MissionFailed, `{"stood_down":"yes","reason":"x"}`), "feedback.stood_down")
	if got := f.mission(t, m.ID); got.Status != model.MissionCreated {
		t.Fatalf("a refused stand-down moved the mission to %s", got.Status)
	}
	// A field operator's own failure with a reason is told too, without stood_down.
	if err := move(f.opA, model.MissionFailed, `{"reason":"truck broke down"}`); err != nil {
		t.Fatal(err)
	}
	u := f.updates(t, f.a1)
	c := u[len(u)-1].Changes[len(u[len(u)-1].Changes)-1]
	if c.StoodDown || c.Reason != "truck broke down" || c.To != model.MissionFailed {
		t.Fatalf("failure change: %+v", c)
	}
}

// TestMissionUpdate_BackupAndEventClosed: a backup on the event reaches the first team's
// devices naming the backup team; the backup's COMPLETED closes the event, and the first
// team is told (its mission goes on, to be stood down).
func TestMissionUpdate_BackupAndEventClosed(t *testing.T) {
	f := newCrewFix(t)
	ev := f.event(t)
	first := f.dispatch(t, ev, f.teamA)
	backup := f.dispatch(t, ev, f.teamB)
	u := f.updates(t, f.a1)
	if len(u) != 1 || u[0].Mission.ID != first.ID {
		t.Fatalf("a1's updates after the backup: %+v", u)
	}
	c := u[0].Changes[0]
	if c.What != model.UpdateBackup || c.TeamName != "Bravo" || c.TeamID != f.teamB.ID || c.MissionID != backup.ID ||
		c.By.ID != f.sup.UserID || c.Channel != engine.MoveSourceAPI {
		t.Fatalf("backup change: %+v", c)
	}
	if u := f.updates(t, f.b1); len(u) != 0 {
		t.Fatalf("the backup team got an update of its own new mission: %+v", u)
	}
	for _, s := range []string{model.MissionAck, model.MissionOnRoute, model.MissionOnSite, model.MissionCompleted} {
		f.move(t, f.opB, backup.ID, s)
	}
	u = f.updates(t, f.a1)
	if len(u) != 1 || !equal(whats(u[0]), []string{"backup", "event_closed:COMPLETED"}) {
		t.Fatalf("a1's changes: %+v", u)
	}
	if c := u[0].Changes[1]; c.TeamName != "Bravo" || c.MissionID != backup.ID || c.By.ID != f.opB.UserID {
		t.Fatalf("event_closed change: %+v", c)
	}
	if got := f.mission(t, first.ID); !got.Active() {
		t.Fatalf("the first mission ended silently: %s", got.Status)
	}
}

// TestDispatch_ReinforcementNeverTheTeamJustFailed: the first team fails off an event
// that a manual backup keeps open; when the backup's reinforcement check runs, the first
// team (available again) is not sent back: no team is left, supervisors are alerted.
func TestDispatch_ReinforcementNeverTheTeamJustFailed(t *testing.T) {
	ctx := context.Background()
	n := newFieldNode(t)
	n.settings(t, false, 0.0, 5)
	n.sender.webhook = failing // no ACK
	acc := n.post(t, "high", "north")
	d1, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.bravo.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.e.UpdateMissionStatus(ctx, n.p, d1.MissionID, model.MissionStatusInput{Status: model.MissionFailed,
		Feedback: json.RawMessage(`{"stood_down":true,"reason":"wrong address"}`)}, engine.MoveSourceAPI, nil, nil); err != nil {
		t.Fatal(err)
	}
	n.e.RunDue(ctx)
	n.clock.Advance(5 * time.Minute)
	n.e.RunDue(ctx)
	var missions []model.Mission
	_ = n.e.View(ctx, func(tx model.Tx) (err error) {
		missions, err = tx.MissionsOfEvent(n.p.TenantID, acc.EventID)
		return err
	})
	if len(missions) != 2 {
		t.Fatalf("missions of the event: %d; want the two dispatched by hand, no reinforcement", len(missions))
	}
	if tm := n.team(t, n.alpha.ID); tm.Status != engine.TeamAvailable {
		t.Fatalf("the team stood down is %s", tm.Status)
	}
}

func (f *deviceFix) team(t *testing.T, id string) *model.Team {
	t.Helper()
	var tm *model.Team
	if err := f.e.View(context.Background(), func(tx model.Tx) (err error) {
		tm, err = tx.Team(f.tenant.ID, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return tm
}

// TestMissionUpdate_AckCapturedBeforeItsSent: a phone's ACK captured before the SENT that
// its own queue acknowledgement recorded is applied at SENT's instant; a move captured
// before the creation is still refused.
func TestMissionUpdate_AckCapturedBeforeItsSent(t *testing.T) {
	f := newCrewFix(t)
	m := f.dispatch(t, f.event(t), f.teamA)
	res := f.mustSync(t, f.opA, f.a1.ID, nil)
	ack := model.Int(res.Queue[0].QueueSequence)
	f.clock.Advance(3 * time.Second)
	tapped := epoch.Add(time.Second)
	res = f.mustSync(t, f.opA, f.a1.ID, &ack, item(1, "mission_status", map[string]any{"mission_id": m.ID, "status": "ACK"}, tapped),
		item(2, "mission_status", map[string]any{"mission_id": m.ID, "status": "ON_ROUTE"}, epoch.Add(-time.Second)))
	if res.Results[0].Status != model.ItemApplied || res.Results[1].Status != model.ItemRejected {
		t.Fatalf("results: %+v", res.Results)
	}
	got := f.mission(t, m.ID)
	n := len(got.History)
	if got.Status != model.MissionAck || !got.History[n-1].At.Equal(got.History[n-2].At.Time) || got.History[n-2].To != model.MissionSent {
		t.Fatalf("history: %+v", got.History)
	}
}

// TestMissionCrew_WhoKnowsTheLatestChange: each device of the team is not_yet_received
// while an item of the mission waits in its queue, acknowledged (and when) once it acked
// it; all_acknowledged when every one has.
func TestMissionCrew_WhoKnowsTheLatestChange(t *testing.T) {
	ctx := context.Background()
	f := newCrewFix(t)
	m := f.dispatch(t, f.event(t), f.teamA)
	states := func() (map[string]model.CrewDevice, bool) {
		t.Helper()
		c, err := f.e.MissionCrew(ctx, f.sup, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]model.CrewDevice{}
		for _, d := range c.Devices {
			out[d.DeviceID] = d
		}
		return out, c.AllAcknowledged
	}
	got, all := states()
	if all || len(got) != 2 || got[f.a1.ID].State != model.CrewNotYetReceived || got[f.a1.ID].PendingSince == nil {
		t.Fatalf("after the dispatch: %+v, %v", got, all)
	}
	f.clock.Advance(time.Minute)
	for _, d := range []*model.Device{f.a1, f.a2} {
		f.mustSync(t, f.opA, d.ID, lastSeq(t, f, d))
	}
	got, all = states()
	if !all || got[f.a1.ID].State != model.CrewAcknowledged || !got[f.a1.ID].AcknowledgedAt.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("after both acked: %+v, %v", got, all)
	}
	_, err := f.e.UpdateMissionStatus(ctx, f.sup, m.ID, model.MissionStatusInput{Status: model.MissionFailed,
		Feedback: json.RawMessage(`{"stood_down":true,"reason":"called off"}`)}, engine.MoveSourceAPI, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, all = states(); all || got[f.a2.ID].State != model.CrewNotYetReceived {
		t.Fatalf("after the stand-down: %+v, %v", got, all)
	}
	_, err = f.e.MissionCrew(ctx, f.opB, m.ID)
	modeltest.AssertKind(t, err, model.KindNotFound)
}
