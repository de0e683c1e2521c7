package smscodec_test

import (
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

func FuzzParseSMSReply(f *testing.F) {
	for _, s := range []string{"FR1 ACK 7KQ2M", "fr1 ack 7kq2m", "  Fr1\tRoute   7KQ2M \n", "FR1 DONE 7KQ2M all good",
		"FR1 FAIL", "FR1", "", "FR1 ACK 7KQ2", "FR1 ACK 0OIL1", "FR1 ﬀ 7KQ2M", "FR1 ACK 7KQ2ＭM", "FR1\u00a0ACK 7KQ2M"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r, err := smscodec.ParseSMSReply(body)
		if err != nil {
			modeltest.AssertInvalid(t, err, "body")
			return
		}
		want := map[string]string{"ACK": model.MissionAck, "ROUTE": model.MissionOnRoute, "SITE": model.MissionOnSite,
			"DONE": model.MissionCompleted, "FAIL": model.MissionFailed}[r.Verb]
		if want == "" || r.Status != want || !smscodec.ValidMissionCode(r.Code) {
			t.Fatalf("ParseSMSReply(%q) = %+v", body, r)
		}
		// The canonical reply reads the same, in any case: parsing is idempotent.
		for _, canon := range []string{"FR1 " + r.Verb + " " + r.Code, strings.ToLower("FR1 " + r.Verb + " " + r.Code)} {
			if again, err := smscodec.ParseSMSReply(canon); err != nil || again != r {
				t.Fatalf("ParseSMSReply(%q) = %+v, but %q reads %+v, %v", body, r, canon, again, err)
			}
		}
	})
}

func FuzzMissionSMSRoundTrip(f *testing.F) {
	f.Add("7KQ2M", uint32(0x099a8057), uint8(0), "fire.structure", "LYON-3", true, 45.764043, 4.835659)
	f.Add("AAAAA", uint32(0), uint8(3), "Médical chute", "", false, 0.0, 0.0)
	f.Add("ZZZZZ", uint32(0xffffffff), uint8(2), strings.Repeat("long type ", 30), strings.Repeat("Z", 64), true, -89.999999, -179.999996)
	f.Add("0OIL1", uint32(1), uint8(1), "x", "", true, 1.0, 2.0)
	f.Fuzz(func(t *testing.T, code string, ref uint32, prio uint8, typ, zone string, hasPos bool, lat, lng float64) {
		id := "01890a5d-ac96-774b-bcce-b302" + hex8(ref)
		p := []string{"critical", "high", "normal", "low"}[prio%4]
		var plat, plng *float64
		if hasPos {
			plat, plng = &lat, &lng
		}
		body, err := smscodec.EncodeMissionSMS(code, id, p, typ, zone, plat, plng)
		valid := smscodec.ValidMissionCode(code) && (zone == "" || model.ValidZoneCode(zone)) &&
			(!hasPos || model.ValidLatLng(lat, lng))
		if err != nil {
			if valid {
				t.Fatalf("EncodeMissionSMS(%q, %q, %q, %q, %q) failed on valid input: %v", code, id, p, typ, zone, err)
			}
			return
		}
		if !valid {
			t.Fatalf("EncodeMissionSMS accepted invalid input: code %q zone %q pos %v %v,%v", code, zone, hasPos, lat, lng)
		}
		if n := smscodec.Septets(body); n > smscodec.SMSMaxLen {
			t.Fatalf("%q takes %d septets", body, n)
		}
		m, err := smscodec.DecodeMissionSMS(body)
		if err != nil {
			t.Fatalf("DecodeMissionSMS(%q): %v", body, err)
		}
		wantType := smsWantType(typ)
		if m.Code != code || m.EventRef != id[len(id)-8:] || m.Priority != p || m.ZoneCode != zone ||
			!strings.HasPrefix(wantType, m.Type) || (m.Type != wantType && smscodec.Septets(body) != smscodec.SMSMaxLen) {
			t.Fatalf("DecodeMissionSMS(%q) = %+v", body, m)
		}
		if (m.Lat == nil) != !hasPos || hasPos && (*m.Lat != smsRound(t, lat) || *m.Lng != smsRound(t, lng)) {
			t.Fatalf("position of %q: %v,%v, want %v,%v", body, m.Lat, m.Lng, lat, lng)
		}
		// The event line alone is no mission SMS, and the mission SMS no event line.
		if _, err := smscodec.DecodeSMS(body); err == nil {
			t.Fatalf("DecodeSMS accepted the mission SMS %q", body)
		}
	})
}

func hex8(v uint32) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = digits[v&0xF]
		v >>= 4
	}
	return string(b)
}
