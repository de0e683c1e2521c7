package e2e

// Chromium test of the console's accessibility beyond the WCAG rules TestConsoleViews runs:
// axe-core's best practices too, where no moderate, serious or critical finding is left
// (a page's h1, every content inside a landmark, no empty header cell).

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// axeStrict runs axe-core with the WCAG 2.x A and AA rules and the best practices on the
// page, and fails on any finding of moderate impact or worse, and on an empty header cell
// whatever its impact.
func axeStrict(t *testing.T, ctx context.Context, axe, where string) {
	t.Helper()
	if axe == "" {
		return
	}
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof window.axe === 'object'`))
	if err == nil && !loaded {
		_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](axe+"\n;true"))
	}
	if err != nil {
		t.Fatalf("loading axe-core: %v", err)
	}
	found, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`axe.run(document, { resultTypes: ['violations'],
		runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } }).then(r => r.violations
		.filter(v => ['moderate', 'serious', 'critical'].includes(v.impact) || v.id === 'empty-table-header')
		.map(v => v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ') + ' — ' + (n.failureSummary || '').replace(/\s+/g, ' ')).join(' | ')))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe-core on %s: %v", where, err)
	}
	for _, v := range found {
		t.Errorf("axe-core, %s: %s", where, v)
	}
}

// TestConsoleAxeStrict: the log-in page and every view of the admin and the supervisor,
// with an alert in the tray and an event's detail open, have no finding of moderate impact
// or worse.
func TestConsoleAxeStrict(t *testing.T) {
	axe := loadAxe(t)
	if axe == "" {
		t.Skip("axe-core is absent (make axe)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	browser := startChromium(t, ctx)
	d := serveDemo(t, binary(t), t.TempDir())
	eventID, _, _ := dispatchedMission(t, d, "axe-1")
	st, _, body := d.call(t, "POST", "/v1/events", map[string]any{"type": "FIRE_ALARM", "priority": "critical", "vertical": "emergency",
		"idempotency_key": "axe-2", "zone_code": "lyon", "payload": map[string]any{"lat": 45.76, "lng": 4.83}}, d.key()...)
	expect(t, "an undispatched critical event", st, 201, body)

	watch := &browserWatch{origin: d.base}
	page := tab(t, browser, watch, "page")
	do(t, page, "the log-in page", chromedp.Navigate(d.base+"/console/"), chromedp.WaitVisible(chromedp.ID("login-email")))
	axeStrict(t, page, axe, "the log-in page")
	for _, role := range []string{"company_admin", "operational_supervisor"} {
		email, pass := d.demoUser(t, role)
		loginAs(t, page, d.base, email, pass)
		waitJS(t, page, "the alert tray", `!document.getElementById('alert-tray').hidden`)
		for _, v := range views(t, page) {
			openView(t, page, v)
			axeStrict(t, page, axe, role+" "+v)
		}
		do(t, page, "an event's detail", chromedp.Navigate(d.base+"/console/#/events/"+eventID))
		waitJS(t, page, "the detail", `!!document.querySelector('#event-detail')`)
		axeStrict(t, page, axe, role+" event detail")
		clickJS(t, page, "log out", "#logout")
		waitJS(t, page, "logged out", `!document.getElementById('login').hidden`)
	}
	watch.check(t)
}
