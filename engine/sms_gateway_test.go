package engine_test

import (
	"context"
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
