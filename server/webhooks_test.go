package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
)

// hookReceiver is the Sender of a test node: it keeps every webhook message it is given
// and answers what answer says (200 when nil). answer may move the node's clock, as
// real time moves while a real call is under way.
type hookReceiver struct {
	mu     sync.Mutex
	msgs   []engine.WebhookMessage
	answer func(m engine.WebhookMessage) engine.SendResult
}

var _ engine.Sender = (*hookReceiver)(nil)

func (h *hookReceiver) SendWebhook(_ context.Context, m engine.WebhookMessage) engine.SendResult {
	h.mu.Lock()
	h.msgs = append(h.msgs, m)
	answer := h.answer
	h.mu.Unlock()
	if answer != nil {
		return answer(m)
	}
	return engine.SendResult{StatusCode: http.StatusOK}
}

func (h *hookReceiver) SendSMS(context.Context, string, string) engine.SendResult {
	return engine.SendResult{Err: engine.ErrNoSMSGateway}
}

func (h *hookReceiver) SMSAvailable() bool { return false }

// received returns the messages sent so far whose envelope names event.
func (h *hookReceiver) received(event string) []engine.WebhookMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []engine.WebhookMessage
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
