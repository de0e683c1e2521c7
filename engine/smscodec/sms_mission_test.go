package smscodec_test

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// missionSMSRE is the shape of every mission SMS: the mission line, then the reply line.
var missionSMSRE = regexp.MustCompile(`^FR1\|M\|([2-9A-HJKMNP-Z]{5})\|[0-9a-f]{8}\|[CHNL]\|[A-Z0-9_.-]*\|[A-Za-z0-9_-]{0,64}\|` +
	`(-?[0-9]{1,3}\.[0-9]{5},-?[0-9]{1,3}\.[0-9]{5}|,)\|[0-9A-F]{4}\nReply FR1 ACK ([2-9A-HJKMNP-Z]{5})$`)

func TestEncodeMissionSMS(t *testing.T) {
	t.Run("Pinned", func(t *testing.T) {
		got, err := smscodec.EncodeMissionSMS("7KQ2M", "01890a5d-ac96-774b-bcce-b302099a8057", "critical",
			"fire.structure", "LYON-3", model.PtrTo(45.764043), model.PtrTo(4.835659))
		if err != nil {
			t.Fatal(err)
		}
		head := "FR1|M|7KQ2M|099a8057|C|FIRE.STRUCTURE|LYON-3|45.76404,4.83566"
		if want := smsSign(head) + "\nReply FR1 ACK 7KQ2M"; got != want {
			t.Fatalf("EncodeMissionSMS = %q, want %q", got, want)
		}
		m, err := smscodec.DecodeMissionSMS(got)
		if err != nil {
			t.Fatal(err)
		}
		if m.Code != "7KQ2M" || m.EventRef != "099a8057" || m.Priority != "critical" || m.Type != "FIRE.STRUCTURE" ||
			m.ZoneCode != "LYON-3" || *m.Lat != 45.76404 || *m.Lng != 4.83566 {
			t.Fatalf("decoded %+v", m)
		}
	})
	t.Run("WorstCaseFits", func(t *testing.T) {
		// The longest fixed fields: a 64-character zone and the longest position. TYPE
		// keeps at least 18 characters and the SMS is exactly SMSMaxLen septets.
		body, err := smscodec.EncodeMissionSMS("ZZZZZ", "01890a5d-ac96-774b-bcce-b302099a8057", "low",
			strings.Repeat("LONG_TYPE_", 20), strings.Repeat("z", 64), model.PtrTo(-89.123456), model.PtrTo(-179.123456))
		if err != nil {
			t.Fatal(err)
		}
		if !missionSMSRE.MatchString(body) || smscodec.Septets(body) != smscodec.SMSMaxLen {
			t.Fatalf("%q: %d septets, want a mission SMS of exactly %d", body, smscodec.Septets(body), smscodec.SMSMaxLen)
		}
		m, err := smscodec.DecodeMissionSMS(body)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Type) != 18 || !strings.HasPrefix(strings.Repeat("LONG_TYPE_", 20), m.Type) {
			t.Fatalf("TYPE cut to %q", m.Type)
		}
	})
	t.Run("Errors", func(t *testing.T) {
		for _, tc := range []struct {
			code, id, prio, zone, field string
		}{
			{"", "01890a5d-ac96-774b-bcce-b302099a8057", "high", "", "code"},
			{"7KQ2O", "01890a5d-ac96-774b-bcce-b302099a8057", "high", "", "code"}, // O is not in the alphabet
			{"7kq2m", "01890a5d-ac96-774b-bcce-b302099a8057", "high", "", "code"},
			{"7KQ2MM", "01890a5d-ac96-774b-bcce-b302099a8057", "high", "", "code"},
			{"7KQ2M", "not-a-uuid", "high", "", "event_id"},
			{"7KQ2M", "01890a5d-ac96-774b-bcce-b302099a8057", "urgent", "", "priority"},
			{"7KQ2M", "01890a5d-ac96-774b-bcce-b302099a8057", "high", "bad zone", "zone_code"},
		} {
			_, err := smscodec.EncodeMissionSMS(tc.code, tc.id, tc.prio, "FIRE", tc.zone, nil, nil)
			modeltest.AssertInvalid(t, err, tc.field)
		}
	})
}

func TestDecodeMissionSMS_Errors(t *testing.T) {
	good, err := smscodec.EncodeMissionSMS("7KQ2M", "01890a5d-ac96-774b-bcce-b302099a8057", "high", "FIRE", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(good, "\n")
	eventLine, err := smscodec.EncodeSMS("01890a5d-ac96-774b-bcce-b302099a8057", "high", "FIRE", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, body, msg string }{
		{"OneLine", line, "two lines"},
		{"EventLine", eventLine, "two lines"},
		{"EventLineWithHint", eventLine + "\nReply FR1 ACK 7KQ2M", "9 '|'-separated fields"},
		{"NotMission", strings.Replace(good, "FR1|M|", "FR1|X|", 1), "starts with FR1|M"},
		{"BadCode", smsSign("FR1|M|7KQ2O|099a8057|H|FIRE||,") + "\nReply FR1 ACK 7KQ2O", "mission code"},
		{"CodeChanged", strings.Replace(line, "7KQ2M", "7KQ2N", 1) + "\nReply FR1 ACK 7KQ2N", "CRC mismatch"},
		{"HintOtherCode", line + "\nReply FR1 ACK 7KQ2N", "second line"},
		{"HintMissing", line + "\n", "second line"},
		{"ThreeLines", good + "\nmore", "second line"},
		{"TooLong", good + strings.Repeat("x", 200), "longer than"},
		{"NotGSM", good + "✓", "outside GSM-7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := smscodec.DecodeMissionSMS(tc.body)
			modeltest.AssertInvalid(t, err, "body")
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("DecodeMissionSMS(%q): %v, want %q", tc.body, err, tc.msg)
			}
		})
	}
	// An event line's decoder refuses a mission SMS, and its line alone.
	if _, err := smscodec.DecodeSMS(good); err == nil {
		t.Fatal("DecodeSMS accepted a mission SMS")
	}
	if _, err := smscodec.DecodeSMS(line); err == nil {
		t.Fatal("DecodeSMS accepted a mission line")
	}
}

func TestMissionSMS_RoundTrip(t *testing.T) {
	prios := []string{"critical", "high", "normal", "low"}
	types := []string{"fire", "Fire.Structure", "inondation à Lyon", "", strings.Repeat("long ", 40)}
	zones := []string{"", "LYON-3", strings.Repeat("a", 64)}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		code := make([]byte, smscodec.MissionCodeLen)
		for i := range code {
			code[i] = smscodec.MissionCodeAlphabet[rng.IntN(len(smscodec.MissionCodeAlphabet))]
		}
		id := fmt.Sprintf("01890a5d-ac96-774b-bcce-b302%08x", rng.Uint32())
		prio, typ, zone := prios[rng.IntN(4)], types[rng.IntN(len(types))], zones[rng.IntN(len(zones))]
		var lat, lng *float64
		if rng.IntN(3) > 0 {
			lat, lng = model.PtrTo(rng.Float64()*180-90), model.PtrTo(rng.Float64()*360-180)
		}
		body, err := smscodec.EncodeMissionSMS(string(code), id, prio, typ, zone, lat, lng)
		if err != nil {
			t.Fatal(err)
		}
		sub := missionSMSRE.FindStringSubmatch(body)
		if sub == nil || sub[1] != string(code) || sub[3] != string(code) || smscodec.Septets(body) > smscodec.SMSMaxLen {
			t.Fatalf("%q is not a mission SMS of code %s within %d septets", body, code, smscodec.SMSMaxLen)
		}
		m, err := smscodec.DecodeMissionSMS(body)
		if err != nil {
			t.Fatalf("DecodeMissionSMS(%q): %v", body, err)
		}
		want := smsWantType(typ)
		if m.Code != string(code) || m.EventRef != id[len(id)-8:] || m.Priority != prio || m.ZoneCode != zone ||
			!strings.HasPrefix(want, m.Type) || (m.Type != want && smscodec.Septets(body) != smscodec.SMSMaxLen) {
			t.Fatalf("DecodeMissionSMS(%q) = %+v", body, m)
		}
		if (lat == nil) != (m.Lat == nil) || lat != nil && (*m.Lat != smsRound(t, *lat) || *m.Lng != smsRound(t, *lng)) {
			t.Fatalf("position of %q: %v,%v", body, m.Lat, m.Lng)
		}
	}
}

func FuzzMissionSMSDecode(f *testing.F) {
	good, _ := smscodec.EncodeMissionSMS("7KQ2M", "01890a5d-ac96-774b-bcce-b302099a8057", "high", "FIRE", "Z1", model.PtrTo(1.0), model.PtrTo(2.0))
	for _, s := range []string{good, "", "FR1|M|7KQ2M|099a8057|H|FIRE||,", "\nReply FR1 ACK 7KQ2M"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// As a whole body, and as a signed line with its reply line.
		bodies := []string{s}
		if f := strings.Split(s, "|"); len(f) > 2 {
			bodies = append(bodies, smsSign(s)+"\nReply FR1 ACK "+f[2])
		}
		for _, body := range bodies {
			m, err := smscodec.DecodeMissionSMS(body)
			if err != nil {
				modeltest.AssertInvalid(t, err, "body")
				continue
			}
			id := "00000000-0000-0000-0000-0000" + m.EventRef
			got, err := smscodec.EncodeMissionSMS(m.Code, id, m.Priority, m.Type, m.ZoneCode, m.Lat, m.Lng)
			if err != nil {
				t.Fatalf("DecodeMissionSMS(%q) = %+v, which does not encode: %v", body, m, err)
			}
			line, hint, _ := strings.Cut(body, "\n")
			i := strings.LastIndexByte(line, '|')
			if want := line[:i] + strings.ToUpper(line[i:]) + "\n" + hint; got != want {
				t.Fatalf("DecodeMissionSMS(%q) re-encodes to %q", body, got)
			}
		}
	})
}

func TestParseSMSReply(t *testing.T) {
	for _, tc := range []struct {
		body         string
		verb, status string
		code         string
	}{
		{"FR1 ACK 7KQ2M", "ACK", "ACK", "7KQ2M"},
		{"fr1 ack 7kq2m", "ACK", "ACK", "7KQ2M"},
		{"  Fr1\tRoute   7KQ2M \n", "ROUTE", "ON_ROUTE", "7KQ2M"},
		{"FR1 SITE 7KQ2M", "SITE", "ON_SITE", "7KQ2M"},
		{"FR1 DONE 7KQ2M all good, thanks", "DONE", "COMPLETED", "7KQ2M"},
		{"FR1 FAIL 7KQ2M road blocked", "FAIL", "FAILED", "7KQ2M"},
	} {
		r, err := smscodec.ParseSMSReply(tc.body)
		if err != nil || r.Verb != tc.verb || r.Status != tc.status || r.Code != tc.code {
			t.Errorf("ParseSMSReply(%q) = %+v %v, want %s %s %s", tc.body, r, err, tc.verb, tc.status, tc.code)
		}
	}
	for _, tc := range []struct{ body, msg string }{
		{"", "empty"},
		{"   \n ", "empty"},
		{"hello", "starts with FR1"},
		{"FR2 ACK 7KQ2M", "starts with FR1"},
		{"FR1", "no verb"},
		{"FR1 FOO X", "unknown verb"},
		{"FR1 ON_ROUTE 7KQ2M", "unknown verb"},
		{"FR1 ACK", "no mission code"},
		{"FR1 ACK 7KQ2", "not a mission code"},
		{"FR1 ACK 7KQ2MM", "not a mission code"},
		{"FR1 ACK 7KQ20", "not a mission code"}, // 0 is not in the alphabet
		{"FR1ACK 7KQ2M", "starts with FR1"},
		{"FR1|M|7KQ2M|099a8057|H|FIRE||,|0000", "starts with FR1"},
	} {
		_, err := smscodec.ParseSMSReply(tc.body)
		modeltest.AssertInvalid(t, err, "body")
		if !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ParseSMSReply(%q): %v, want %q", tc.body, err, tc.msg)
		}
	}
}
