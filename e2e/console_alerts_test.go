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
