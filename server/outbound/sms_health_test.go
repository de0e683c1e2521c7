package outbound_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server/outbound"
)

// TestSMSGatewayHealth: SMS Gateway for Android's GET /health (basic auth) says whether
// the phone is up; a "fail" status, a 5xx or no answer is down; a call's answer says it too.
func TestSMSGatewayHealth(t *testing.T) {
	var status atomic.Value
	status.Store("pass")
	var code atomic.Int32
	code.Store(200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "sms" || p != "s3cret-pass" || r.URL.Path != "/health" || r.Method != http.MethodGet {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(code.Load()))
		_, _ = w.Write([]byte(`{"status":"` + status.Load().(string) + `","version":"1.40.0","checks":{}}`))
	}))
	g, err := outbound.ParseSMSGateway("android+http://sms:s3cret-pass@" + strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	s := outbound.NewHTTPSender(outbound.HTTPSenderOptions{SMSGateway: g})
	ctx := context.Background()
	if st := s.SMSGatewayState(); st != outbound.SMSGatewayUnknown {
		t.Fatalf("before any probe: %s", st)
	}
	if err := s.ProbeSMS(ctx); err != nil || s.SMSGatewayState() != outbound.SMSGatewayUp {
		t.Fatalf("a passing phone: %v, %s", err, s.SMSGatewayState())
	}
	status.Store("fail")
	if err := s.ProbeSMS(ctx); !model.IsKind(err, model.KindUnavailable) || s.SMSGatewayState() != outbound.SMSGatewayDown {
		t.Fatalf("a failing phone: %v, %s", err, s.SMSGatewayState())
	}
	status.Store("warn")
	if err := s.ProbeSMS(ctx); err != nil || s.SMSGatewayState() != outbound.SMSGatewayUp {
		t.Fatalf("a phone with a warning: %v, %s", err, s.SMSGatewayState())
	}
	code.Store(500)
	if err := s.ProbeSMS(ctx); err == nil || s.SMSGatewayState() != outbound.SMSGatewayDown {
		t.Fatalf("a 500: %v, %s", err, s.SMSGatewayState())
	}
	// A call that gets an answer (here the 404 of an unknown path) says the phone is up.
	s.SendSMS(ctx, model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+33612345678", Body: "x"})
	if s.SMSGatewayState() != outbound.SMSGatewayUp {
		t.Fatalf("after an answered call: %s", s.SMSGatewayState())
	}
	srv.Close()
	if err := s.ProbeSMS(ctx); err == nil || s.SMSGatewayState() != outbound.SMSGatewayDown {
		t.Fatalf("an unreachable phone: %v, %s", err, s.SMSGatewayState())
	}
	// The generic gateway has no probe.
	gen, _ := outbound.ParseSMSGateway("http://127.0.0.1:1/sms")
	gs := outbound.NewHTTPSender(outbound.HTTPSenderOptions{SMSGateway: gen})
	if err := gs.ProbeSMS(ctx); err != nil || gs.SMSGatewayState() != outbound.SMSGatewayUnknown {
		t.Fatalf("generic: %v, %s", err, gs.SMSGatewayState())
	}
}

// TestTwilioProbe: Twilio is probed on its account resource.
func TestTwilioProbe(t *testing.T) {
	f := &fakeTwilio{sid: "AC1", token: "tw-token"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); ok && u == f.sid && p == f.token && r.Method == http.MethodGet && r.URL.Path == "/2010-04-01/Accounts/AC1.json" {
			_, _ = w.Write([]byte(`{"sid":"AC1","status":"active"}`))
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	g, err := outbound.ParseSMSGateway("twilio+http://AC1:tw-token@" + strings.TrimPrefix(srv.URL, "http://") + "?from=%2B15005550006")
	if err != nil {
		t.Fatal(err)
	}
	s := outbound.NewHTTPSender(outbound.HTTPSenderOptions{SMSGateway: g})
	if err := s.ProbeSMS(context.Background()); err != nil || s.SMSGatewayState() != outbound.SMSGatewayUp {
		t.Fatalf("probe: %v, %s", err, s.SMSGatewayState())
	}
}
