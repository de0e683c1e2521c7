package outbound_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server/outbound"
)

// fakePhone speaks the local server of SMS Gateway for Android: POST /message with basic
// auth and {textMessage: {text}, phoneNumbers}; 202 with the message's id and state. A
// number in fail answers that status (400 with the app's error body for a refused number).
type fakePhone struct {
	user, pass string
	mu         sync.Mutex
	got        []map[string]any
	fail       map[string]int
	retryAfter string
}

func (p *fakePhone) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if u, pw, ok := r.BasicAuth(); !ok || u != p.user || pw != p.pass {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/message" || r.Header.Get("Content-Type") != "application/json" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	var m map[string]any
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.got = append(p.got, m)
	n := len(p.got)
	p.mu.Unlock()
	to := m["phoneNumbers"].([]any)[0].(string)
	w.Header().Set("Content-Type", "application/json")
	if st := p.fail[to]; st != 0 {
		if p.retryAfter != "" {
			w.Header().Set("Retry-After", p.retryAfter)
		}
		w.WriteHeader(st)
		_, _ = w.Write([]byte(`{"message":"Invalid phone number"}`))
		return
	}
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"id":"msg-` + strconv.Itoa(n) + `","state":"Pending","isHashed":false,"isEncrypted":false,` +
		`"recipients":[{"phoneNumber":"` + to + `","state":"Pending"}],"states":{}}`))
}

func androidSender(t *testing.T, p *fakePhone) *outbound.HTTPSender {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	g, err := outbound.ParseSMSGateway("android+http://" + p.user + ":" + p.pass + "@" + strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return outbound.NewHTTPSender(outbound.HTTPSenderOptions{SMSGateway: g})
}

func TestAndroidSendSMS(t *testing.T) {
	p := &fakePhone{user: "sms", pass: "s3cret-pass", fail: map[string]int{
		"+33000000000": http.StatusBadRequest, "+33100000000": http.StatusInternalServerError, "+33200000000": http.StatusTooManyRequests}}
	s := androidSender(t, p)
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		res := s.SendSMS(ctx, model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+33612345678", Body: "FR1|M|7KQ2M|…\nReply FR1 ACK 7KQ2M"})
		if !res.OK() || res.StatusCode != http.StatusAccepted || res.MessageID != "msg-1" || res.Permanent {
			t.Fatalf("result %+v", res)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		m := p.got[0]
		if m["textMessage"].(map[string]any)["text"] != "FR1|M|7KQ2M|…\nReply FR1 ACK 7KQ2M" || m["withDeliveryReport"] != true || m["id"] != "m1" {
			t.Fatalf("the phone got %v", m)
		}
		if nums := m["phoneNumbers"].([]any); len(nums) != 1 || nums[0] != "+33612345678" {
			t.Fatalf("phoneNumbers %v", nums)
		}
	})
	t.Run("InvalidNumberIsPermanent", func(t *testing.T) {
		res := s.SendSMS(ctx, model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+33000000000", Body: "x"})
		if res.OK() || !res.Permanent || res.StatusCode != http.StatusBadRequest || !strings.Contains(res.Detail, "Invalid phone number") {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("ServerErrorRetried", func(t *testing.T) {
		res := s.SendSMS(ctx, model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+33100000000", Body: "x"})
		if res.OK() || res.Permanent || res.StatusCode != http.StatusInternalServerError {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("TooManyRequestsRetryAfter", func(t *testing.T) {
		p.retryAfter = "120"
		res := s.SendSMS(ctx, model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+33200000000", Body: "x"})
		if res.OK() || res.Permanent || res.StatusCode != http.StatusTooManyRequests || res.RetryAfter != 2*time.Minute {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("WrongPasswordRetried", func(t *testing.T) {
		// The operator may mend the credentials and restart: a 401 is retried.
		srv := httptest.NewServer(p)
		defer srv.Close()
		g, err := outbound.ParseSMSGateway("android+http://sms:wrong-pass@" + strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		res := outbound.NewHTTPSender(outbound.HTTPSenderOptions{SMSGateway: g}).SendSMS(ctx, model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+33612345678", Body: "x"})
		if res.OK() || res.Permanent || res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("result %+v", res)
		}
	})
}

func TestAndroidWebhookSignature(t *testing.T) {
	body := []byte(`{"deviceId":"d1","event":"sms:received","id":"Ey6ECgOkVVFjz3CL48B8C","payload":{"message":"FR1 ACK 7KQ2M","phoneNumber":"+33612345678","receivedAt":"2026-11-26T10:00:00.000+01:00"},"webhookId":"w1"}`)
	now := time.Unix(1_790_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	key := "0123456789abcdef0123456789abcdef"
	sig := outbound.SignAndroidWebhook(key, body, ts)
	if err := outbound.VerifyAndroidWebhook(key, body, ts, sig, now.Add(4*time.Minute)); err != nil {
		t.Fatal(err)
	}
	for name, check := range map[string]func() error{
		"OtherKey":  func() error { return outbound.VerifyAndroidWebhook(key+"x", body, ts, sig, now) },
		"OtherBody": func() error { return outbound.VerifyAndroidWebhook(key, append(body, ' '), ts, sig, now) },
		"OtherStamp": func() error {
			return outbound.VerifyAndroidWebhook(key, body, strconv.FormatInt(now.Unix()+1, 10), sig, now)
		},
		"NotHex":  func() error { return outbound.VerifyAndroidWebhook(key, body, ts, "zz", now) },
		"NoStamp": func() error { return outbound.VerifyAndroidWebhook(key, body, "", sig, now) },
		"Replay":  func() error { return outbound.VerifyAndroidWebhook(key, body, ts, sig, now.Add(6*time.Minute)) },
		"Future":  func() error { return outbound.VerifyAndroidWebhook(key, body, ts, sig, now.Add(-6*time.Minute)) },
	} {
		t.Run(name, func(t *testing.T) {
			if err := check(); !model.IsKind(err, model.KindUnauthorized) {
				t.Fatalf("%v, want unauthorized", err)
			}
		})
	}
}
