package engine_test

import (
	"context"
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
