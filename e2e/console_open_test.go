package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleOpenIncidents: an old open high event stays in the dispatch queue after a
// 320-event sync batch and a node restart, is found by the search box (the node's q, kept
// in the URL across a reload), and opens by its deep links (docs/decisions/0170-open-events.md,
// docs/decisions/0171-event-search.md).
func TestConsoleOpenIncidents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	browser := startChromium(t, ctx)
	bin := binary(t)
	data, addr := t.TempDir(), freeAddr(t)
	d := &demoNode{served: serveAt(t, bin, data, addr, false, "--demo")}
	readDemo(t, d, data)

	watch := &browserWatch{origin: d.base}
	sup := tab(t, browser, watch, "supervisor")
	email, pass := d.demoUser(t, "operational_supervisor")
	loginAs(t, sup, d.base, email, pass)
	openView(t, sup, "dispatch")

	st, _, body := d.call(t, "POST", "/v1/events", map[string]any{"type": "GAS_LEAK", "priority": "high", "vertical": "emergency",
		"idempotency_key": "old-gas-leak", "zone_code": "lyon",
		"payload": map[string]any{"lat": 45.76, "lng": 4.83, "address": "4 quai de la Pêcherie", "description": "smell of gas in the cellar"}}, d.key()...)
	expect(t, "the old event", st, 201, body)
	oldID := body["event_id"].(string)
	inQueue := `!!document.querySelector('#queue tr[data-event-id="` + oldID + `"]')`
	waitJS(t, sup, "the old event in the queue", inQueue)

	var items []map[string]any
	for i := range 320 {
		items = append(items, map[string]any{"type": "NOISE", "priority": "high", "vertical": "emergency",
			"idempotency_key": fmt.Sprintf("offline-%d", i), "payload": map[string]any{"description": "music too loud"}})
	}
	st, _, body = d.call(t, "POST", "/v1/sync/batch", map[string]any{"events": items, "device_id": "tablet-7",
		"captured_at": time.Now().UTC().Format(time.RFC3339)}, d.key()...)
	expect(t, "the 320-event batch", st, 200, body)

	// The node restarts; the console reconnects and reloads the open events whole.
	if err := d.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	waitJS(t, sup, "the stream down", `document.querySelector('#live-status').dataset.state !== 'live'`)
	serveAt(t, bin, data, addr, false)
	waitJSWithin(t, sup, 60*time.Second, "the stream back", `document.querySelector('#live-status').dataset.state === 'live'`)
	waitJS(t, sup, "the queue after the restart", inQueue+` && document.querySelectorAll('#queue tbody tr[data-event-id]').length >= 321`)

	// The search box asks the node, and the URL keeps the search.
	openView(t, sup, "events")
	rows := `document.querySelectorAll('#events-body tr[data-event-id]')`
	do(t, sup, "search", chromedp.SendKeys(chromedp.ID("f-q"), "gas pêcherie"))
	found := rows + `.length === 1 && ` + rows + `[0].dataset.eventId === '` + oldID + `'`
	waitJS(t, sup, "the old event found", found)
	waitJS(t, sup, "the search in the URL", `new URLSearchParams(location.search).get('q') === 'gas pêcherie'`)
	do(t, sup, "reload", chromedp.Reload())
	waitJS(t, sup, "the search after a reload", found+` && document.querySelector('#f-q').value === 'gas pêcherie'`)
	if _, err := chromedp.Run(sup, chromedp.Evaluate[bool](`(() => { const e = document.getElementById('f-priority'); e.value = 'high';
		e.dispatchEvent(new Event('change')); return true })()`)); err != nil {
		t.Fatalf("priority high: %v", err)
	}
	clickJS(t, sup, "open only", "#f-open")
	waitJS(t, sup, "open high filters on the node", found+` && /open=true/.test(location.search) && /priority=high/.test(location.search)`)

	// Deep links open it, in the events view and in the dispatch view, after a reload.
	do(t, sup, "deep link", chromedp.Navigate(d.base+"/console/#/events/"+oldID))
	waitJS(t, sup, "the detail", `document.querySelector('#event-detail[data-event-id="`+oldID+`"]')`)
	do(t, sup, "deep link", chromedp.Navigate(d.base+"/console/#/dispatch/"+oldID))
	do(t, sup, "reload", chromedp.Reload())
	waitJS(t, sup, "the scores of the old event", `document.querySelector('#score-panel h3') &&
		document.querySelector('#score-panel h3').textContent.startsWith('Gas leak') &&
		document.querySelector('#queue tr.selected[data-event-id="`+oldID+`"]')`)
	watch.check(t)
}

// TestConsoleMeasureOpenQueue measures, for the closing note of the open-events work, a
// cold load of the console to an interactive dispatch queue of 2,000 open events (four
// sync batches of 500 high and normal events): from navigation to every row shown and the
// first row's button taking a click. It logs; it asserts no time.
func TestConsoleMeasureOpenQueue(t *testing.T) {
	if os.Getenv("FIELDRELAY_CONSOLE_MEASURE") != "1" {
		t.Skip("set FIELDRELAY_CONSOLE_MEASURE=1 to measure the console")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	browser := startChromium(t, ctx)
	d := serveDemo(t, binary(t), t.TempDir())
	for b := range 4 {
		var items []map[string]any
		for i := range 500 {
			prio := "normal"
			if i%4 == 0 {
				prio = "high"
			}
			items = append(items, map[string]any{"type": "NOISE", "priority": prio, "vertical": "emergency",
				"idempotency_key": fmt.Sprintf("q-%d-%d", b, i), "payload": map[string]any{"description": "music too loud"}})
		}
		st, _, body := d.call(t, "POST", "/v1/sync/batch", map[string]any{"events": items, "device_id": "tablet-7",
			"captured_at": time.Now().UTC().Format(time.RFC3339)}, d.key()...)
		expect(t, "a batch of 500", st, 200, body)
	}
	watch := &browserWatch{origin: d.base}
	sup := tab(t, browser, watch, "supervisor")
	email, pass := d.demoUser(t, "operational_supervisor")
	loginAs(t, sup, d.base, email, pass)
	openView(t, sup, "dispatch")
	waitJSWithin(t, sup, 60*time.Second, "the queue", `document.querySelectorAll('#queue tbody tr[data-event-id]').length >= 2000`)

	for run := range 3 {
		cold, cancelCold := chromedp.NewContext(sup)
		do(t, cold, "a cold load", chromedp.Navigate(d.base+"/console/#/dispatch"))
		waitJSWithin(t, cold, 60*time.Second, "an interactive queue of 2,000", `(() => {
			const rows = document.querySelectorAll('#queue tbody tr[data-event-id]');
			if (rows.length < 2000) return false;
			const b = rows[0].querySelector('button');
			const r = b.getBoundingClientRect();
			if (document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2) !== b) return false;
			window.__ready = window.__ready || performance.now();
			return true })()`)
		at, err := chromedp.Run(cold, chromedp.Evaluate[[]float64](`[(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || -1, window.__ready]`))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("cold load %d: first contentful paint %.0f ms, 2,000 open events in the queue and its first button clickable by %.0f ms (polled)", run+1, at[0], at[1])
		res, _ := chromedp.Run(cold, chromedp.Evaluate[string](`performance.getEntriesByType('resource').filter(e => e.name.includes('/v1/')).map(e => e.name.replace(/^.*\/v1\//, '') + ' ' + Math.round(e.startTime) + '+' + Math.round(e.duration)).join('; ')`))
		t.Logf("requests: %s", res)
		cancelCold()
	}
	watch.check(t)
}
