package e2e

// Chromium test of the address and the caller of an event: entered in the new-event form,
// kept in the payload, shown in the dispatch panel and the event's detail; and of the
// announcement of an auto-dispatch.

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleAddressAndCaller: the new-event form writes payload.address and
// payload.caller {name, phone}; the dispatch panel and the detail show them. With
// auto-dispatch on, the node's dispatch of a new event (from the form, or from an API
// client) is announced once.
func TestConsoleAddressAndCaller(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	browser := startChromium(t, ctx)
	d := serveDemo(t, binary(t), t.TempDir())
	watch := &browserWatch{origin: d.base}
	sup := tab(t, browser, watch, "supervisor")
	email, pass := d.demoUser(t, "operational_supervisor")
	loginAs(t, sup, d.base, email, pass)
	openView(t, sup, "events")

	fill := func(typ string) {
		t.Helper()
		clickJS(t, sup, "New event…", "#new-event-open")
		waitJS(t, sup, "the form", `!!document.querySelector('#ne-address')`)
		if _, err := chromedp.Run(sup, chromedp.Evaluate[bool](`(() => { const set = (id, v) => document.getElementById(id).value = v;
			set('ne-type', '`+typ+`'); set('ne-zone', 'lyon'); set('ne-lat', '45.7640'); set('ne-lng', '4.8357');
			set('ne-address', '4 quai de la Pêcherie, Lyon'); set('ne-caller', 'Zoé Martin'); set('ne-phone', '+33 6 12 34 56 78');
			return true })()`)); err != nil {
			t.Fatal(err)
		}
		clickJS(t, sup, "create", "#ne-submit")
	}
	fill("GAS_LEAK")
	waitJS(t, sup, "the dispatch panel with the address and the caller", `location.hash.startsWith('#/dispatch/') &&
		document.querySelector('#score-panel dd.address') && document.querySelector('#score-panel dd.address').textContent === '4 quai de la Pêcherie, Lyon' &&
		document.querySelector('#score-panel dd.caller').textContent === 'Zoé Martin · +33 6 12 34 56 78'`)
	id, err := chromedp.Run(sup, chromedp.Evaluate[string](`decodeURIComponent(location.hash.split('/')[2])`))
	if err != nil {
		t.Fatal(err)
	}
	st, _, ev := d.call(t, "GET", "/v1/events/"+id, nil, d.key()...)
	expect(t, "the event", st, 200, ev)
	p := ev["payload"].(map[string]any)
	caller, _ := p["caller"].(map[string]any)
	if p["address"] != "4 quai de la Pêcherie, Lyon" || caller["name"] != "Zoé Martin" || caller["phone"] != "+33 6 12 34 56 78" {
		t.Fatalf("the payload = %v", p)
	}
	do(t, sup, "the detail", chromedp.Navigate(d.base+"/console/#/events/"+id))
	waitJS(t, sup, "the detail with the address and the caller", `document.querySelector('#event-detail dd.address') &&
		document.querySelector('#event-detail dd.address').textContent === '4 quai de la Pêcherie, Lyon' &&
		document.querySelector('#event-detail dd.caller').textContent === 'Zoé Martin · +33 6 12 34 56 78'`)

	// Auto-dispatch on: a new event from the form, then one from an API client.
	admAuth := d.login(t, "company_admin")
	st, _, body := d.call(t, "PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_mode": true, "dispatch_threshold": 0}, admAuth...)
	expect(t, "auto-dispatch on", st, 200, body)
	fill("FIRE_ALARM")
	auto := `[...document.querySelectorAll('#alerts .toast')].filter(x => x.textContent.startsWith('Auto-dispatched:') && x.textContent.includes('Fire alarm'))`
	waitJS(t, sup, "the form's auto-dispatch announced", auto+`.length === 1`)
	if _, err := chromedp.Run(sup, chromedp.Evaluate[bool](`new Promise(r => setTimeout(() => r(true), 1000))`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	// The stream's team.dispatched came meanwhile: still one announcement, not "×2".
	waitJS(t, sup, "announced once", auto+`.length === 1 && !`+auto+`[0].querySelector('.count').textContent`)
	st, _, body = d.call(t, "POST", "/v1/events", map[string]any{"type": "CARDIAC_ARREST", "priority": "critical", "vertical": "emergency",
		"idempotency_key": "auto-api", "zone_code": "lyon", "payload": map[string]any{"lat": 45.76, "lng": 4.83}}, d.key()...)
	expect(t, "an API client's event", st, 201, body)
	if body["dispatch"] == nil {
		t.Fatalf("the node did not auto-dispatch: %v", body)
	}
	waitJS(t, sup, "the API client's auto-dispatch announced", `[...document.querySelectorAll('#alerts .toast')].some(x => x.textContent.startsWith('Auto-dispatched:') && x.textContent.includes('Cardiac arrest'))`)
	watch.check(t)
}
