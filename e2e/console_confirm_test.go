package e2e

// Chromium test of the console's confirmation before a move that ends a mission.

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// dispatchedMission posts an event in lyon, dispatches its best team as the supervisor
// and answers the event's and the mission's ids and the supervisor's header.
func dispatchedMission(t *testing.T, d *demoNode, key string) (string, string, []string) {
	t.Helper()
	st, _, body := d.call(t, "POST", "/v1/events", map[string]any{"type": "GAS_LEAK", "priority": "high", "vertical": "emergency",
		"idempotency_key": key, "zone_code": "lyon", "payload": map[string]any{"lat": 45.76, "lng": 4.83}}, d.key()...)
	expect(t, "event", st, 201, body)
	eventID := body["event_id"].(string)
	supAuth := d.login(t, "operational_supervisor")
	st, _, body = d.call(t, "POST", "/v1/teams/dispatch/score", map[string]any{"event_id": eventID}, supAuth...)
	expect(t, "score", st, 200, body)
	teamID := body["data"].([]any)[0].(map[string]any)["team_id"].(string)
	st, _, body = d.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": teamID}, supAuth...)
	expect(t, "dispatch", st, 201, body)
	return eventID, body["mission_id"].(string), supAuth
}

// TestConsoleConfirmCompleted: "Completed" asks first, with the focus on the confirmation;
// Esc keeps the mission on site; the confirmation completes it. The timeline credits
// CREATED → SENT to the node, not to the user whose ACK recorded it.
func TestConsoleConfirmCompleted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	browser := startChromium(t, ctx)
	d := serveDemo(t, binary(t), t.TempDir())
	_, missionID, supAuth := dispatchedMission(t, d, "confirm-1")
	for _, to := range []string{"ACK", "ON_ROUTE", "ON_SITE"} {
		st, _, body := d.call(t, "PATCH", "/v1/missions/"+missionID+"/status", map[string]any{"status": to}, supAuth...)
		expect(t, to, st, 200, body)
	}
	status := func() string {
		_, _, body := d.call(t, "GET", "/v1/missions/"+missionID, nil, supAuth...)
		return body["status"].(string)
	}

	watch := &browserWatch{origin: d.base}
	sup := tab(t, browser, watch, "supervisor")
	email, pass := d.demoUser(t, "operational_supervisor")
	loginAs(t, sup, d.base, email, pass)
	do(t, sup, "deep link", chromedp.Navigate(d.base+"/console/#/missions/"+missionID))
	// CREATED → SENT, recorded with the supervisor's ACK, is the node's doing, not the user's.
	waitJS(t, sup, "SENT credited to the node", `(() => { const li = document.querySelector('#timeline li[data-to="SENT"]');
		return li && li.textContent.includes('the node') && !li.textContent.includes('(you)') })()`)
	clickJS(t, sup, "Completed", `button[data-move="COMPLETED"]`)
	waitJS(t, sup, "the confirmation, focused", `document.querySelector('#end-confirm-box') &&
		document.querySelector('#end-confirm-text').textContent.includes('completed') &&
		document.activeElement && document.activeElement.id === 'end-confirm'`)
	// A live update (another event arrives) draws the view again: the focus stays on the
	// confirmation, not on the page (its button is a new element then).
	waitJS(t, sup, "the confirmation marked", `(() => { window.confirmBefore = document.getElementById('end-confirm'); return true })()`)
	st, _, body := d.call(t, "POST", "/v1/events", map[string]any{"type": "FIRE", "priority": "low", "vertical": "emergency",
		"idempotency_key": "confirm-redraw", "zone_code": "lyon", "payload": map[string]any{"lat": 45.7, "lng": 4.8}}, d.key()...)
	expect(t, "another event", st, 201, body)
	waitJS(t, sup, "the view drawn again", `document.getElementById('end-confirm') !== window.confirmBefore`)
	waitJS(t, sup, "the focus kept on the confirmation", `document.activeElement && document.activeElement.id === 'end-confirm'`)
	if s := status(); s != "ON_SITE" {
		t.Fatalf("the mission moved before the confirmation: %s", s)
	}
	do(t, sup, "Esc", chromedp.KeyEvent("\u001b"))
	waitJS(t, sup, "Esc closed it, the focus back on Completed", `!document.querySelector('#end-confirm-box') &&
		document.activeElement && document.activeElement.dataset.move === 'COMPLETED'`)
	if s := status(); s != "ON_SITE" {
		t.Fatalf("Esc moved the mission: %s", s)
	}
	clickJS(t, sup, "Completed", `button[data-move="COMPLETED"]`)
	clickJS(t, sup, "confirm", "#end-confirm")
	waitJS(t, sup, "the timeline at COMPLETED", `document.querySelector('#timeline li[data-to="COMPLETED"]')`)
	if s := status(); s != "COMPLETED" {
		t.Fatalf("the confirmed mission is %s", s)
	}
	watch.check(t)
}
