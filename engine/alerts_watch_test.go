package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestWatch_DeviceSilent: a device of a team on a mission that has not synced for 10
// minutes raises device_silent at the watch; its sync closes it, and a team back from its
// mission has no silent devices.
func TestWatch_DeviceSilent(t *testing.T) {
	ctx := context.Background()
	n := newFieldNode(t)
	dev := &model.Device{ID: model.NewID(), Name: "tablet 1", Platform: "android", TeamID: &n.alpha.ID,
		RegisteredAt: model.At(n.clock.Now())}
	idle := &model.Device{ID: model.NewID(), Name: "tablet 2", Platform: "android", TeamID: &n.bravo.ID,
		RegisteredAt: model.At(n.clock.Now())}
	MustUpdate(t, n.e, func(tx model.Tx) error {
		if err := tx.PutDevice(n.p.TenantID, dev); err != nil {
			return err
		}
		return tx.PutDevice(n.p.TenantID, idle)
	})
	synced := func(at time.Time) {
		MustUpdate(t, n.e, func(tx model.Tx) error {
			d, err := tx.Device(n.p.TenantID, dev.ID)
			if err != nil {
				return err
			}
			v := model.At(at)
			d.Sync.LastSyncAt = &v
			return tx.PutDevice(n.p.TenantID, d)
		})
	}
	synced(n.clock.Now())
	acc := n.post(t, "high", "north")
	d, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID})
	if err != nil {
		t.Fatal(err)
	}
	watch := func() []model.Alert {
		t.Helper()
		if err := n.e.Watch(ctx); err != nil {
			t.Fatal(err)
		}
		return n.openAlerts(t, model.AlertDeviceSilent)
	}
	n.clock.Advance(engine.DeviceSilentAfter - time.Second)
	if got := watch(); len(got) != 0 {
		t.Fatalf("silent a second early: %+v", got)
	}
	n.clock.Advance(time.Second)
	got := watch()
	if len(got) != 1 || got[0].Key != model.AlertKey(model.AlertDeviceSilent, dev.ID) || *got[0].TeamID != n.alpha.ID {
		t.Fatalf("device_silent at 10 minutes: %+v (bravo's idle device is not on a mission)", got)
	}
	synced(n.clock.Now())
	if got := watch(); len(got) != 0 {
		t.Fatalf("still silent after a sync: %+v", got)
	}
	n.clock.Advance(engine.DeviceSilentAfter)
	if got := watch(); len(got) != 1 {
		t.Fatalf("silent again: %+v", got)
	}
	n.move(t, d.MissionID, model.MissionAck)
	n.move(t, d.MissionID, model.MissionFailed)
	if got := watch(); len(got) != 0 {
		t.Fatalf("silent after the team's mission ended: %+v", got)
	}
}

// TestWatch_SMSGatewayDown: the watch raises sms_gateway_down while the gateway says it is
// down and closes it once it is up.
func TestWatch_SMSGatewayDown(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, true, true)
	n.db, n.e = reopen(t, n.dir, n.db, engine.Options{Clock: n.clock, Sender: downSender{n.sender}})
	if err := n.e.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	list := func() []model.Alert {
		got, _, err := n.e.Alerts(ctx, n.p, model.AlertFilter{Kind: model.AlertSMSGatewayDown}, model.Page{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := list(); len(got) != 1 || got[0].Priority != model.PriorityHigh {
		t.Fatalf("sms_gateway_down: %+v", got)
	}
	n.db, n.e = reopen(t, n.dir, n.db, engine.Options{Clock: n.clock, Sender: upSender{n.sender}})
	if err := n.e.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("sms_gateway_down once up: %+v", got)
	}
}

// upSender is a fakeSender whose SMS gateway reports itself up.
type upSender struct{ *fakeSender }

func (upSender) SMSGatewayState() string { return "up" }

// TestWatch_Escalation: an alert still unacknowledged alert_escalation_min after it was
// raised goes by SMS, once, to each supervisor on duty with a phone, and records
// escalated_at; an acknowledged one never goes; with the setting off (the default)
// nothing goes.
func TestWatch_Escalation(t *testing.T) {
	ctx := context.Background()
	n := newFieldNode(t)
	n.settings(t, false, 0.0, 0)
	person := func(email string, role model.Role, phone string, onDuty bool) {
		u := MustCreateUser(t, n.e, "acme", email, role)
		if _, err := n.e.UpdateUser(ctx, n.p, u.ID, model.UpdateUserInput{Phone: &phone, OnDuty: &onDuty}, nil); err != nil {
			t.Fatal(err)
		}
	}
	person("sup1@acme.example", model.RoleOperationalSupervisor, "+33611111111", true)
	person("sup2@acme.example", model.RoleOperationalSupervisor, "+33622222222", false)
	person("op@acme.example", model.RoleFieldOperator, "+33633333333", true)
	if _, err := n.e.UpdateUser(ctx, n.p, model.NewID(), model.UpdateUserInput{Phone: ptr("0611")}, nil); !model.IsKind(err, model.KindValidation) {
		t.Fatalf("a phone not in E.164: %v", err)
	}
	sent := func(to string) []string {
		n.e.RunDue(ctx)
		var out []string
		n.sender.mu.Lock()
		defer n.sender.mu.Unlock()
		for _, c := range n.sender.calls {
			if c.kind == "sms" && c.target == to {
				out = append(out, c.body)
			}
		}
		return out
	}
	watch := func() {
		t.Helper()
		if err := n.e.Watch(ctx); err != nil {
			t.Fatal(err)
		}
	}
	n.post(t, "high", "north")
	n.clock.Advance(time.Hour)
	watch()
	if got := sent("+33611111111"); len(got) != 0 {
		t.Fatalf("escalated with the setting off: %v", got)
	}

	three := model.Int(3)
	if s, err := n.e.UpdateDispatchSettings(ctx, n.p, model.DispatchSettingsInput{AlertEscalationMin: &three}, nil); err != nil || s.AlertEscalationMin != 3 {
		t.Fatalf("settings: %+v %v", s, err)
	}
	// The first event's alert is an hour old: it goes at the first watch.
	watch()
	if got := sent("+33611111111"); len(got) != 1 || !strings.Contains(got[0], "not dispatched") {
		t.Fatalf("SMS to the supervisor on duty: %v", got)
	}
	// A new alert waits its 3 minutes; an acknowledged one never goes.
	acc := n.post(t, "critical", "north")
	acked := n.post(t, "high", "north")
	all := n.openAlerts(t, model.AlertEventUndispatched)
	for _, a := range all {
		if *a.EventID == acked.EventID {
			if _, err := n.e.Ack(ctx, model.Principal{TenantID: n.p.TenantID, TenantActive: true, Role: model.RoleCompanyAdmin, UserID: model.NewID()}, a.ID, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	n.clock.Advance(3*time.Minute - time.Second)
	watch()
	if got := sent("+33611111111"); len(got) != 1 {
		t.Fatalf("escalated a second early: %v", got)
	}
	n.clock.Advance(time.Second)
	watch()
	n.clock.Advance(time.Hour)
	watch()
	got := sent("+33611111111")
	if len(got) != 2 || !strings.Contains(got[1], "(critical)") {
		t.Fatalf("SMS to the supervisor on duty after the second alert: %v", got)
	}
	if off, op := sent("+33622222222"), sent("+33633333333"); len(off) != 0 || len(op) != 0 {
		t.Fatalf("SMS to a supervisor off duty %v, to a field operator %v", off, op)
	}
	for _, a := range n.openAlerts(t, model.AlertEventUndispatched) {
		escalated := a.EscalatedAt != nil
		if escalated != (*a.EventID != acked.EventID) {
			t.Fatalf("alert of event %s (critical %s, acked %s): escalated_at %v", *a.EventID, acc.EventID, acked.EventID, a.EscalatedAt)
		}
	}
}
