package e2e

// The field app's outbox and sync logic, tested in the browser it runs in (IndexedDB and
// Web Locks exist nowhere else) through the real binary: the modules are imported into a
// page of the app and driven from Go.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestFieldOutbox: sequence numbers stay unique and gapless when two tabs write at once
// and never fall below the node's; every answer of a sync maps to its outcome; a sync
// sends the outbox in order and leaves nothing waiting. It logs how long 1, 100 and 1,000
// waiting changes take from the first sync to the last answer (the measure).
func TestFieldOutbox(t *testing.T) {
	needChromium(t)
	bin := binary(t)
	s := serveDemo(t, bin, t.TempDir())
	op := s.login(t, "field_operator")
	status, _, body := s.call(t, "POST", "/v1/devices/register", map[string]any{"name": "bench phone", "platform": "web"}, op...)
	expect(t, "register", status, 201, body)
	device := body["device_id"].(string)
	status, _, body = s.call(t, "POST", "/v1/devices/"+device+"/credential", nil, op...)
	expect(t, "credential", status, 201, body)
	cred := body["credential"].(string)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	browser := startChromiumAt(t, ctx, 390, 844)
	tabs := make([]context.Context, 2)
	for i := range tabs {
		tab, cancelTab := chromedp.NewContext(browser)
		defer cancelTab()
		do(t, tab, "open a page of the app", chromedp.Navigate(s.base+"/field/manifest.webmanifest"))
		tabs[i] = tab
	}
	run := func(tab context.Context, what, code string) string {
		t.Helper()
		v, err := chromedp.Run(tab, chromedp.Evaluate[string](`(async () => {
			const ob = await import('/field/js/outbox.js');
			const db = await import('/field/js/db.js');
			`+code+`
		})()`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}

	// Answers → outcomes.
	got := run(tabs[0], "stateOf", `return JSON.stringify([
		ob.stateOf({status: 'applied'}), ob.stateOf({status: 'pending'}),
		ob.stateOf({status: 'duplicate', outcome: 'applied'}),
		ob.stateOf({status: 'duplicate', outcome: 'rejected', error: 'mission_closed', message: 'm'}),
		ob.stateOf({status: 'rejected', error: 'invalid_transition', message: 'x'})].map(s => s.state + ':' + (s.error || '')))`)
	if got != `["applied:","pending:","done:","rejected:mission_closed","rejected:invalid_transition"]` {
		t.Fatalf("stateOf: %s", got)
	}

	// Two tabs write 50 changes each at once: 1…100, no number twice.
	done := make(chan string, 2)
	for _, tab := range tabs {
		go func() {
			v, err := chromedp.Run(tab, chromedp.Evaluate[string](`(async () => {
				const ob = await import('/field/js/outbox.js');
				const out = await Promise.all([...Array(50).keys()].map(() => ob.enqueue('connectivity', {zone_code: 'lyon', state: 'online'})));
				return out.map(i => i.sequence_number).join(',');
			})()`, chromedp.EvalAwaitPromise))
			if err != nil {
				v = "error: " + err.Error()
			}
			done <- v
		}()
	}
	seen := map[string]bool{}
	for range tabs {
		for _, n := range strings.Split(<-done, ",") {
			if seen[n] {
				t.Fatalf("sequence number %s given twice", n)
			}
			seen[n] = true
		}
	}
	for i := 1; i <= 100; i++ {
		if !seen[fmt.Sprint(i)] {
			t.Fatalf("sequence number %d missing: %v", i, seen)
		}
	}
	// The node's highest received moves the next number past it.
	if got := run(tabs[1], "atLeast", `await ob.atLeast(40); const a = await ob.enqueue('connectivity', {zone_code: 'lyon', state: 'online'});
		await ob.atLeast(500); const b = await ob.enqueue('connectivity', {zone_code: 'lyon', state: 'online'});
		return a.sequence_number + ',' + b.sequence_number`); got != "101,501" {
		t.Fatalf("atLeast: %s", got)
	}
	// The gap 102…500 is the node's to report; clear the outbox for the measures.
	run(tabs[0], "clear", `await db.tx(['outbox', 'kv'], 'readwrite', (t) => { t.objectStore('outbox').clear(); t.objectStore('kv').put(0, 'seq'); }); return ''`)

	session := fmt.Sprintf(`{device_id: %q, credential: %q}`, device, cred)
	next := 0
	for _, n := range []int{1, 100, 1000} {
		got := run(tabs[0], "sync", fmt.Sprintf(`
			const items = [];
			for (let i = 0; i < %d; i++) items.push(await ob.enqueue('connectivity', {zone_code: 'lyon', state: i %% 2 ? 'online' : 'degraded'}));
			const t0 = performance.now();
			let rounds = 0;
			while (await ob.syncOnce(%s, async () => {})) rounds++;
			const ms = performance.now() - t0;
			const box = await db.all('outbox');
			const bad = box.filter(i => i.state !== 'applied');
			return [ms.toFixed(0), rounds, box.length, bad.length].join(',');`, n, session))
		parts := strings.Split(got, ",")
		next += n
		if len(parts) != 4 || parts[2] != fmt.Sprint(next) || parts[3] != "0" {
			t.Fatalf("sync of %d: %s (ms, extra rounds, outbox, not applied)", n, got)
		}
		t.Logf("field outbox: %d waiting changes applied in %s ms (%s extra requests) on loopback", n, parts[0], parts[1])
	}
	status, _, body = s.call(t, "GET", "/v1/devices/"+device+"/queue", nil, op...)
	expect(t, "queue", status, 200, body)
}
