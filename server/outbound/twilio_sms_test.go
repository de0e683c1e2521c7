package outbound_test

import (
	"context"
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

// fakeTwilio speaks Twilio's Messages resource: POST
// /2010-04-01/Accounts/{sid}/Messages.json, form-encoded, basic auth with the account SID
// and auth token; 201 with the message's sid, or Twilio's error body.
type fakeTwilio struct {
	sid, token string
	mu         sync.Mutex
	got        []map[string]string
}

func (f *fakeTwilio) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if u, pw, ok := r.BasicAuth(); !ok || u != f.sid || pw != f.token {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"code":20003,"message":"Authenticate","more_info":"https://www.twilio.com/docs/errors/20003","status":401}`))
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/2010-04-01/Accounts/"+f.sid+"/Messages.json" ||
		r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if err := r.ParseForm(); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	m := map[string]string{}
	for k := range r.PostForm {
		m[k] = r.PostForm.Get(k)
	}
	f.mu.Lock()
	f.got = append(f.got, m)
	n := len(f.got)
	f.mu.Unlock()
	switch m["To"] {
	case "+15005550001": // Twilio's magic number for an invalid To
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"code":21211,"message":"The 'To' number +15005550001 is not a valid phone number.","more_info":"https://www.twilio.com/docs/errors/21211","status":400}`))
		return
	case "+15005550429":
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"code":20429,"message":"Too Many Requests","status":429}`))
		return
	case "+15005550503":
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"sid":"SM` + strings.Repeat("0", 30) + strconv.Itoa(10+n) + `","status":"queued","to":"` + m["To"] + `"}`))
}

func twilioSender(t *testing.T, f *fakeTwilio, token, sender string) *outbound.HTTPSender {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	g, err := outbound.ParseSMSGateway("twilio+http://" + f.sid + ":" + token + "@" + strings.TrimPrefix(srv.URL, "http://") + "?" + sender)
	if err != nil {
		t.Fatal(err)
	}
	return outbound.NewHTTPSender(outbound.HTTPSenderOptions{SMSGateway: g})
}

func TestTwilioSendSMS(t *testing.T) {
	f := &fakeTwilio{sid: "AC0123456789abcdef0123456789abcdef", token: "tw-s3cret-token"}
	s := twilioSender(t, f, f.token, "from=%2B15005550006")
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		res := s.SendSMS(ctx, model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+33612345678", Body: "FR1|0a1b2c3d|C|FIRE|Z1|45.76404,4.83566|1A2B"})
		if !res.OK() || res.StatusCode != http.StatusCreated || res.MessageID != "SM"+strings.Repeat("0", 30)+"11" {
			t.Fatalf("result %+v", res)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if m := f.got[0]; m["To"] != "+33612345678" || m["From"] != "+15005550006" || m["Body"] != "FR1|0a1b2c3d|C|FIRE|Z1|45.76404,4.83566|1A2B" || len(m) != 3 {
			t.Fatalf("Twilio got %v", m)
		}
	})
	t.Run("MessagingService", func(t *testing.T) {
		ms := twilioSender(t, f, f.token, "messaging_service=MG0123")
		if res := ms.SendSMS(ctx, model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+33612345678", Body: "x"}); !res.OK() {
			t.Fatalf("result %+v", res)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if m := f.got[len(f.got)-1]; m["MessagingServiceSid"] != "MG0123" || m["From"] != "" {
			t.Fatalf("Twilio got %v", m)
		}
	})
	t.Run("StatusCallback", func(t *testing.T) {
		cb := twilioSender(t, f, f.token, "from=%2B15005550006&status_callback=https%3A%2F%2Frelay.example%3A8443%2F")
		if res := cb.SendSMS(ctx, model.OutboundSMS{TenantID: "0190a000-0000-7000-8000-000000000009", ID: "m1", To: "+33612345678", Body: "x"}); !res.OK() {
			t.Fatalf("result %+v", res)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if m := f.got[len(f.got)-1]; m["StatusCallback"] != "https://relay.example:8443/v1/sms/twilio/0190a000-0000-7000-8000-000000000009/status" {
			t.Fatalf("Twilio got %v", m)
		}
	})
	t.Run("InvalidNumberIsPermanent", func(t *testing.T) {
		res := s.SendSMS(ctx, model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+15005550001", Body: "x"})
		if res.OK() || !res.Permanent || res.StatusCode != http.StatusBadRequest || !strings.Contains(res.Detail, "21211") {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("TooManyRequestsRetryAfter", func(t *testing.T) {
		res := s.SendSMS(ctx, model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+15005550429", Body: "x"})
		if res.OK() || res.Permanent || res.RetryAfter != 30*time.Second {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("UnavailableRetried", func(t *testing.T) {
		res := s.SendSMS(ctx, model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+15005550503", Body: "x"})
		if res.OK() || res.Permanent || res.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("BadTokenRetriedAndNotShown", func(t *testing.T) {
		res := twilioSender(t, f, "wrong-token", "from=%2B15005550006").SendSMS(ctx, model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+33612345678", Body: "x"})
		if res.OK() || res.Permanent || res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.Detail, "20003") {
			t.Fatalf("result %+v", res)
		}
		if strings.Contains(res.Detail, "wrong-token") {
			t.Fatalf("the detail shows the token: %q", res.Detail)
		}
	})
}
