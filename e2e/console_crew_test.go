package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleCrew (issue 27): in the supervisor's console, the chosen mission shows
// whether the crew's phone has its latest change; the supervisor writes to the team and
// the phone's answer shows; a backup's COMPLETED closes the event and the first mission is
// offered for stand-down; the supervisor stands the team down with a reason and a
// confirmation: the node holds it FAILED with the reason, the crew is shown "not yet
// received" until the phone acknowledges it.
func TestConsoleCrew(t *testing.T) {
	needChromium(t)
	bin := binary(t)
	s := serveDemo(t, bin, t.TempDir())
	key := s.key()
	sup, op := s.login(t, "operational_supervisor"), s.login(t, "field_operator")
	admin := s.login(t, "company_admin")
	samu, pompiers := demoTeam(t, s, "SAMU Lyon 1", sup), demoTeam(t, s, "Pompiers Lyon Nord", sup)
	status, _, body := s.call(t, "POST", "/v1/devices/register", map[string]any{"name": "Camille's phone", "platform": "web",
		"team_id": samu, "hardware_id": "console-crew"}, op...)
	expect(t, "register", status, 201, body)
	phone := body["device_id"].(string)
	status, _, body = s.call(t, "POST", "/v1/events", map[string]any{"type": "ROAD_ACCIDENT", "priority": "high",
		"vertical": "emergency", "idempotency_key": "console-crew-1", "zone_code": "lyon",
		"payload": map[string]any{"lat": 45.764, "lng": 4.8357}}, key...)
	expect(t, "event", status, 201, body)
	eventID := body["event_id"].(string)
	status, _, body = s.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": samu}, sup...)
	expect(t, "dispatch", status, 201, body)
	mission := body["mission_id"].(string)
	seq := 0
	// sync acknowledges the phone's whole queue and sends items; it returns the queue.
	sync := func(items ...map[string]any) []any {
		t.Helper()
		status, _, body := s.call(t, "POST", "/v1/devices/sync", map[string]any{"device_id": phone, "items": []any{}}, op...)
		expect(t, "sync", status, 200, body)
		q := body["queue"].([]any)
		last := 0.0
		for _, it := range q {
			last = max(last, it.(map[string]any)["queue_sequence"].(float64))
		}
		list := []any{}
		for _, it := range items {
			seq++
			it["sequence_number"] = seq
			it["captured_at"] = time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
			list = append(list, it)
		}
		status, _, body = s.call(t, "POST", "/v1/devices/sync", map[string]any{"device_id": phone, "ack_through": last, "items": list}, op...)
		expect(t, "sync with ack", status, 200, body)
		return q
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	browser := startChromiumAt(t, ctx, 1280, 900)
	watch := &browserWatch{origin: s.base}
	tab, cancelTab := chromedp.NewContext(browser)
	defer cancelTab()
	watch.listen(t, tab, "supervisor")
	email, pass := s.demoUser(t, "operational_supervisor")
	loginAs(t, tab, s.base, email, pass)
	do(t, tab, "the missions view", chromedp.Click(chromedp.ID("tab-missions")))
	clickJS(t, tab, "choose the mission", `tr[data-mission-id="`+mission+`"] button`)
	waitJS(t, tab, "the phone has not received it", `document.querySelector('#crew li[data-device-id="`+phone+`"][data-state="not_yet_received"]')`)
	sync()
	waitLong(t, tab, "the crew knows", `document.querySelector('#crew[data-all="true"]')`) // refreshed every 10 s
	screenshot(t, tab, artifactsDir(t), "console-crew-knows")

	// The supervisor writes to the team; the phone gets it and answers.
	waitJS(t, tab, "the message box", `(() => { const n = document.getElementById('crew-message'); if (!n) return false; n.focus(); return document.activeElement === n })()`)
	do(t, tab, "type", chromedp.KeyEvent("Use the north gate"))
	clickJS(t, tab, "send", `#crew-message-send`)
	waitJS(t, tab, "the message listed", `document.getElementById('mission-messages').textContent.includes('Use the north gate')`)
	q := sync(map[string]any{"kind": "message", "payload": map[string]any{"mission_id": mission, "text": "Seen, thanks"}})
	found := false
	for _, it := range q {
		if u := it.(map[string]any); u["kind"] == "mission_update" && strings.Contains(u["changes"].([]any)[0].(map[string]any)["text"].(string), "north gate") {
			found = true
		}
	}
	if !found {
		t.Fatalf("the phone did not get the console's message: %v", q)
	}
	waitJS(t, tab, "the phone's answer", `document.getElementById('mission-messages').textContent.includes('Seen, thanks') &&
		document.getElementById('mission-messages').textContent.includes('Camille Martin')`)

	// A backup completes: the event closes, the first mission is offered for stand-down.
	status, _, body = s.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": pompiers}, sup...)
	expect(t, "backup", status, 201, body)
	backup := body["mission_id"].(string)
	for _, to := range []string{"ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"} {
		status, _, body = s.call(t, "PATCH", "/v1/missions/"+backup+"/status", map[string]any{"status": to}, admin...)
		expect(t, "backup "+to, status, 200, body)
	}
	waitJS(t, tab, "the stand-down offered", `document.getElementById('stand-down-offer') &&
		document.querySelector('tr[data-mission-id="`+mission+`"]').textContent.includes('stand down?')`)
	clickJS(t, tab, "stand down", `#stand-down`)
	waitJS(t, tab, "the reason box", `(() => { const n = document.getElementById('stand-down-reason'); if (!n) return false; n.focus(); return document.activeElement === n })()`)
	do(t, tab, "the reason", chromedp.KeyEvent("The fire brigade took the patient"))
	// From the keyboard: Enter on "Stand down" puts the focus on its confirmation.
	waitJS(t, tab, "Stand down focused", `(() => { const b = document.getElementById('stand-down-next'); if (!b) return false; b.focus(); return document.activeElement === b })()`)
	do(t, tab, "Enter", chromedp.KeyEvent("\r"))
	waitJS(t, tab, "the focus on the confirmation", `document.activeElement && document.activeElement.id === 'stand-down-confirm'`)
	screenshot(t, tab, artifactsDir(t), "console-stand-down-confirm")
	clickJS(t, tab, "confirm", `#stand-down-confirm`)
	m := waitMission(t, s, mission, "FAILED")
	if fb := m["feedback"].(map[string]any); fb["stood_down"] != true || fb["reason"] != "The fire brigade took the patient" {
		t.Fatalf("feedback: %v", fb)
	}
	waitJS(t, tab, "the crew does not know yet", `document.querySelector('#crew li[data-device-id="`+phone+`"][data-state="not_yet_received"]')`)
	sync()
	waitLong(t, tab, "the crew knows the stand-down", `document.querySelector('#crew[data-all="true"]')`)
	watch.check(t)
}
