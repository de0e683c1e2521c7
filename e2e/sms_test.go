package e2e

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// TestSMS_ReplyEndToEnd: through the binary with --demo and a fake SMS gateway, a
// supervisor dispatches the SAMU Lyon 1 team; each member's phone gets the mission SMS,
// which decodes and carries the mission's code; the SMS gateway, with a key made by
// `fieldrelay apikey create --scopes sms:inbound`, posts a member's "FR1 ACK <code>" and
// the mission is ACK (source sms). A stranger's reply does not move it, and neither a
// JWT nor the tenant's first key may post inbound SMS.
// It runs on both stores (eachStore).
func TestSMS_ReplyEndToEnd(t *testing.T) {
	bin := binary(t)
	eachStore(t, func(t *testing.T, st nodeStore) { smsReply(t, bin, st) })
}

func smsReply(t *testing.T, bin string, store nodeStore) {
	gw := &fakeSMSGateway{}
	gwSrv := httptest.NewServer(gw)
	defer gwSrv.Close()
	s := store.serveDemo(t, bin, "--sms-gateway", gwSrv.URL+"/sms")
	key := s.key()
	sup := s.login(t, "operational_supervisor")

	// The gateway's key, made with the CLI while the node serves (through the admin socket on bbolt).
	var gwKey struct {
		APIKey string `json:"api_key"`
		Key    struct {
			Scopes []string `json:"scopes"`
		} `json:"key"`
	}
	out := store.cli(t, bin, "", "apikey", "create", "--tenant", "demo", "--name", "sms gateway",
		"--scopes", "sms:inbound", "--json")
	if err := json.Unmarshal(out, &gwKey); err != nil || gwKey.APIKey == "" || !slices.Equal(gwKey.Key.Scopes, []string{"sms:inbound"}) {
		t.Fatalf("apikey create: %v %s", err, out)
	}
	gateway := []string{"x-svc-api-key", gwKey.APIKey}

	status, _, body := s.call(t, "POST", "/v1/events", map[string]any{"type": "CARDIAC_ARREST", "priority": "critical",
		"vertical": "healthcare", "idempotency_key": "sms-e2e-1", "zone_code": "lyon",
		"payload": map[string]any{"lat": 45.764, "lng": 4.8357}}, key...)
	expect(t, "event", status, 201, body)
	eventID := body["event_id"].(string)
	status, _, body = s.call(t, "GET", "/v1/teams", nil, sup...)
	expect(t, "teams", status, 200, body)
	var teamID string
	for _, it := range body["data"].([]any) {
		if tm := it.(map[string]any); tm["name"] == "SAMU Lyon 1" {
			teamID = tm["id"].(string)
		}
	}
	if teamID == "" {
		t.Fatalf("no SAMU Lyon 1 team: %v", body)
	}
	status, _, body = s.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": teamID}, sup...)
	expect(t, "dispatch", status, 201, body)
	missionID := body["mission_id"].(string)

	// The mission SMS reaches both members' phones; the gateway's 200 makes the mission SENT.
	missionSMS := func() []smsSent {
		msgs, _ := gw.all()
		return slices.DeleteFunc(msgs, func(m smsSent) bool { return !strings.HasPrefix(m.Body, "FR1|M|") })
	}
	pollUntil(t, s.served, "the mission SMS to both members", func() bool { return len(missionSMS()) >= 2 })
	pollUntil(t, s.served, "the mission SENT", func() bool {
		_, _, m := s.call(t, "GET", "/v1/missions/"+missionID, nil, sup...)
		return m["status"] == "SENT"
	})
	_, _, mission := s.call(t, "GET", "/v1/missions/"+missionID, nil, sup...)
	var to []string
	var code string
	for _, m := range missionSMS() {
		dec, err := smscodec.DecodeMissionSMS(m.Body)
		if err != nil {
			t.Fatalf("the mission SMS %q does not decode: %v", m.Body, err)
		}
		if dec.EventRef != eventRef(eventID) || dec.Priority != "critical" || dec.Type != "CARDIAC_ARREST" || dec.ZoneCode != "lyon" {
			t.Fatalf("the mission SMS %q decodes to %+v", m.Body, dec)
		}
		if code != "" && dec.Code != code {
			t.Fatalf("two codes for one mission: %s and %s", code, dec.Code)
		}
		code = dec.Code
		to = append(to, m.To)
	}
	slices.Sort(to)
	if !slices.Equal(to, []string{"+33612345601", "+33612345602"}) {
		t.Fatalf("mission SMS sent to %v", to)
	}
	if mission["code"] != code || !strings.HasSuffix(missionSMS()[0].Body, "\nReply FR1 ACK "+code) {
		t.Fatalf("the SMS code %s, the mission's %v", code, mission["code"])
	}

	// Refused: a JWT and the tenant's first key may not post; a stranger's reply (a member
	// of another team) does not move the mission.
	reply := map[string]any{"from": "+33 6 12 34 56 02", "body": "FR1 ACK " + code}
	status, _, body = s.call(t, "POST", "/v1/sms/inbound", reply, sup...)
	if status != 403 || body["error"] != "forbidden" {
		t.Fatalf("inbound SMS with a JWT: %d %v", status, body)
	}
	status, _, body = s.call(t, "POST", "/v1/sms/inbound", reply, key...)
	if status != 403 || body["error"] != "forbidden" {
		t.Fatalf("inbound SMS with the first key: %d %v", status, body)
	}
	status, _, body = s.call(t, "POST", "/v1/sms/inbound", map[string]any{"from": "+33612345603", "body": "FR1 ACK " + code}, gateway...)
	if status != 403 || body["error"] != "forbidden" {
		t.Fatalf("a stranger's reply: %d %v", status, body)
	}
	if _, _, m := s.call(t, "GET", "/v1/missions/"+missionID, nil, sup...); m["status"] != "SENT" {
		t.Fatalf("a stranger's reply moved the mission to %v", m["status"])
	}

	// A member's reply acknowledges it.
	status, _, body = s.call(t, "POST", "/v1/sms/inbound", reply, gateway...)
	expect(t, "a member's FR1 ACK", status, 200, body)
	if body["outcome"] != "applied" || body["status"] != "ACK" || body["mission_id"] != missionID {
		t.Fatalf("FR1 ACK answer: %v", body)
	}
	_, _, m := s.call(t, "GET", "/v1/missions/"+missionID, nil, sup...)
	h, _ := m["history"].([]any)
	last, _ := h[len(h)-1].(map[string]any)
	if m["status"] != "ACK" || m["ack_at"] == nil || last["source"] != "sms" || last["to"] != "ACK" {
		t.Fatalf("mission after the SMS ACK: %v", m)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("exit: %v\n%s", err, s.logs)
	}
}
