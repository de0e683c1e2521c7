package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/server"
)

// Strict JSON bodies (docs/decisions/0080-strict-json.md): invalid UTF-8, an unpaired
// surrogate and a key given twice are refused, at any depth, the opaque payload included;
// the items of a bulk body are judged alone.

const eventJSON = `{"type":"FIRE","priority":"high","vertical":"emergency","idempotency_key":"%s","payload":{"severity":"high"}}`

func TestStrictJSON_Events(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	key := []string{"x-svc-api-key", f.key}
	for _, c := range []struct {
		name, body, msg string
	}{
		{"InvalidUTF8", "{\"type\":\"A\xff\xfe\",\"priority\":\"high\",\"vertical\":\"emergency\",\"idempotency_key\":\"u-1\"}",
			"the body is not valid UTF-8: byte 0xff at byte offset 10 (in /type)"},
		{"InvalidUTF8InPayload", "{\"type\":\"A\",\"priority\":\"high\",\"vertical\":\"emergency\",\"idempotency_key\":\"u-2\",\"payload\":{\"note\":\"\xc3\"}}",
			"not valid UTF-8: byte 0xc3 at byte offset 96 (in /payload/note)"},
		{"UnpairedSurrogate", `{"type":"A\udc00","priority":"high","vertical":"emergency","idempotency_key":"u-3"}`,
			`holds \udc00 at byte offset 10 (in /type), a UTF-16 surrogate that does not pair`},
		{"DuplicateKey", `{"type":"A","priority":"low","priority":"critical","vertical":"emergency","idempotency_key":"u-4"}`,
			`the body has the key "priority" twice in one object (again at byte offset 29)`},
		{"DuplicateEscapedKey", `{"type":"A","priority":"low","\u0070riority":"critical","vertical":"emergency","idempotency_key":"u-5"}`,
			`the key "priority" twice`},
		{"DuplicateKeyInPayload", `{"type":"A","priority":"low","vertical":"emergency","idempotency_key":"u-6","payload":{"lat":1,"lng":2,"lat":45}}`,
			`the body has the key "lat" twice in the object /payload`},
		{"DuplicateKeyDeepInPayload", `{"type":"A","priority":"low","vertical":"emergency","idempotency_key":"u-7","payload":{"a":[{"b":{"c":1,"c":2}}]}}`,
			`twice in the object /payload/a/0/b`},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := n.on(t)
			res := n.do("POST", "/v1/events", c.body, key...).wantErr(http.StatusBadRequest, "invalid_json")
			if !strings.Contains(res.str("message"), c.msg) {
				t.Fatalf("message %q, want %q", res.str("message"), c.msg)
			}
		})
	}
	// Nothing was stored; a well-formed body still is.
	if got := n.do("GET", "/v1/events", nil, key...).want(http.StatusOK).num("count"); got != 0 {
		t.Fatalf("%v events stored from refused bodies", got)
	}
	n.do("POST", "/v1/events", strings.Replace(eventJSON, "%s", "ok-1", 1), key...).want(http.StatusCreated)
	// A pair of surrogates is a character, U+FFFD a character like any other, and the same
	// key in two objects is no repeat.
	n.do("POST", "/v1/events", `{"type":"A\ud83d\ude00\ufffd","priority":"high","vertical":"emergency","idempotency_key":"ok-2",`+
		`"payload":{"a":{"k":1},"b":{"k":1},"type":"x"}}`, key...).want(http.StatusCreated)
}

// Every route with a body refuses a repeated key before anything else reads it.
func TestStrictJSON_EveryBody(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "mission-critical")
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	for _, r := range server.Routes(n.srv) {
		if r.Method != "POST" && r.Method != "PATCH" && r.Method != "PUT" {
			continue
		}
		if strings.HasPrefix(r.Path, "/v1/sms/twilio/") {
			continue // Twilio posts forms, not JSON
		}
		path := strings.NewReplacer(":id", "0190b8a0-0000-7000-8000-000000000000", ":code", "Z1",
			":memberId", "0190b8a0-0000-7000-8000-000000000001").Replace(r.Path)
		creds := admin
		if r.Path == "/v1/sync/batch" || r.Path == "/v1/sms/inbound" {
			creds = []string{"x-svc-api-key", n.keyWith(f, "sync:write", "sms:inbound")}
		}
		res := n.do(r.Method, path, `{"name":"a","name":"b","status":"x","events":[],"items":[]}`, creds...)
		if res.status != http.StatusBadRequest || res.str("error") != "invalid_json" ||
			!strings.Contains(res.str("message"), `the key "name" twice`) {
			t.Errorf("%s %s: %d %s", r.Method, r.Path, res.status, res.raw)
		}
	}
}

func TestStrictJSON_SyncBatchItemsAlone(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	key := []string{"x-svc-api-key", f.key}
	item := `{"type":"FIRE","vertical":"emergency","idempotency_key":"%s","payload":{"severity":"high"}}`
	body := `{"device_id":"tablet-7","captured_at":"` + batchCaptured + `","events":[` +
		strings.Replace(item, "%s", "ok-1", 1) + "," +
		`{"type":"FIRE","vertical":"emergency","idempotency_key":"dup-1","payload":{"severity":"low","severity":"high"}},` +
		"{\"type\":\"FIRE\xff\",\"vertical\":\"emergency\",\"idempotency_key\":\"utf-1\"}," +
		`{"type":"FIRE","priority":"low","priority":"critical","vertical":"emergency","idempotency_key":"dup-2"},` +
		strings.Replace(item, "%s", "ok-2", 1) + `]}`
	res := n.do("POST", "/v1/sync/batch", body, key...).want(http.StatusOK).wantCounts(2, 3)
	wantField := map[int]string{1: "payload", 2: "type", 3: "priority"}
	for i, it := range res.batchItems() {
		field, bad := wantField[i]
		e, _ := it["error"].(map[string]any)
		switch {
		case !bad && it["status"] != "accepted":
			t.Errorf("item %d: %v", i, it)
		case bad && (it["status"] != "rejected" || e["code"] != "validation_error" || e["field"] != field ||
			!strings.HasPrefix(e["message"].(string), "the item ")):
			t.Errorf("item %d: %v, want rejected on %s", i, it, field)
		}
	}
	if evs := n.eventsOf(key); len(evs) != 2 || evs["ok-1"] == nil || evs["ok-2"] == nil {
		t.Fatalf("stored: %v", evs)
	}
	// A problem outside the items refuses the whole batch.
	for _, env := range []string{
		`{"device_id":"a","device_id":"b","captured_at":"` + batchCaptured + `","events":[]}`,
		"{\"device_id\":\"\xff\",\"captured_at\":\"" + batchCaptured + "\",\"events\":[]}",
		`{"captured_at":"` + batchCaptured + `","events":[],"events":[]}`,
	} {
		n.do("POST", "/v1/sync/batch", env, key...).wantErr(http.StatusBadRequest, "invalid_json")
	}
}

func TestStrictJSON_DeviceSyncItemsAlone(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	s := newMissionSeed(n, f)
	op := []string{"Authorization", n.login(f.emails["field_operator"])}
	dev := n.do("POST", "/v1/devices/register", map[string]any{"name": "t", "platform": "android", "team_id": s.teamA.ID}, op...).
		want(http.StatusCreated).str("device_id")
	past := n.clock.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
	ev := func(seq, payload string) string {
		return `{"sequence_number":` + seq + `,"kind":"event","captured_at":"` + past + `","payload":` + payload + `}`
	}
	body := `{"device_id":"` + dev + `","items":[` +
		ev("1", strings.Replace(eventJSON, "%s", "d-1", 1)) + "," +
		ev("2", `{"type":"FIRE","priority":"low","priority":"critical","vertical":"emergency","idempotency_key":"d-2"}`) + "," +
		ev("3", "{\"type\":\"FIRE\xff\",\"priority\":\"low\",\"vertical\":\"emergency\",\"idempotency_key\":\"d-3\"}") + "," +
		`{"sequence_number":4,"sequence_number":5,"kind":"event","captured_at":"` + past + `","payload":{}},` +
		ev("4", strings.Replace(eventJSON, "%s", "d-4", 1)) + `]}`
	res := n.do("POST", "/v1/devices/sync", body, op...).want(http.StatusOK)
	results := res.list("results")
	if len(results) != 5 {
		t.Fatalf("results: %s", res.raw)
	}
	for i, want := range []struct {
		status, field string
		seq           any
	}{{"applied", "", 1.0}, {"rejected", "payload", 2.0}, {"rejected", "payload", 3.0},
		{"rejected", "sequence_number", nil}, {"applied", "", 4.0}} {
		r := results[i]
		if r["status"] != want.status || r["sequence_number"] != want.seq ||
			want.field != "" && (r["error"] != "validation_error" || r["field"] != want.field) {
			t.Errorf("item %d: %v, want %+v", i, r, want)
		}
	}
	// The envelope is held to the rule as a whole body.
	n.do("POST", "/v1/devices/sync", `{"device_id":"`+dev+`","device_id":"`+dev+`","items":[]}`, op...).
		wantErr(http.StatusBadRequest, "invalid_json")
}
