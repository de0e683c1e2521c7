package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// patchWebhook runs UpdateWebhook in its own transaction.
func (n *deliveryNode) patchWebhook(t *testing.T, id string, in model.WebhookPatch) *model.Webhook {
	t.Helper()
	if err := n.e.CheckWebhookPatch(context.Background(), &in); err != nil {
		t.Fatalf("check: %v", err)
	}
	var w *model.Webhook
	mustDo(t, func() (err error) {
		w, err = n.e.UpdateWebhook(context.Background(), n.p, id, in, nil)
		return err
	})
	return w
}

// sendTest runs SendTestWebhook in its own transaction.
func (n *deliveryNode) sendTest(t *testing.T, id string) *model.WebhookTestSent {
	t.Helper()
	var out *model.WebhookTestSent
	mustDo(t, func() (err error) {
		out, err = n.e.SendTestWebhook(context.Background(), n.p, id, nil)
		return err
	})
	return out
}

func (n *deliveryNode) hook(t *testing.T, id string) *model.Webhook {
	t.Helper()
	w, err := n.e.Webhook(context.Background(), n.p, id)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestWebhook_ReenableResetsTheAutoDisableRule: a subscription disabled by failures comes
// back with its counters at zero and five fresh days, without a new secret; it is
// disabled again only by the rule counted from the re-enabling.
func TestWebhook_ReenableResetsTheAutoDisableRule(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	n.retry = []time.Duration{time.Second}
	n.open(t)
	w := n.webhook(t, "https://hooks.example/dead", "event.created")
	n.sender.webhook = failing
	fail := func(k int) {
		t.Helper()
		for range k {
			n.post(t, "low", "north")
		}
		n.e.RunDue(ctx)
		n.clock.Advance(time.Second)
		n.e.RunDue(ctx)
	}
	fail(10)
	n.clock.Advance(5 * 24 * time.Hour)
	fail(1)
	if got := n.hook(t, w.ID); got.Status != engine.WebhookDisabled {
		t.Fatalf("not disabled by failures: %+v", got)
	}

	got := n.patchWebhook(t, w.ID, model.WebhookPatch{Enabled: ptr(true)})
	if got.Status != engine.WebhookActive || got.FailedMessages != 0 || got.DisabledReason != "" ||
		got.ReenabledAt == nil || !got.ReenabledAt.Equal(n.clock.Now().Truncate(time.Millisecond)) || got.Secret != "" {
		t.Fatalf("re-enabled: %+v", got)
	}
	// The secret did not change: messages are signed with the one given at creation.
	calls := len(n.sender.calls)
	fail(1)
	if len(n.sender.calls) == calls {
		t.Fatal("the re-enabled subscription was not called")
	}
	// Ten more failures within five days of the re-enabling: still active, although the
	// last success (none) and the creation are more than five days old.
	fail(10)
	if got := n.hook(t, w.ID); got.Status != engine.WebhookActive || got.FailedMessages != 11 {
		t.Fatalf("after 11 failures within 5 days of re-enabling: %+v", got)
	}
	n.clock.Advance(5 * 24 * time.Hour)
	fail(1)
	if got := n.hook(t, w.ID); got.Status != engine.WebhookDisabled {
		t.Fatalf("5 days after re-enabling without a success: %+v", got)
	}
}

func TestWebhook_Patch(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	w := n.webhook(t, "https://93.184.216.34/a", "team.dispatched")

	t.Run("URLAndEvents", func(t *testing.T) {
		got := n.patchWebhook(t, w.ID, model.WebhookPatch{URL: ptr("https://93.184.216.34/b"),
			Events: &[]string{" mission.* ", "mission.*", "event.created"}})
		if got.URL != "https://93.184.216.34/b" || strings.Join(got.Events, ",") != "mission.*,event.created" {
			t.Fatalf("patched: %+v", got)
		}
	})
	t.Run("NothingChanged", func(t *testing.T) {
		before := n.hook(t, w.ID)
		n.clock.Advance(time.Minute)
		got := n.patchWebhook(t, w.ID, model.WebhookPatch{Enabled: ptr(true)})
		if !got.UpdatedAt.Equal(before.UpdatedAt.Time) || got.ReenabledAt != nil {
			t.Fatalf("enabling an active subscription changed it: %+v", got)
		}
	})
	t.Run("Disable", func(t *testing.T) {
		got := n.patchWebhook(t, w.ID, model.WebhookPatch{Enabled: ptr(false)})
		if got.Status != engine.WebhookDisabled || got.DisabledReason == "" {
			t.Fatalf("disabled: %+v", got)
		}
		// A disabled subscription is no delivery target.
		n.post(t, "low", "north")
		n.e.RunDue(ctx)
		if len(n.sender.calls) != 0 {
			t.Fatalf("a disabled subscription was called: %+v", n.sender.calls)
		}
	})
	t.Run("EnableReleasesWaitingEvents", func(t *testing.T) {
		n.patchWebhook(t, w.ID, model.WebhookPatch{Enabled: ptr(true)})
		n.e.RunDue(ctx)
		if got := n.sender.kinds(); len(got) != 1 {
			t.Fatalf("the event that waited for a target: calls %v, want one webhook", got)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		for _, in := range []model.WebhookPatch{
			{URL: ptr("")},
			{URL: ptr("http://93.184.216.34/")},
			{URL: ptr("https://127.0.0.1/")},
			{URL: ptr("https://169.254.169.254/")},
			{Events: &[]string{"nothing.here"}},
			{Events: &[]string{engine.HookWebhookTest}},
			{Events: &[]string{"webhook.*"}},
		} {
			if err := n.e.CheckWebhookPatch(ctx, &in); !model.IsKind(err, model.KindValidation) {
				t.Errorf("%+v: %v, want a validation_error", in, err)
			}
		}
	})
	t.Run("ErrOtherTenant", func(t *testing.T) {
		other := MustCreateTenant(t, n.e, "other")
		p := model.Principal{TenantID: other.Tenant.ID, TenantActive: true, Role: model.RoleCompanyAdmin}
		err := func() error {
			_, err := n.e.UpdateWebhook(context.Background(), p, w.ID, model.WebhookPatch{Enabled: ptr(false)}, nil)
			return err
		}()
		if !model.IsKind(err, model.KindNotFound) {
			t.Fatalf("another tenant's subscription: %v, want not_found", err)
		}
	})
}

func TestWebhook_CreateRefusesTheTestName(t *testing.T) {
	e, _ := MustOpenEngine(t)
	for _, events := range [][]string{{engine.HookWebhookTest}, {"webhook.*"}} {
		in := model.WebhookInput{URL: "https://93.184.216.34/", Events: events}
		if err := e.CheckWebhookInput(context.Background(), &in); !model.IsKind(err, model.KindValidation) {
			t.Errorf("events %v: %v, want a validation_error", events, err)
		}
	}
}

// TestWebhook_TestMessage: POST /v1/webhooks/:id/test's message goes to its one
// subscription whatever its filter, disabled or not, signed, once, and leaves the
// subscription's health alone.
func TestWebhook_TestMessage(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	w := n.webhook(t, "https://hooks.example/t", "team.dispatched")
	n.webhook(t, "https://hooks.example/other") // wants everything, gets no test

	t.Run("OK", func(t *testing.T) {
		sent := n.sendTest(t, w.ID)
		if sent.MessageID == "" || sent.WebhookID != w.ID || sent.Event != engine.HookWebhookTest || sent.Status != "queued" {
			t.Fatalf("answer: %+v", sent)
		}
		n.e.RunDue(ctx)
		if len(n.sender.calls) != 1 || n.sender.calls[0].target != w.URL || n.sender.calls[0].id != sent.MessageID {
			t.Fatalf("calls: %+v", n.sender.calls)
		}
		var env struct {
			Event   string `json:"event"`
			Payload struct {
				WebhookID string `json:"webhook_id"`
			} `json:"payload"`
			TenantID string `json:"tenant_id"`
		}
		if err := json.Unmarshal([]byte(n.sender.calls[0].body), &env); err != nil || env.Event != engine.HookWebhookTest ||
			env.Payload.WebhookID != w.ID || env.TenantID != n.p.TenantID {
			t.Fatalf("envelope %s: %v", n.sender.calls[0].body, err)
		}
		if got := n.hook(t, w.ID); got.LastSuccessAt != nil {
			t.Fatalf("a test message counted as the subscription's success: %+v", got)
		}
	})
	t.Run("FailureIsNotRetriedNorCounted", func(t *testing.T) {
		n.sender.webhook = func(int, model.WebhookMessage) model.SendResult {
			return model.SendResult{StatusCode: 503, RetryAfter: time.Second}
		}
		before := len(n.sender.calls)
		n.sendTest(t, w.ID)
		n.e.RunDue(ctx)
		n.clock.Advance(24 * time.Hour)
		n.e.RunDue(ctx)
		if len(n.sender.calls) != before+1 || n.e.ScheduledCount() != 0 {
			t.Fatalf("%d calls, %d scheduled: a test message is tried once", len(n.sender.calls)-before, n.e.ScheduledCount())
		}
		if got := n.hook(t, w.ID); got.FailedMessages != 0 || got.Status != engine.WebhookActive {
			t.Fatalf("a failed test message counted against the subscription: %+v", got)
		}
		attempts, _, err := n.e.WebhookDeliveries(ctx, n.p, w.ID, model.Page{Limit: 10})
		if err != nil || len(attempts) != 2 || attempts[0].Status != "failed" || attempts[0].StatusCode != 503 ||
			attempts[0].NextAttemptAt != nil || attempts[0].Event != engine.HookWebhookTest {
			t.Fatalf("attempts %+v %v", attempts, err)
		}
		n.sender.webhook = nil
	})
	t.Run("DisabledStillReceivesIt", func(t *testing.T) {
		n.patchWebhook(t, w.ID, model.WebhookPatch{Enabled: ptr(false)})
		before := len(n.sender.calls)
		n.sendTest(t, w.ID)
		n.e.RunDue(ctx)
		if len(n.sender.calls) != before+1 || n.sender.calls[before].target != w.URL {
			t.Fatalf("the disabled subscription got no test message: %+v", n.sender.calls[before:])
		}
		if got := n.hook(t, w.ID); got.Status != engine.WebhookDisabled {
			t.Fatalf("a test message re-enabled the subscription: %+v", got)
		}
	})
	t.Run("ErrUnknown", func(t *testing.T) {
		err := func() error {
			_, err := n.e.SendTestWebhook(context.Background(), n.p, model.NewID(), nil)
			return err
		}()
		if !model.IsKind(err, model.KindNotFound) {
			t.Fatalf("%v, want not_found", err)
		}
	})
}
