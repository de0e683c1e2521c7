package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleSharedAlerts: the alert tray shows the node's alerts; an acknowledgement in
// one browser context shows as taken in a second one at once; a reload keeps the alerts
// still open; the tray sits in the page's flow and covers no button; "Acknowledge all"
// takes every alert (docs/decisions/0172-shared-alerts.md).
func TestConsoleSharedAlerts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	browser := startChromium(t, ctx)
	d := serveDemo(t, binary(t), t.TempDir())
	watch := &browserWatch{origin: d.base}
	sup, admin := tab(t, browser, watch, "supervisor"), tab(t, browser, watch, "admin")
	email, pass := d.demoUser(t, "operational_supervisor")
	loginAs(t, sup, d.base, email, pass)
	email, pass = d.demoUser(t, "company_admin")
	loginAs(t, admin, d.base, email, pass)
	openView(t, sup, "dispatch")
	openView(t, admin, "dispatch")

	post := func(i int, prio string) string {
		st, _, body := d.call(t, "POST", "/v1/events", map[string]any{"type": "GAS_LEAK", "priority": prio, "vertical": "emergency",
			"idempotency_key": fmt.Sprintf("tray-%d", i), "zone_code": "lyon", "payload": map[string]any{"lat": 45.76, "lng": 4.83}}, d.key()...)
		expect(t, "event", st, 201, body)
		return body["event_id"].(string)
	}
	first := post(0, "high")
	item := `document.querySelector('#alert-tray li[data-kind="event_undispatched"]')`
	for _, page := range []context.Context{sup, admin} {
		waitJS(t, page, "the alert in the tray", item+` && `+item+`.textContent.includes('High event not dispatched: Gas leak in lyon') &&
			document.title === '(1) fieldrelay console'`)
	}
	clickJS(t, sup, "acknowledge", "#alert-tray li button.ack")
	waitJS(t, admin, "taken, seen in the other browser", item+`.textContent.includes('taken by') && !`+item+`.querySelector('button.ack') &&
		document.title === 'fieldrelay console' && document.querySelector('#alert-count').textContent === 'all taken'`)

	// Five more: three show, the rest are counted; a reload keeps them; none covers a button.
	for i := 1; i <= 5; i++ {
		post(i, "critical")
	}
	waitJS(t, admin, "three shown, the rest counted", `document.querySelectorAll('#alert-tray li').length === 3 &&
		document.querySelector('#alert-more').textContent === '3 more' && document.title === '(5) fieldrelay console'`)
	do(t, admin, "reload", chromedp.Reload())
	waitJS(t, admin, "the alerts after a reload", `document.querySelectorAll('#alert-tray li').length === 3 &&
		document.querySelector('#alert-count').textContent === '5 to take'`)
	openView(t, admin, "dispatch")
	waitJS(t, admin, "the queue", `document.querySelectorAll('#queue tbody tr[data-event-id]').length >= 6`)
	clickJS(t, admin, "pick the first event", "#queue tbody button")
	waitJS(t, admin, "the scores", `document.querySelector('#score-table button[data-dispatch-team]')`)
	waitJS(t, admin, "no button covered", `getComputedStyle(document.querySelector('#alert-tray')).position === 'static' &&
		[...document.querySelectorAll('#view button, #alert-tray button')].filter(b => b.offsetParent).every(b => {
			b.scrollIntoView({ block: 'center' });
			const r = b.getBoundingClientRect();
			const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
			return at && (at === b || b.contains(at));
		})`)
	screenshot(t, admin, artifactsDir(t), "alert-tray")

	// Acknowledge all, in the first browser: the second sees every alert taken.
	clickJS(t, sup, "acknowledge all", "#alert-ack-all")
	waitJS(t, admin, "all taken", `document.querySelector('#alert-count').textContent === 'all taken' && document.title === 'fieldrelay console'`)

	// A dispatch ends the first alert's cause: it leaves every tray.
	supAuth := d.login(t, "operational_supervisor")
	st, _, body := d.call(t, "POST", "/v1/teams/dispatch/score", map[string]any{"event_id": first}, supAuth...)
	expect(t, "score", st, 200, body)
	teamID := body["data"].([]any)[0].(map[string]any)["team_id"].(string)
	st, _, body = d.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": first, "team_id": teamID}, supAuth...)
	expect(t, "dispatch", st, 201, body)
	waitJS(t, admin, "the closed alert gone", `document.querySelector('#alert-more').textContent === '2 more'`)
	watch.check(t)
}

// TestConsoleCloseIncident: from the event's detail (which also offers Dispatch), a
// supervisor closes the incident with a disposition and stands down the team still on it;
// the dialog takes the focus, keeps Tab inside, and Esc closes it, giving the focus back
// (docs/decisions/0173-incident-disposition.md).
func TestConsoleCloseIncident(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	browser := startChromium(t, ctx)
	d := serveDemo(t, binary(t), t.TempDir())
	st, _, body := d.call(t, "POST", "/v1/events", map[string]any{"type": "GAS_LEAK", "priority": "high", "vertical": "emergency",
		"idempotency_key": "close-1", "zone_code": "lyon", "payload": map[string]any{"lat": 45.76, "lng": 4.83}}, d.key()...)
	expect(t, "event", st, 201, body)
	eventID := body["event_id"].(string)
	supAuth := d.login(t, "operational_supervisor")
	st, _, body = d.call(t, "POST", "/v1/teams/dispatch/score", map[string]any{"event_id": eventID}, supAuth...)
	expect(t, "score", st, 200, body)
	teamID := body["data"].([]any)[0].(map[string]any)["team_id"].(string)
	st, _, body = d.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": teamID}, supAuth...)
	expect(t, "dispatch", st, 201, body)
	missionID := body["mission_id"].(string)

	watch := &browserWatch{origin: d.base}
	sup := tab(t, browser, watch, "supervisor")
	email, pass := d.demoUser(t, "operational_supervisor")
	loginAs(t, sup, d.base, email, pass)
	do(t, sup, "deep link", chromedp.Navigate(d.base+"/console/#/events/"+eventID))
	waitJS(t, sup, "the detail with Dispatch and Close", `document.querySelector('#event-detail #detail-dispatch') &&
		document.querySelector('#event-detail #detail-close-incident')`)

	clickJS(t, sup, "close the incident", "#detail-close-incident")
	waitJS(t, sup, "the dialog has the focus", `document.activeElement && document.activeElement.id === 'close-disposition' &&
		document.querySelector('#close-dialog[role="dialog"][aria-modal="true"] #stand-`+missionID+`').checked`)
	do(t, sup, "Esc", chromedp.KeyEvent("\u001b"))
	waitJS(t, sup, "Esc closed it and gave the focus back", `!document.querySelector('#close-dialog') &&
		document.activeElement && document.activeElement.id === 'detail-close-incident'`)

	clickJS(t, sup, "close the incident", "#detail-close-incident")
	waitJS(t, sup, "the dialog again", `document.activeElement && document.activeElement.id === 'close-disposition'`)
	waitJS(t, sup, "shift-tab from the first field wraps to the last", `(() => {
		document.activeElement.dispatchEvent(new KeyboardEvent('keydown', { key: 'Tab', shiftKey: true, bubbles: true, cancelable: true }));
		return document.activeElement.id === 'close-cancel' })()`)
	if _, err := chromedp.Run(sup, chromedp.Evaluate[bool](`(() => { const s = document.getElementById('close-disposition'); s.value = 'false_alarm';
		document.getElementById('close-note').value = 'barbecue next door'; return true })()`)); err != nil {
		t.Fatal(err)
	}
	clickJS(t, sup, "submit", "#close-submit")
	waitJS(t, sup, "the disposition on the record", `!document.querySelector('#close-dialog') && document.querySelector('#event-disposition') &&
		document.querySelector('#event-disposition').textContent.includes('False alarm — barbecue next door') &&
		!document.querySelector('#detail-close-incident')`)

	st, _, body = d.call(t, "GET", "/v1/events/"+eventID, nil, supAuth...)
	expect(t, "the event", st, 200, body)
	if body["status"] != "closed" || body["disposition"].(map[string]any)["code"] != "false_alarm" {
		t.Fatalf("the event = %v", body)
	}
	st, _, body = d.call(t, "GET", "/v1/missions/"+missionID, nil, supAuth...)
	expect(t, "the mission", st, 200, body)
	fb, _ := body["feedback"].(map[string]any)
	if body["status"] != "FAILED" || fb["stood_down"] != true || fb["reason"] != "Incident closed: False alarm — barbecue next door" {
		t.Fatalf("the stood-down mission = %v", body)
	}
	openView(t, sup, "dispatch")
	waitJS(t, sup, "out of the queue", `!document.querySelector('#queue tr[data-event-id="`+eventID+`"]')`)
	watch.check(t)
}
