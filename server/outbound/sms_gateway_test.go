package outbound_test

import (
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server/outbound"
)

func TestParseSMSGateway(t *testing.T) {
	for _, tc := range []struct {
		name, raw                       string
		driver, base, user, from, msgsv string
		shown                           string
	}{
		{name: "Generic", raw: "https://sms.example/send?k=s3cret", driver: outbound.DriverGeneric,
			base: "https://sms.example/send?k=s3cret", shown: "https://sms.example/send?…"},
		{name: "GenericUserInfo", raw: "http://u:s3cret@10.0.0.2:9000/sms", driver: outbound.DriverGeneric,
			base: "http://u:s3cret@10.0.0.2:9000/sms", shown: "http://u@10.0.0.2:9000/sms"},
		{name: "Android", raw: "android+http://sms:s3cret@192.168.1.20:8080", driver: outbound.DriverAndroid,
			base: "http://192.168.1.20:8080", user: "sms", shown: "android+http://sms:***@192.168.1.20:8080"},
		{name: "AndroidHTTPSPrefix", raw: "android+https://sms:s3cret@phone.lan:8443/api/", driver: outbound.DriverAndroid,
			base: "https://phone.lan:8443/api", user: "sms", shown: "android+https://sms:***@phone.lan:8443/api"},
		{name: "TwilioFrom", raw: "twilio://AC123:s3cret@api.twilio.com?from=%2B33612345678", driver: outbound.DriverTwilio,
			base: "https://api.twilio.com", user: "AC123", from: "+33612345678", shown: "twilio://AC123:***@api.twilio.com?from=+33612345678"},
		{name: "TwilioMessagingService", raw: "twilio://AC123:s3cret@api.twilio.com?messaging_service=MG9", driver: outbound.DriverTwilio,
			base: "https://api.twilio.com", user: "AC123", msgsv: "MG9", shown: "twilio://AC123:***@api.twilio.com?messaging_service=MG9"},
		{name: "TwilioFake", raw: "twilio+http://AC123:s3cret@127.0.0.1:4010?from=%2B33612345678", driver: outbound.DriverTwilio,
			base: "http://127.0.0.1:4010", user: "AC123", from: "+33612345678", shown: "twilio://AC123:***@127.0.0.1:4010?from=+33612345678"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := outbound.ParseSMSGateway(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if g.Driver != tc.driver || g.Base.String() != tc.base || g.User != tc.user || g.From != tc.from || g.MessagingService != tc.msgsv {
				t.Fatalf("parsed %+v (base %s)", g, g.Base)
			}
			if g.String() != tc.shown || strings.Contains(g.String(), "s3cret") {
				t.Fatalf("String() = %q, want %q", g.String(), tc.shown)
			}
		})
	}
	if g, err := outbound.ParseSMSGateway("none"); g != nil || err != nil {
		t.Fatalf("none: %v, %v", g, err)
	}
	if g, err := outbound.ParseSMSGateway(""); g != nil || err != nil {
		t.Fatalf("empty: %v, %v", g, err)
	}
}

func TestParseSMSGatewayErrors(t *testing.T) {
	for name, raw := range map[string]string{
		"Scheme":                 "smtp://u:s3cret@x",
		"NoHost":                 "https:///x",
		"AndroidNoUser":          "android+http://192.168.1.20:8080",
		"AndroidNoPassword":      "android+http://sms@192.168.1.20:8080",
		"AndroidQuery":           "android+http://sms:s3cret@192.168.1.20:8080?x=1",
		"TwilioNoSender":         "twilio://AC1:s3cret@api.twilio.com",
		"TwilioBothSenders":      "twilio://AC1:s3cret@api.twilio.com?from=%2B1555&messaging_service=MG1",
		"TwilioNoToken":          "twilio://AC1@api.twilio.com?from=%2B1555",
		"TwilioPlainNotLoopback": "twilio+http://AC1:s3cret@api.twilio.com?from=%2B1555",
		"TwilioBadCallback":      "twilio://AC1:s3cret@api.twilio.com?from=%2B1555&status_callback=relay.example",
		"NotAURL":                "android+http://sms:s3cret@[::1",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := outbound.ParseSMSGateway(raw)
			if !model.IsKind(err, model.KindValidation) {
				t.Fatalf("%q: %v, want validation_error", raw, err)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}
}
