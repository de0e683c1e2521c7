package e2e

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// TestSMS_CrewLines (issue 27), through the binary on both stores with a fake SMS gateway:
// a team whose members have no phone that synced in 10 minutes gets the control room's
// message and the stand-down as FR1 crew lines; a member's "FR1 MSG <code> <text>" becomes
// a message on the mission (also once the mission ended); once a device of the team syncs,
// a message goes through its queue only.
func TestSMS_CrewLines(t *testing.T) {
	bin := binary(t)
	eachStore(t, func(t *testing.T, st nodeStore) { crewSMSLines(t, bin, st) })
}

func crewSMSLines(t *testing.T, bin string, store nodeStore) {
	gw := &fakeSMSGateway{}
	gwSrv := httptest.NewServer(gw)
	defer gwSrv.Close()
	s := store.serveDemo(t, bin, "--sms-gateway", gwSrv.URL+"/sms")
	key := s.key()
	sup, op := s.login(t, "operational_supervisor"), s.login(t, "field_operator")
	var gwKey struct {
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(store.cli(t, bin, "", "apikey", "create", "--tenant", "demo", "--name", "sms gateway",
		"--scopes", "sms:inbound", "--json"), &gwKey); err != nil {
		t.Fatal(err)
	}
	gateway := []string{"x-svc-api-key", gwKey.APIKey}
	samu := demoTeam(t, s, "SAMU Lyon 1", sup)
	crewLines := func(kind string) []smscodec.CrewSMS {
		msgs, _ := gw.all()
		var out []smscodec.CrewSMS
		for _, m := range msgs {
			if c, err := smscodec.DecodeCrewSMS(m.Body); err == nil && c.Kind == kind {
				out = append(out, c)
			}
		}
		return out
	}
	dispatch := func(idem string) (string, string) {
		t.Helper()
		status, _, body := s.call(t, "POST", "/v1/events", map[string]any{"type": "CARDIAC_ARREST", "priority": "high",
			"vertical": "healthcare", "idempotency_key": idem, "payload": map[string]any{"lat": 45.764, "lng": 4.8357}}, key...)
		expect(t, "event", status, 201, body)
		status, _, body = s.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": body["event_id"], "team_id": samu}, sup...)
		expect(t, "dispatch", status, 201, body)
		id := body["mission_id"].(string)
		_, _, m := s.call(t, "GET", "/v1/missions/"+id, nil, sup...)
		return id, m["code"].(string)
	}
	mission, code := dispatch("crew-sms-1")

	// No phone of the team synced: the message goes by SMS to both members.
	status, _, body := s.call(t, "POST", "/v1/missions/"+mission+"/messages", map[string]any{"text": "Use the north gate | code 4512"}, sup...)
	expect(t, "message", status, 201, body)
	pollUntil(t, s.served, "the MSG line to both members", func() bool { return len(crewLines("MSG")) >= 2 })
	if c := crewLines("MSG")[0]; c.Code != code || c.Priority != "high" || c.Text != "Use the north gate / code 4512" {
		t.Fatalf("MSG line: %+v", c)
	}

	// A member answers by SMS: a message on the mission.
	status, _, body = s.call(t, "POST", "/v1/sms/inbound", map[string]any{"from": "+33612345602",
		"body": "fr1 msg " + strings.ToLower(code) + " On our way,  5 min"}, gateway...)
	expect(t, "FR1 MSG", status, 200, body)
	if body["outcome"] != "applied" || body["mission_id"] != mission {
		t.Fatalf("FR1 MSG answer: %v", body)
	}
	messages := func() []any {
		_, _, b := s.call(t, "GET", "/v1/missions/"+mission+"/messages", nil, sup...)
		return b["data"].([]any)
	}
	if ms := messages(); len(ms) != 2 || ms[1].(map[string]any)["text"] != "On our way, 5 min" ||
		ms[1].(map[string]any)["channel"] != "sms" || ms[1].(map[string]any)["author_name"] != "Lucas Bernard" {
		t.Fatalf("messages: %v", ms)
	}

	// The stand-down goes by SMS too.
	status, _, body = s.call(t, "PATCH", "/v1/missions/"+mission+"/status", map[string]any{"status": "FAILED",
		"feedback": map[string]any{"stood_down": true, "reason": "Patient taken by a private ambulance"}}, sup...)
	expect(t, "stand-down", status, 200, body)
	pollUntil(t, s.served, "the STOP line", func() bool { return len(crewLines("STOP")) >= 2 })
	if c := crewLines("STOP")[0]; c.Code != code || c.Text != "Patient taken by a private ambulance" {
		t.Fatalf("STOP line: %+v", c)
	}
	// A late answer about the ended mission is kept.
	status, _, body = s.call(t, "POST", "/v1/sms/inbound", map[string]any{"from": "+33612345601", "body": "FR1 MSG " + code + " ok, back to base"}, gateway...)
	expect(t, "a late FR1 MSG", status, 200, body)
	if ms := messages(); len(ms) != 3 {
		t.Fatalf("messages after the late answer: %v", ms)
	}

	// A phone of the team syncs: the next message goes through its queue only.
	status, _, body = s.call(t, "POST", "/v1/devices/register", map[string]any{"name": "phone", "platform": "web",
		"team_id": samu, "hardware_id": "crew-sms"}, op...)
	expect(t, "register", status, 201, body)
	status, _, body = s.call(t, "POST", "/v1/devices/sync", map[string]any{"device_id": body["device_id"], "items": []any{}}, op...)
	expect(t, "sync", status, 200, body)
	second, _ := dispatch("crew-sms-2")
	status, _, body = s.call(t, "POST", "/v1/missions/"+second+"/messages", map[string]any{"text": "queue only"}, sup...)
	expect(t, "message", status, 201, body)
	// Every SMS is recorded (pending) in the transaction that queues it: the second
	// mission has its two mission SMS and nothing more.
	status, _, body = s.call(t, "GET", "/v1/sms/outbound?limit=200", nil, key...)
	expect(t, "SMS records", status, 200, body)
	n := 0
	for _, it := range body["data"].([]any) {
		if it.(map[string]any)["mission_id"] == second {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("the second mission has %d SMS records, want its 2 mission SMS: a message went by SMS to a team whose phone syncs", n)
	}
}
