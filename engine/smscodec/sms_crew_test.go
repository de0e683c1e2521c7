package smscodec_test

import (
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

func TestCrewSMS_RoundTrip(t *testing.T) {
	for _, c := range []struct{ kind, text, want string }{
		{smscodec.CrewStop, "False alarm | fire is out\nthanks", "False alarm / fire is out thanks"},
		{smscodec.CrewBackup, "Pompiers Lyon Nord", "Pompiers Lyon Nord"},
		{smscodec.CrewMsg, "Gate code 4512 ✓", "Gate code 4512 ?"},
	} {
		body, err := smscodec.EncodeCrewSMS("7KQ2M", "critical", c.kind, c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.kind, err)
		}
		got, err := smscodec.DecodeCrewSMS(body)
		if err != nil || got.Code != "7KQ2M" || got.Priority != "critical" || got.Kind != c.kind || got.Text != c.want {
			t.Fatalf("%s: %q → %+v, %v", c.kind, body, got, err)
		}
		if _, err := smscodec.DecodeSMS(body); err == nil {
			t.Fatalf("%s: the event decoder takes a crew line", c.kind)
		}
	}
	body, _ := smscodec.EncodeCrewSMS("7KQ2M", "high", smscodec.CrewMsg, "x")
	if body != "FR1|U|7KQ2M|H|MSG|x|"+body[len("FR1|U|7KQ2M|H|MSG|x|"):len("FR1|U|7KQ2M|H|MSG|x|")+4]+"\nReply FR1 MSG 7KQ2M <text>" {
		t.Fatalf("layout: %q", body)
	}
}

func TestCrewSMS_LongTextFitsOneSMS(t *testing.T) {
	for _, kind := range []string{smscodec.CrewStop, smscodec.CrewMsg} {
		body, err := smscodec.EncodeCrewSMS("7KQ2M", "normal", kind, strings.Repeat("é", 400))
		if err != nil {
			t.Fatal(err)
		}
		if err := smscodec.CheckSMSLength(body); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if _, err := smscodec.DecodeCrewSMS(body); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
	}
}

func TestCrewSMS_Refused(t *testing.T) {
	good, _ := smscodec.EncodeCrewSMS("7KQ2M", "low", smscodec.CrewStop, "done")
	for _, bad := range []string{
		strings.Replace(good, "done", "dona", 1),   // CRC
		strings.Replace(good, "|L|", "|Z|", 1),     // priority
		strings.Replace(good, "STOP", "HALT", 1),   // kind (and CRC)
		good + "\nReply FR1 MSG 7KQ2M <text>",      // a second line on STOP
		strings.Replace(good, "FR1|U", "FR1|M", 1), // not a crew line
	} {
		if _, err := smscodec.DecodeCrewSMS(bad); err == nil {
			t.Fatalf("%q decoded", bad)
		}
	}
	if _, err := smscodec.EncodeCrewSMS("bad", "low", smscodec.CrewStop, "x"); err == nil {
		t.Fatal("a bad code encoded")
	}
	if _, err := smscodec.EncodeCrewSMS("7KQ2M", "low", "HALT", "x"); err == nil {
		t.Fatal("a bad kind encoded")
	}
}

func TestParseSMSReply_Msg(t *testing.T) {
	r, err := smscodec.ParseSMSReply("  fr1 Msg 7kq2m  On our   way,\n5 min ")
	if err != nil || r.Verb != "MSG" || r.Code != "7KQ2M" || r.Text != "On our way, 5 min" || r.Status != "" {
		t.Fatalf("FR1 MSG: %+v, %v", r, err)
	}
	for _, bad := range []string{"FR1 MSG", "FR1 MSG 7KQ2M", "FR1 MSG 7KQ2M   ", "FR1 MSG bad! hello"} {
		if _, err := smscodec.ParseSMSReply(bad); err == nil {
			t.Fatalf("%q read", bad)
		}
	}
}
