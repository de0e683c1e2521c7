package outbound_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server/outbound"
)

// BenchmarkSendSMS measures one SMS handed to each driver's fake gateway on 127.0.0.1,
// calls in parallel: the driver's own cost plus a loopback round trip (the real gateways
// are bound by the phone's radio or Twilio's per-number rate, far below this).
func BenchmarkSendSMS(b *testing.B) {
	msg := model.OutboundSMS{TenantID: "t1", ID: "0190a3c4-5e6f-7a01-8b2c-3d4e5f607182", To: "+33612345678",
		Body: "FR1|M|7KQ2M|099a8057|C|FIRE.STRUCTURE|LYON-3|45.76404,4.83566|1A2B\nReply FR1 ACK 7KQ2M"}
	for _, d := range []struct {
		name string
		s    func(b *testing.B) *outbound.HTTPSender
	}{
		{"Android", func(b *testing.B) *outbound.HTTPSender {
			return benchSender(b, &fakePhone{user: "sms", pass: "s3cret-pass"}, "android+http://sms:s3cret-pass@")
		}},
		{"Twilio", func(b *testing.B) *outbound.HTTPSender {
			return benchSender(b, &fakeTwilio{sid: "AC1", token: "tw-token"}, "twilio+http://AC1:tw-token@")
		}},
	} {
		b.Run(d.name, func(b *testing.B) {
			s := d.s(b)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if res := s.SendSMS(context.Background(), msg); !res.OK() {
						b.Errorf("result %+v", res)
						return
					}
				}
			})
		})
	}
}

func benchSender(b *testing.B, h interface {
	ServeHTTP(w http.ResponseWriter, r *http.Request)
}, prefix string) *outbound.HTTPSender {
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	raw := prefix + strings.TrimPrefix(srv.URL, "http://")
	if strings.HasPrefix(prefix, "twilio") {
		raw += "?from=%2B15005550006"
	}
	g, err := outbound.ParseSMSGateway(raw)
	if err != nil {
		b.Fatal(err)
	}
	return outbound.NewHTTPSender(outbound.HTTPSenderOptions{SMSGateway: g})
}
