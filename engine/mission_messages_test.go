package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
)

// TestMissionMessages_BothWays: the supervisor writes to the team through the API, a
// phone answers offline through device sync in order with its move; a retried sync
// writes nothing twice; every device of the team but the sender learns of each; a message
// after the mission ended is kept; the rules of the text and of who writes.
func TestMissionMessages_BothWays(t *testing.T) {
	ctx := context.Background()
	f := newCrewFix(t)
	m := f.dispatch(t, f.event(t), f.teamA)
	msg, err := f.e.PostMissionMessage(ctx, f.sup, m.ID, model.MissionMessageInput{Text: "  Gate code 4512\nthen left  "}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Text != "Gate code 4512\nthen left" || msg.AuthorID != f.sup.UserID || msg.Role != model.RoleOperationalSupervisor ||
		msg.Channel != engine.MoveSourceAPI || msg.CapturedAt != nil || msg.AuthorName == "" {
		t.Fatalf("message: %+v", msg)
	}
	for _, d := range []*model.Device{f.a1, f.a2} {
		u := f.updates(t, d)
		if len(u) != 1 || u[0].Changes[0].What != model.UpdateMessage || u[0].Changes[0].MessageID != msg.ID ||
			u[0].Changes[0].Text != msg.Text || len(u[0].Mission.Messages) != 1 {
			t.Fatalf("%s: %+v", d.Name, u)
		}
	}
	// a1 answers offline: ACK then a message, captured a minute ago; the sync is retried.
	f.clock.Advance(2 * time.Minute)
	at := epoch.Add(time.Minute)
	items := []any{
		item(1, "mission_status", map[string]any{"mission_id": m.ID, "status": "ACK"}, at),
		item(2, "message", map[string]any{"mission_id": m.ID, "text": "On our way, 10 min"}, at.Add(time.Second)),
	}
	for range 2 {
		res := f.mustSync(t, f.opA, f.a1.ID, nil, items...)
		for _, r := range res.Results {
			if r.Status != model.ItemApplied && r.Status != model.ItemDuplicate {
				t.Fatalf("item %d: %+v", *r.SequenceNumber, r)
			}
		}
	}
	got, err := f.e.MissionMessages(ctx, f.sup, m.ID)
	if err != nil || len(got) != 2 {
		t.Fatalf("messages: %+v, %v", got, err)
	}
	if a := got[1]; a.Text != "On our way, 10 min" || a.Channel != engine.MoveSourceDevice || a.CapturedAt == nil ||
		!a.CapturedAt.Equal(at.Add(time.Second)) || a.AuthorID != f.opA.UserID {
		t.Fatalf("the phone's answer: %+v", a)
	}
	// a2 learns of the ACK and the answer, in order; a1 of neither.
	if u := f.updates(t, f.a2); len(u) != 1 || !equal(whats(u[0]), []string{"message", "status:ACK", "message"}) {
		t.Fatalf("a2's changes: %v", whats(u[0]))
	}
	if u := f.updates(t, f.a1); !equal(whats(u[0]), []string{"message"}) {
		t.Fatalf("a1 told of its own: %v", whats(u[0]))
	}
	// Another team's operator neither reads nor writes; bad texts are refused.
	_, err = f.e.PostMissionMessage(ctx, f.opB, m.ID, model.MissionMessageInput{Text: "hi"}, nil)
	modeltest.AssertKind(t, err, model.KindNotFound)
	_, err = f.e.MissionMessages(ctx, f.opB, m.ID)
	modeltest.AssertKind(t, err, model.KindNotFound)
	for _, text := range []string{"", "   ", strings.Repeat("x", 1001), "bell\a"} {
		_, err = f.e.PostMissionMessage(ctx, f.sup, m.ID, model.MissionMessageInput{Text: text}, nil)
		modeltest.AssertInvalid(t, err, "text")
	}
	_, err = f.e.PostMissionMessage(ctx, tenantAdmin(f.tenant.ID), m.ID, model.MissionMessageInput{Text: strings.Repeat("é", 1000)}, nil)
	if err != nil {
		t.Fatalf("1,000 characters: %v", err)
	}
	// After the mission ended, a message is kept.
	f.move(t, f.sup, m.ID, model.MissionFailed)
	if _, err := f.e.PostMissionMessage(ctx, f.opA, m.ID, model.MissionMessageInput{Text: "late"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := f.mission(t, m.ID); got.Status != model.MissionFailed || got.Messages[len(got.Messages)-1].Text != "late" {
		t.Fatalf("after the end: %s, %+v", got.Status, got.Messages)
	}
}

// TestMissionMessages_CrewMessageAlert: a message from the field raises one crew_message
// alert for its mission, however many follow; the control room's answer closes it; a
// control-room message raises none.
func TestMissionMessages_CrewMessageAlert(t *testing.T) {
	ctx := context.Background()
	f := newCrewFix(t)
	m := f.dispatch(t, f.event(t), f.teamA)
	open := func() []model.Alert {
		t.Helper()
		got, _, err := f.e.Book.Alerts(ctx, f.sup, model.AlertFilter{Kind: model.AlertCrewMessage}, model.Page{Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if _, err := f.e.PostMissionMessage(ctx, f.sup, m.ID, model.MissionMessageInput{Text: "Gate code 4512"}, nil); err != nil {
		t.Fatal(err)
	}
	if a := open(); len(a) != 0 {
		t.Fatalf("the control room's message raised %+v", a)
	}
	for _, text := range []string{"Road blocked", "Taking the north gate"} {
		if _, err := f.e.PostMissionMessage(ctx, f.opA, m.ID, model.MissionMessageInput{Text: text}, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.mustSync(t, f.opA, f.a1.ID, nil, item(1, "message", map[string]any{"mission_id": m.ID, "text": "From the phone"}, epoch))
	a := open()
	if len(a) != 1 || a[0].MissionID == nil || *a[0].MissionID != m.ID || !strings.Contains(a[0].Message, "Road blocked") {
		t.Fatalf("crew messages raised %+v", a)
	}
	if _, err := f.e.PostMissionMessage(ctx, f.sup, m.ID, model.MissionMessageInput{Text: "Understood"}, nil); err != nil {
		t.Fatal(err)
	}
	if a := open(); len(a) != 0 {
		t.Fatalf("the answer left %+v open", a)
	}
}

// TestMissionMessages_WebhookAndStream: a message fires mission.message to the webhooks
// that want it, with the mission, event, team and the message; the stream gets it too.
func TestMissionMessages_WebhookAndStream(t *testing.T) {
	ctx := context.Background()
	n := newFieldNode(t)
	n.webhook(t, "https://hooks.example/m", engine.HookMissionMessage)
	sub, _, _, _ := n.e.Stream().Subscribe(n.p.TenantID, 0)
	defer sub.Close()
	acc := n.post(t, "high", "north")
	d, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := n.e.PostMissionMessage(ctx, n.p, d.MissionID, model.MissionMessageInput{Text: "hello crew"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.e.RunDue(ctx)
	found := false
	n.sender.mu.Lock()
	calls := append([]call(nil), n.sender.calls...)
	n.sender.mu.Unlock()
	for _, c := range calls {
		if c.kind == "webhook" && strings.Contains(c.body, `"event":"mission.message"`) && strings.Contains(c.body, msg.ID) &&
			strings.Contains(c.body, d.MissionID) && strings.Contains(c.body, "hello crew") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no mission.message webhook: %+v", calls)
	}
	for {
		select {
		case c := <-sub.C:
			if c.Name == engine.HookMissionMessage {
				return
			}
		default:
			t.Fatal("no mission.message change on the stream")
		}
	}
}
