package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestDelivery_SMSRefusedForGood: an SMS the gateway refuses for good (an invalid number:
// SendResult.Permanent) ends after its one attempt, and the event whose only channel it
// was fails at once; a refusal that is not for good (a 503) is retried on the schedule.
func TestDelivery_SMSRefusedForGood(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		res       model.SendResult
		calls     int // after the whole retry schedule
		eventWant string
	}{
		{"InvalidNumber", model.SendResult{StatusCode: 400, Permanent: true, Detail: "Twilio error 21211"}, 1, model.EventFailed},
		{"Unavailable", model.SendResult{StatusCode: 503}, 8, model.EventFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newDeliveryNode(t, true, false)
			n.sender.smsFn = func(int, string) model.SendResult { return tc.res }
			n.setZone(t, model.ConnDegraded)
			acc := n.post(t, "critical", "north")
			n.e.RunDue(ctx)
			if got := n.sender.kinds(); len(got) != 1 || got[0] != "sms" {
				t.Fatalf("calls %v, want one SMS", got)
			}
			if tc.res.Permanent {
				if ev := n.event(t, acc.EventID); ev.Status != tc.eventWant {
					t.Fatalf("event %s after a refusal for good, want %s", ev.Status, tc.eventWant)
				}
			}
			// The whole retry schedule (7 retries, 10 h at most apart) goes by.
			for range 8 {
				n.clock.Advance(11 * time.Hour)
				n.e.RunDue(ctx)
			}
			if got := n.sender.kinds(); len(got) != tc.calls {
				t.Fatalf("%d SMS calls, want %d", len(got), tc.calls)
			}
			if ev := n.event(t, acc.EventID); ev.Status != tc.eventWant {
				t.Fatalf("event %s, want %s", ev.Status, tc.eventWant)
			}
		})
	}
}

// TestSMSGatewayPrincipal: a gateway's webhook acts for the tenant its URL names with
// sms:inbound only; an unknown or malformed tenant is not_found, a suspended one
// tenant_suspended.
func TestSMSGatewayPrincipal(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, true, false)
	p, err := n.e.SMSGatewayPrincipal(ctx, n.p.TenantID, "android")
	if err != nil {
		t.Fatal(err)
	}
	if p.TenantID != n.p.TenantID || p.KeyID != "sms-gateway:android" || !p.Can(model.PermSMSInbound) || p.Can(model.PermEventsWrite) {
		t.Fatalf("principal %+v", p)
	}
	for _, id := range []string{"0190a000-0000-7000-8000-000000000001", "not-an-id"} {
		if _, err := n.e.SMSGatewayPrincipal(ctx, id, "android"); !model.IsKind(err, model.KindNotFound) {
			t.Fatalf("tenant %q: %v, want not_found", id, err)
		}
	}
	if _, err := n.e.AdminSetTenantStatus(ctx, "acme", engine.TenantSuspended); err != nil {
		t.Fatal(err)
	}
	if _, err := n.e.SMSGatewayPrincipal(ctx, n.p.TenantID, "twilio"); !model.IsKind(err, model.KindTenantSuspended) {
		t.Fatalf("a suspended tenant: %v", err)
	}
}

// TestSMSWebhookKey: each tenant's Android signing key differs and follows the node's secret.
func TestSMSWebhookKey(t *testing.T) {
	a := engine.SMSWebhookKey([]byte("secret one"), "tenant-a")
	if len(a) != 32 || a == engine.SMSWebhookKey([]byte("secret one"), "tenant-b") || a == engine.SMSWebhookKey([]byte("secret two"), "tenant-a") ||
		a != engine.SMSWebhookKey([]byte("secret one"), "tenant-a") {
		t.Fatalf("keys: %s", a)
	}
}

// TestSMSOutboundRecord: each SMS sent has a record, pending from its dispatch, sent with
// the gateway's id once accepted (after a retry here), then moved by the gateway's
// delivery reports, found by the gateway's id or by the node's own (which SMS Gateway for
// Android takes as its id); a report on a delivered SMS changes nothing, and an SMS the
// gateway refused for good is failed.
func TestSMSOutboundRecord(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, true, false)
	n.sender.smsFn = func(k int, to string) model.SendResult {
		if k == 1 {
			return model.SendResult{StatusCode: 503}
		}
		return model.SendResult{StatusCode: 202, MessageID: "gw-1"}
	}
	n.setZone(t, model.ConnDegraded)
	acc := n.post(t, "critical", "north")
	list := func() []model.SMSOutbound {
		t.Helper()
		ms, _, err := n.e.SMSOutbounds(ctx, n.p, model.Page{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	if ms := list(); len(ms) != 1 || ms[0].Status != model.SMSPending || ms[0].Attempts != 0 || ms[0].Encoding != "GSM-7" ||
		ms[0].Segments != 1 || ms[0].EventID == nil || *ms[0].EventID != acc.EventID || ms[0].To != "+33600000001" {
		t.Fatalf("records at dispatch: %+v", ms)
	}
	n.e.RunDue(ctx)
	if ms := list(); ms[0].Status != model.SMSPending || ms[0].Attempts != 1 || ms[0].Error == "" {
		t.Fatalf("after a 503: %+v", ms[0])
	}
	n.clock.Advance(6 * time.Second)
	n.e.RunDue(ctx)
	sms := list()[0]
	if sms.Status != model.SMSSent || sms.Attempts != 2 || sms.GatewayMessageID != "gw-1" || sms.Error != "" {
		t.Fatalf("after the gateway accepted it: %+v", sms)
	}

	gw, err := n.e.SMSGatewayPrincipal(ctx, n.p.TenantID, "twilio")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.e.ReportSMSDelivery(ctx, n.p, model.SMSDeliveryReport{GatewayMessageID: "gw-1", Status: model.SMSDelivered}); !model.IsKind(err, model.KindForbidden) {
		t.Fatalf("a report from a user: %v", err)
	}
	got, err := n.e.ReportSMSDelivery(ctx, gw, model.SMSDeliveryReport{GatewayMessageID: "gw-1", Status: model.SMSDelivered})
	if err != nil || got.Status != model.SMSDelivered || got.DeliveredAt == nil {
		t.Fatalf("delivered: %+v, %v", got, err)
	}
	got, err = n.e.ReportSMSDelivery(ctx, gw, model.SMSDeliveryReport{GatewayMessageID: "gw-1", Status: model.SMSFailed, Reason: "late"})
	if err != nil || got.Status != model.SMSDelivered {
		t.Fatalf("a failure after delivery: %+v, %v", got, err)
	}
	for _, id := range []string{"gw-404", model.NewID()} {
		if _, err := n.e.ReportSMSDelivery(ctx, gw, model.SMSDeliveryReport{GatewayMessageID: id, Status: model.SMSDelivered}); !model.IsKind(err, model.KindNotFound) {
			t.Fatalf("a report on %s: %v", id, err)
		}
	}

	// A second SMS, refused for good: failed. A third, accepted without an id of the
	// gateway's, is found by the node's own id.
	n.sender.smsFn = func(int, string) model.SendResult {
		return model.SendResult{StatusCode: 400, Permanent: true, Detail: "invalid number"}
	}
	n.post(t, "critical", "north")
	n.e.RunDue(ctx)
	if ms := list(); ms[0].Status != model.SMSFailed || ms[0].Attempts != 1 || ms[0].Error == "" {
		t.Fatalf("refused for good: %+v", ms[0])
	}
	n.sender.smsFn = func(int, string) model.SendResult { return model.SendResult{StatusCode: 202} }
	n.post(t, "critical", "north")
	n.e.RunDue(ctx)
	third := list()[0]
	got, err = n.e.ReportSMSDelivery(ctx, gw, model.SMSDeliveryReport{GatewayMessageID: third.ID, Status: model.SMSFailed, Reason: "RESULT_ERROR_NO_SERVICE"})
	if err != nil || got.Status != model.SMSFailed || got.Error != "the gateway reported it undelivered: RESULT_ERROR_NO_SERVICE" {
		t.Fatalf("failed by the node's id: %+v, %v", got, err)
	}
}

// TestSMSRecipientRateLimit: a phone gets at most 5 SMS in 15 minutes and 11 in an hour;
// one more is held back (no call, its record held, the event it delivered failed, counted
// in Stats), and an SMS of a critical event goes out all the same.
func TestSMSRecipientRateLimit(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, true, false)
	n.setZone(t, model.ConnDegraded)
	calls := func() int { return len(n.sender.kinds()) }
	send := func(priority string) model.EventAccepted {
		t.Helper()
		n.setZone(t, model.ConnDegraded) // a report a minute keeps the zone's state in force
		acc := n.post(t, priority, "north")
		n.e.RunDue(ctx)
		return acc
	}
	latest := func() model.SMSOutbound {
		t.Helper()
		ms, _, err := n.e.SMSOutbounds(ctx, n.p, model.Page{Limit: 1})
		if err != nil || len(ms) != 1 {
			t.Fatalf("SMSOutbounds: %v %v", ms, err)
		}
		return ms[0]
	}
	for range 5 {
		send("normal")
		n.clock.Advance(time.Minute)
	}
	if calls() != 5 {
		t.Fatalf("%d calls for 5 SMS", calls())
	}
	held := send("high")
	if calls() != 5 || latest().Status != model.SMSHeld || !strings.Contains(latest().Error, "within 15m0s") {
		t.Fatalf("the 6th SMS in 15 minutes: %d calls, %+v", calls(), latest())
	}
	if ev := n.event(t, held.EventID); ev.Status != model.EventFailed {
		t.Fatalf("the event of a held SMS: %s, want failed (its only channel)", ev.Status)
	}
	if st := n.e.Stats(); st.SMSHeld != 1 {
		t.Fatalf("Stats.SMSHeld = %d", st.SMSHeld)
	}
	send("critical")
	if calls() != 6 || latest().Status != model.SMSSent {
		t.Fatalf("a critical SMS: %d calls, %+v", calls(), latest())
	}
	// 15 minutes after the critical one, 5 more 4 minutes apart fit in every 15 minutes,
	// and make the hour's 11.
	n.clock.Advance(15 * time.Minute)
	for range 5 {
		send("normal")
		n.clock.Advance(4 * time.Minute)
	}
	if calls() != 11 {
		t.Fatalf("%d calls, want 11 within the hour", calls())
	}
	send("normal")
	if calls() != 11 || latest().Status != model.SMSHeld || !strings.Contains(latest().Error, "within 1h0m0s") {
		t.Fatalf("the 12th SMS in an hour: %d calls, %+v", calls(), latest())
	}
}

// downSender is a fakeSender whose SMS gateway reports itself down.
type downSender struct{ *fakeSender }

func (downSender) SMSGatewayState() string { return "down" }

// TestDelivery_SMSGatewayDown: while the SMS gateway is down, the sms channel drops out of
// a plan that has another channel, and stays in one where it is the only way out (its
// messages wait for the gateway on the retry schedule).
func TestDelivery_SMSGatewayDown(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, true, true)
	n.db, n.e = reopen(t, n.dir, n.db, engine.Options{Clock: n.clock, Sender: downSender{n.sender}})
	if st := n.e.SMSGatewayState(); st != "down" {
		t.Fatalf("SMSGatewayState = %q", st)
	}
	if st := n.e.Stats(); st.SMSGateway != "down" {
		t.Fatalf("Stats.SMSGateway = %q", st.SMSGateway)
	}
	acc := n.post(t, "critical", "north") // online: rest_full then sms, both at once for critical
	n.e.RunDue(ctx)
	if ev := n.event(t, acc.EventID); len(ev.Delivery.Plan) != 1 || ev.Delivery.Plan[0] != model.ChannelREST {
		t.Fatalf("plan with the gateway down: %v", ev.Delivery.Plan)
	}
	if got := n.sender.kinds(); len(got) != 1 || got[0] != "webhook" {
		t.Fatalf("calls %v, want the webhook only", got)
	}
	n.setZone(t, model.ConnDegraded)
	acc = n.post(t, "critical", "north") // degraded: sms only
	if ev := n.event(t, acc.EventID); len(ev.Delivery.Plan) != 1 || ev.Delivery.Plan[0] != model.ChannelSMS {
		t.Fatalf("plan of a degraded zone with the gateway down: %v", ev.Delivery.Plan)
	}
}
