package e2e

// Chromium tests of the console's dispatch path by keyboard and on a phone: from a chosen
// event to a dispatched team in a handful of keys; at 390×844 the scores follow the tapped
// event, the map's zone names are whole and no word breaks inside ("Tea/m").

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleKeyboardDispatch: Enter on an event of the board opens it with the focus on
// its Dispatch button; Enter opens the dispatch panel with the focus on the best team's
// Dispatch button; Enter dispatches it (or opens the confirmation, focused, which Enter
// confirms). At most four keys from the event to a mission.
func TestConsoleKeyboardDispatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	browser := startChromium(t, ctx)
	d := serveDemo(t, binary(t), t.TempDir())
	st, _, body := d.call(t, "POST", "/v1/events", map[string]any{"type": "GAS_LEAK", "priority": "high", "vertical": "emergency",
		"idempotency_key": "keys-1", "zone_code": "lyon", "payload": map[string]any{"lat": 45.76, "lng": 4.83}}, d.key()...)
	expect(t, "event", st, 201, body)
	eventID := body["event_id"].(string)

	watch := &browserWatch{origin: d.base}
	sup := tab(t, browser, watch, "supervisor")
	email, pass := d.demoUser(t, "operational_supervisor")
	loginAs(t, sup, d.base, email, pass)
	openView(t, sup, "events")
	pick := `#events-body tr[data-event-id="` + eventID + `"] button`
	waitJS(t, sup, "the event on the board", `!!document.querySelector('`+pick+`')`)
	if _, err := chromedp.Run(sup, chromedp.Evaluate[bool](`document.querySelector('`+pick+`').focus(), true`)); err != nil {
		t.Fatal(err)
	}
	enter := func(what string) { do(t, sup, what, chromedp.KeyEvent("\r")) }
	keys := 0
	enter("Enter: open the event")
	keys++
	waitJS(t, sup, "the focus on the detail's Dispatch", `document.activeElement && document.activeElement.id === 'detail-dispatch'`)
	enter("Enter: Dispatch…")
	keys++
	waitJS(t, sup, "the focus on the best team's Dispatch", `location.hash === '#/dispatch/`+eventID+`' &&
		document.activeElement && !!document.activeElement.dataset.dispatchTeam && document.activeElement.classList.contains('primary')`)
	enter("Enter: dispatch the best team")
	keys++
	confirm, err := chromedp.Run(sup, chromedp.Evaluate[bool](`new Promise(r => setTimeout(() => r(!!document.querySelector('#dispatch-confirm')), 300))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if confirm {
		waitJS(t, sup, "the confirmation takes the focus", `document.activeElement && document.activeElement.id === 'confirm-send'`)
		do(t, sup, "Esc", chromedp.KeyEvent("\u001b"))
		waitJS(t, sup, "Esc closed it", `!document.querySelector('#dispatch-confirm') && document.activeElement && !!document.activeElement.dataset.dispatchTeam`)
		enter("Enter: dispatch again")
		waitJS(t, sup, "the confirmation again", `document.activeElement && document.activeElement.id === 'confirm-send'`)
		enter("Enter: send anyway")
		keys++
	}
	waitJS(t, sup, "dispatched", `[...document.querySelectorAll('#alerts .toast')].some(x => x.textContent.includes('Dispatched'))`)
	_, _, list := d.call(t, "GET", "/v1/missions?event_id="+eventID, nil, d.key()...)
	if l, _ := list["data"].([]any); len(l) != 1 {
		t.Fatalf("the event's missions = %v", list)
	}
	if keys > 4 {
		t.Errorf("%d keys from the event to its mission, want at most 4", keys)
	}
	watch.check(t)
}

// TestConsolePhoneDispatch: at 390×844, with a long queue, a tap on the last event brings
// its scores on screen; the map's zone names lie inside the map; no word of the dispatch
// panel or the map's table breaks inside.
func TestConsolePhoneDispatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	browser := startChromiumAt(t, ctx, 390, 844)
	d := serveDemo(t, binary(t), t.TempDir())
	var last string
	for i := range 40 {
		st, _, body := d.call(t, "POST", "/v1/events", map[string]any{"type": "NOISE", "priority": "normal", "vertical": "emergency",
			"idempotency_key": fmt.Sprintf("phone-%d", i), "zone_code": "lyon", "payload": map[string]any{"lat": 45.76, "lng": 4.83}}, d.key()...)
		expect(t, "event", st, 201, body)
		last = body["event_id"].(string)
	}
	watch := &browserWatch{origin: d.base}
	sup := tab(t, browser, watch, "supervisor")
	email, pass := d.demoUser(t, "operational_supervisor")
	loginAs(t, sup, d.base, email, pass)
	openView(t, sup, "dispatch")
	pick := `#queue tr[data-event-id="` + last + `"] button`
	waitJS(t, sup, "the last event in the queue", `!!document.querySelector('`+pick+`')`)
	if _, err := chromedp.Run(sup, chromedp.Evaluate[bool](`document.querySelector('`+pick+`').scrollIntoView(), true`)); err != nil {
		t.Fatal(err)
	}
	clickJS(t, sup, "tap the last event", pick)
	waitJS(t, sup, "the scores on screen", `(() => { const t = document.querySelector('#score-table');
		if (!t) return false; const r = t.getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight - 100 })()`)
	noBrokenWords(t, sup, "#score-panel", "the dispatch panel")
	noSidewaysScroll(t, sup, "the dispatch panel at 390 px")

	openView(t, sup, "map")
	waitJS(t, sup, "the zones' names", `document.querySelectorAll('svg.map .zone-label').length > 0`)
	clipped, err := chromedp.Run(sup, chromedp.Evaluate[string](`(() => { const m = document.querySelector('svg.map').getBoundingClientRect();
		return [...document.querySelectorAll('svg.map .zone-label')].filter(t => { const r = t.getBoundingClientRect();
			return r.left < m.left - 1 || r.right > m.right + 1 || r.top < m.top - 1 || r.bottom > m.bottom + 1 }).map(t => t.textContent).join(', ') })()`))
	if err != nil {
		t.Fatal(err)
	}
	if clipped != "" {
		t.Errorf("zone names cut by the map's edge at 390 px: %s", clipped)
	}
	noBrokenWords(t, sup, "#view table", "the map's table")
	watch.check(t)
}

// noBrokenWords fails when a word of the text under sel, or a card's column name (the
// ::before of table.cards td), is split over two lines.
func noBrokenWords(t *testing.T, ctx context.Context, sel, where string) {
	t.Helper()
	broken, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const out = [];
		for (const root of document.querySelectorAll('`+sel+`')) {
			const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
			for (let n = w.nextNode(); n; n = w.nextNode()) {
				const re = /\S+/g; let m;
				while ((m = re.exec(n.data))) {
					const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
					const tops = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
					if (tops.size > 1) out.push(m[0]);
				}
			}
			for (const td of root.querySelectorAll('table.cards td[data-label]')) {
				const b = getComputedStyle(td, '::before');
				if (b.content !== 'none' && parseFloat(b.height) > 2 * parseFloat(b.fontSize)) out.push(td.dataset.label);
			}
		}
		return [...new Set(out)].slice(0, 5).join(', ') })()`))
	if err != nil {
		t.Fatal(err)
	}
	if broken != "" {
		t.Errorf("%s breaks words: %s", where, broken)
	}
}
