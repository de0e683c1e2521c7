package server_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/netguard"
	"github.com/fieldrelay/fieldrelay/server/outbound"
)

// hookReceiver is the Sender of a test node: it keeps every webhook message it is given
// and answers what answer says (200 when nil). answer may move the node's clock, as
// real time moves while a real call is under way.
type hookReceiver struct {
	mu     sync.Mutex
	msgs   []model.WebhookMessage
	answer func(m model.WebhookMessage) model.SendResult
}

var _ model.Sender = (*hookReceiver)(nil)

func (h *hookReceiver) SendWebhook(_ context.Context, m model.WebhookMessage) model.SendResult {
	h.mu.Lock()
	h.msgs = append(h.msgs, m)
	answer := h.answer
	h.mu.Unlock()
	if answer != nil {
		return answer(m)
	}
	return model.SendResult{StatusCode: http.StatusOK}
}

func (h *hookReceiver) SendSMS(context.Context, model.OutboundSMS) model.SendResult {
	return model.SendResult{Err: outbound.ErrNoSMSGateway}
}

func (h *hookReceiver) SMSAvailable() bool { return false }

// received returns the messages sent so far whose envelope names event.
func (h *hookReceiver) received(event string) []model.WebhookMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []model.WebhookMessage
	for _, m := range h.msgs {
		if strings.Contains(string(m.Body), `"event":"`+event+`"`) {
			out = append(out, m)
		}
	}
	return out
}

func TestWebhooks(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	tech := []string{"Authorization", n.login(f.emails["company_tech"])}
	otherKey := []string{"x-svc-api-key", other.key}
	var id string

	t.Run("Create", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", "/v1/webhooks", map[string]any{"url": "https://93.184.216.34/hook",
			"events": []string{"event.*", "team.dispatched"}}, tech...).want(http.StatusCreated)
		id = res.str("id")
		if !strings.HasPrefix(res.str("secret"), "whsec_") || res.str("status") != "active" || res.str("url") != "https://93.184.216.34/hook" {
			t.Fatalf("webhook: %s", res.raw)
		}
	})

	t.Run("ListAndReadHideTheSecret", func(t *testing.T) {
		n := n.on(t)
		list := n.do("GET", "/v1/webhooks", nil, tech...).want(http.StatusOK)
		if list.num("count") != 1 || strings.Contains(string(list.raw), "whsec_") {
			t.Fatalf("list: %s", list.raw)
		}
		one := n.do("GET", "/v1/webhooks/"+id, nil, tech...).want(http.StatusOK)
		if strings.Contains(string(one.raw), "whsec_") {
			t.Fatalf("read shows the secret: %s", one.raw)
		}
		n.do("GET", "/v1/webhooks/"+id+"/deliveries", nil, tech...).want(http.StatusOK)
	})

	t.Run("BadInput", func(t *testing.T) {
		n := n.on(t)
		for _, url := range []string{"", "http://93.184.216.34/hook", "https://", "not a url",
			"https://127.0.0.1/x", "https://2130706433/x", "https://0x7f000001/x", "https://[::ffff:127.0.0.1]/x",
			"https://169.254.169.254/latest", "https://10.0.0.1/x", "https://[fc00::1]/x", "https://localhost/x"} {
			n.do("POST", "/v1/webhooks", map[string]any{"url": url}, tech...).wantErr(http.StatusBadRequest, "validation_error", "url")
		}
		n.do("POST", "/v1/webhooks", map[string]any{"url": "https://93.184.216.34/", "events": []string{"nothing.here"}},
			tech...).wantErr(http.StatusBadRequest, "validation_error", "events")
		if c := n.do("GET", "/v1/webhooks", nil, tech...).num("count"); c != 1 {
			t.Fatalf("refused webhooks were stored: %v", c)
		}
	})

	t.Run("Permissions", func(t *testing.T) {
		n := n.on(t)
		sup := []string{"Authorization", n.login(f.emails["operational_supervisor"])}
		n.do("GET", "/v1/webhooks", nil, sup...).wantErr(http.StatusForbidden, "forbidden")
		n.do("GET", "/v1/webhooks/"+id, nil, otherKey...).wantErr(http.StatusNotFound, "not_found")
		n.do("DELETE", "/v1/webhooks/"+id, nil, otherKey...).wantErr(http.StatusNotFound, "not_found")
	})

	t.Run("Delete", func(t *testing.T) {
		n := n.on(t)
		res := n.do("DELETE", "/v1/webhooks/"+id, nil, tech...).want(http.StatusOK)
		if res.str("id") != id || res.body["deleted"] != true {
			t.Fatalf("delete: %s", res.raw)
		}
		n.do("GET", "/v1/webhooks/"+id, nil, tech...).wantErr(http.StatusNotFound, "not_found")
		n.do("DELETE", "/v1/webhooks/"+id, nil, tech...).wantErr(http.StatusNotFound, "not_found")
	})
}

// TestWebhooks_Patch: PATCH /v1/webhooks/:id brings back a subscription that a 410
// disabled, with its secret, and changes its URL and events under the rules of creation.
func TestWebhooks_Patch(t *testing.T) {
	gone := true
	rcv := &hookReceiver{}
	rcv.answer = func(model.WebhookMessage) model.SendResult {
		if gone {
			return model.SendResult{StatusCode: http.StatusGone}
		}
		return model.SendResult{StatusCode: http.StatusOK}
	}
	n := newNodeWith(t, nodeOptions{sender: rcv})
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	tech := []string{"Authorization", n.login(f.emails["company_tech"])}
	created := n.do("POST", "/v1/webhooks", map[string]any{"url": "https://93.184.216.34/in", "events": []string{"event.created"}},
		tech...).want(http.StatusCreated)
	id, secret := created.str("id"), created.str("secret")
	ctx := context.Background()

	t.Run("EnableAfterA410", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/events", eventBody("p-1"), "x-svc-api-key", f.key).want(http.StatusCreated)
		n.eng.RunDue(ctx)
		if got := n.do("GET", "/v1/webhooks/"+id, nil, tech...).want(http.StatusOK); got.str("status") != "disabled" ||
			got.str("disabled_reason") == "" || got.num("failed_messages") != 1 {
			t.Fatalf("after a 410: %s", got.raw)
		}
		gone = false
		n.clock.Advance(time.Minute)
		res := n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"enabled": true}, tech...).want(http.StatusOK)
		if res.str("status") != "active" || res.num("failed_messages") != 0 || res.body["disabled_reason"] != nil ||
			res.str("reenabled_at") != model.At(n.clock.Now()).Format(model.TimeLayout) || res.str("url") != "https://93.184.216.34/in" {
			t.Fatalf("re-enabled: %s", res.raw)
		}
		if strings.Contains(string(res.raw), "whsec_") || res.body["secret"] != nil {
			t.Fatalf("PATCH shows the secret: %s", res.raw)
		}
		// The subscription works again, with the secret of its creation.
		n.do("POST", "/v1/events", eventBody("p-2"), "x-svc-api-key", f.key).want(http.StatusCreated)
		n.eng.RunDue(ctx)
		msgs := rcv.received("event.created")
		if len(msgs) != 2 || msgs[1].Secret != secret {
			t.Fatalf("%d messages; the second signed with the creation's secret: %v", len(msgs), len(msgs) == 2 && msgs[1].Secret == secret)
		}
	})

	t.Run("Disable", func(t *testing.T) {
		n := n.on(t)
		res := n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"enabled": false}, tech...).want(http.StatusOK)
		if res.str("status") != "disabled" || res.str("disabled_reason") == "" {
			t.Fatalf("disabled: %s", res.raw)
		}
		n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"enabled": true}, tech...).want(http.StatusOK)
	})

	t.Run("URLAndEvents", func(t *testing.T) {
		n := n.on(t)
		res := n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"url": "https://93.184.216.35/moved",
			"events": []string{"mission.*"}}, tech...).want(http.StatusOK)
		if res.str("url") != "https://93.184.216.35/moved" || fmt.Sprint(res.body["events"]) != "[mission.*]" {
			t.Fatalf("patched: %s", res.raw)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		n := n.on(t)
		for _, url := range []string{"", "http://93.184.216.34/", "https://127.0.0.1/x", "https://localhost/x",
			"https://[::1]/x", "https://169.254.169.254/latest", "https://169.254.1.1/", "https://10.0.0.1/x"} {
			n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"url": url}, tech...).wantErr(http.StatusBadRequest, "validation_error", "url")
		}
		for _, events := range [][]string{{"nothing.here"}, {"webhook.test"}, {"webhook.*"}} {
			n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"events": events}, tech...).wantErr(http.StatusBadRequest, "validation_error", "events")
		}
		n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"enabled": "yes"}, tech...).wantErr(http.StatusBadRequest, "validation_error", "enabled")
		if got := n.do("GET", "/v1/webhooks/"+id, nil, tech...); got.str("url") != "https://93.184.216.35/moved" {
			t.Fatalf("a refused PATCH changed the subscription: %s", got.raw)
		}
	})

	t.Run("IdempotentReplay", func(t *testing.T) {
		n := n.on(t)
		k := []string{tech[0], tech[1], "Idempotency-Key", "patch-1"}
		first := n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"events": []string{"team.dispatched"}}, k...).want(http.StatusOK)
		// Changed meanwhile: a replay answers the first answer, and changes nothing.
		n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"events": []string{"mission.*"}}, tech...).want(http.StatusOK)
		again := n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"events": []string{"team.dispatched"}}, k...).want(http.StatusOK)
		if again.header.Get("Idempotent-Replayed") != "true" || string(again.raw) != string(first.raw) {
			t.Fatalf("replay: %s %s", again.header.Get("Idempotent-Replayed"), again.raw)
		}
		if got := n.do("GET", "/v1/webhooks/"+id, nil, tech...); fmt.Sprint(got.body["events"]) != "[mission.*]" {
			t.Fatalf("the replay ran again: %s", got.raw)
		}
		n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"events": []string{"event.*"}}, k...).
			wantErr(http.StatusUnprocessableEntity, "idempotency_key_reused")
	})

	t.Run("ErrOtherTenant", func(t *testing.T) {
		n := n.on(t)
		n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"enabled": false}, "x-svc-api-key", other.key).wantErr(http.StatusNotFound, "not_found")
		n.do("PATCH", "/v1/webhooks/"+model.NewID(), map[string]any{"enabled": false}, tech...).wantErr(http.StatusNotFound, "not_found")
		if got := n.do("GET", "/v1/webhooks/"+id, nil, tech...); got.str("status") != "active" {
			t.Fatalf("another tenant's PATCH changed it: %s", got.raw)
		}
	})

	t.Run("ErrPermission", func(t *testing.T) {
		n := n.on(t)
		for _, role := range []string{"operational_supervisor", "field_operator", "corporate_client", "api_user"} {
			h := []string{"Authorization", n.login(f.emails[role])}
			n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"enabled": false}, h...).wantErr(http.StatusForbidden, "forbidden")
		}
		admin := []string{"Authorization", n.login(f.emails["company_admin"])}
		n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"enabled": true}, admin...).want(http.StatusOK)
	})
}

// TestWebhooks_SendTest: POST /v1/webhooks/:id/test sends a webhook.test message through
// the real HTTP sender to a real HTTPS receiver, signed as every webhook; its attempt, timed,
// is in the deliveries.
func TestWebhooks_SendTest(t *testing.T) {
	type received struct {
		header http.Header
		body   []byte
	}
	got := make(chan received, 4)
	var n *node
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{r.Header.Clone(), body}
		n.clock.Advance(250 * time.Millisecond) // the receiver takes a quarter of a second
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	loopback := netguard.AddressPolicy{AllowLoopback: true}
	n = newNodeWith(t, nodeOptions{webhookPolicy: loopback,
		sender: outbound.NewHTTPSender(outbound.HTTPSenderOptions{Policy: loopback, RootCAs: pool})})
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	tech := []string{"Authorization", n.login(f.emails["company_tech"])}
	// Subscribed to team.dispatched only: the test goes whatever the filter.
	created := n.do("POST", "/v1/webhooks", map[string]any{"url": srv.URL + "/in", "events": []string{"team.dispatched"}},
		tech...).want(http.StatusCreated)
	id, secret := created.str("id"), created.str("secret")
	ctx := context.Background()

	t.Run("SignedAndLogged", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", "/v1/webhooks/"+id+"/test", nil, tech...).want(http.StatusAccepted)
		msgID := res.str("message_id")
		if msgID == "" || res.str("webhook_id") != id || res.str("event") != "webhook.test" || res.str("status") != "queued" {
			t.Fatalf("answer: %s", res.raw)
		}
		if n.eng.RunDue(ctx) != 1 {
			t.Fatal("no attempt was due")
		}
		r := <-got
		if err := outbound.VerifyWebhookAt(secret, r.header, r.body, n.clock.Now()); err != nil {
			t.Fatalf("the signature does not verify: %v", err)
		}
		var env struct {
			Event    string         `json:"event"`
			Payload  map[string]any `json:"payload"`
			TenantID string         `json:"tenant_id"`
		}
		if err := json.Unmarshal(r.body, &env); err != nil || env.Event != "webhook.test" || env.Payload["webhook_id"] != id ||
			env.TenantID != f.tenant.ID || r.header.Get("webhook-id") != msgID {
			t.Fatalf("message %s %v (webhook-id %s)", r.body, err, r.header.Get("webhook-id"))
		}
		list := n.do("GET", "/v1/webhooks/"+id+"/deliveries", nil, tech...).want(http.StatusOK).items()
		if len(list) != 1 || list[0]["message_id"] != msgID || list[0]["event"] != "webhook.test" ||
			list[0]["status"] != "succeeded" || list[0]["status_code"] != 204.0 || list[0]["duration_ms"] != 250.0 {
			t.Fatalf("deliveries: %v", list)
		}
		// A probe is no success of the subscription.
		if wh := n.do("GET", "/v1/webhooks/"+id, nil, tech...); wh.body["last_success_at"] != nil {
			t.Fatalf("the test counted as a success: %s", wh.raw)
		}
	})

	t.Run("DisabledStillTested", func(t *testing.T) {
		n := n.on(t)
		n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"enabled": false}, tech...).want(http.StatusOK)
		n.do("POST", "/v1/webhooks/"+id+"/test", nil, tech...).want(http.StatusAccepted)
		n.eng.RunDue(ctx)
		r := <-got
		if err := outbound.VerifyWebhookAt(secret, r.header, r.body, n.clock.Now()); err != nil {
			t.Fatalf("the signature does not verify: %v", err)
		}
		if wh := n.do("GET", "/v1/webhooks/"+id, nil, tech...); wh.str("status") != "disabled" {
			t.Fatalf("a test re-enabled the subscription: %s", wh.raw)
		}
	})

	t.Run("IdempotentReplay", func(t *testing.T) {
		n := n.on(t)
		k := []string{tech[0], tech[1], "Idempotency-Key", "test-1"}
		first := n.do("POST", "/v1/webhooks/"+id+"/test", nil, k...).want(http.StatusAccepted)
		again := n.do("POST", "/v1/webhooks/"+id+"/test", nil, k...).want(http.StatusAccepted)
		if again.header.Get("Idempotent-Replayed") != "true" || again.str("message_id") != first.str("message_id") {
			t.Fatalf("replay: %s", again.raw)
		}
		if n.eng.RunDue(ctx) != 1 {
			t.Fatal("the replay queued a second message")
		}
		<-got
		n.do("POST", "/v1/webhooks/"+id+"/test", map[string]any{"note": "other"}, k...).
			wantErr(http.StatusUnprocessableEntity, "idempotency_key_reused")
	})

	t.Run("Errors", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/webhooks/"+id+"/test", nil, "x-svc-api-key", other.key).wantErr(http.StatusNotFound, "not_found")
		n.do("POST", "/v1/webhooks/"+model.NewID()+"/test", nil, tech...).wantErr(http.StatusNotFound, "not_found")
		sup := []string{"Authorization", n.login(f.emails["operational_supervisor"])}
		n.do("POST", "/v1/webhooks/"+id+"/test", nil, sup...).wantErr(http.StatusForbidden, "forbidden")
		if n.eng.RunDue(ctx) != 0 {
			t.Fatal("a refused test queued a message")
		}
	})
}

// TestWebhooks_LinkLocalNeedsItsOwnFlag: on a node that allows loopback destinations,
// link-local and metadata ones are still refused at creation and by PATCH.
func TestWebhooks_LinkLocalNeedsItsOwnFlag(t *testing.T) {
	n := newNodeWith(t, nodeOptions{webhookPolicy: netguard.AddressPolicy{AllowLoopback: true}})
	f := n.addTenant("acme", "core")
	key := []string{"x-svc-api-key", f.key}
	for _, url := range []string{"https://169.254.1.1/", "https://[fe80::1]/", "https://169.254.169.254/latest/meta-data/",
		"https://[fd00:ec2::254]/", "https://2852039166/"} {
		res := n.do("POST", "/v1/webhooks", map[string]any{"url": url}, key...).wantErr(http.StatusBadRequest, "validation_error", "url")
		if !strings.Contains(res.str("message"), "link-local") && !strings.Contains(res.str("message"), "metadata") {
			t.Errorf("%s: %s", url, res.str("message"))
		}
	}
	id := n.do("POST", "/v1/webhooks", map[string]any{"url": "https://127.0.0.1:8443/in"}, key...).want(http.StatusCreated).str("id")
	n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"url": "https://169.254.10.10/in"}, key...).
		wantErr(http.StatusBadRequest, "validation_error", "url")
	n.do("PATCH", "/v1/webhooks/"+id, map[string]any{"url": "https://[::1]:9443/in"}, key...).want(http.StatusOK)

	ll := newNodeWith(t, nodeOptions{webhookPolicy: netguard.AddressPolicy{AllowLinkLocal: true}})
	g := ll.addTenant("acme", "core")
	ll.do("POST", "/v1/webhooks", map[string]any{"url": "https://169.254.1.1/"}, "x-svc-api-key", g.key).want(http.StatusCreated)
	ll.do("POST", "/v1/webhooks", map[string]any{"url": "https://169.254.169.254/"}, "x-svc-api-key", g.key).
		wantErr(http.StatusBadRequest, "validation_error", "url")
}
