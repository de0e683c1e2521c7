package e2e

// Chromium test of the words the console shows for states: every state the API reference
// lists has its words in server/shared/words.js, and the views show the words, never the
// API's codes.

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// stateEnums reads the values of the API reference's state schemas, by the words table's
// kind.
func stateEnums(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(moduleRoot + "/docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for kind, schema := range map[string]string{"mission": "MissionStatus", "event": "EventStatus", "team": "TeamStatus",
		"zone": "ConnectivityState", "alert": "AlertKind", "priority": "Priority"} {
		m := regexp.MustCompile(`(?m)^    ` + schema + `:\n      type: string\n      enum: \[([^\]]*)\]`).FindSubmatch(raw)
		if m == nil {
			t.Fatalf("no enum %s in docs/openapi.yaml", schema)
		}
		for _, v := range strings.Split(string(m[1]), ",") {
			out[kind] = append(out[kind], strings.Trim(strings.TrimSpace(v), "'"))
		}
	}
	return out
}

// TestConsoleStateWords: words.js names every state of the reference; with an event, a
// mission on its way and its alert, the views show words ("On route", "On a mission"),
// not codes (ON_ROUTE, on_mission).
func TestConsoleStateWords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	browser := startChromium(t, ctx)
	d := serveDemo(t, binary(t), t.TempDir())
	_, missionID, supAuth := dispatchedMission(t, d, "words-1")
	for _, to := range []string{"ACK", "ON_ROUTE"} {
		st, _, body := d.call(t, "PATCH", "/v1/missions/"+missionID+"/status", map[string]any{"status": to}, supAuth...)
		expect(t, to, st, 200, body)
	}
	st, _, body := d.call(t, "POST", "/v1/events", map[string]any{"type": "FIRE_ALARM", "priority": "critical", "vertical": "emergency",
		"idempotency_key": "words-2", "zone_code": "lyon", "payload": map[string]any{"lat": 45.76, "lng": 4.83}}, d.key()...)
	expect(t, "an undispatched critical event", st, 201, body)

	watch := &browserWatch{origin: d.base}
	sup := tab(t, browser, watch, "supervisor")
	email, pass := d.demoUser(t, "operational_supervisor")
	loginAs(t, sup, d.base, email, pass)

	enums, _ := json.Marshal(stateEnums(t))
	missing, err := chromedp.Run(sup, chromedp.Evaluate[[]string](`import('/shared/words.js').then(w => Object.entries(`+string(enums)+`)
		.flatMap(([kind, vs]) => vs.filter(v => !(w.WORDS[kind] && w.WORDS[kind][v])).map(v => kind + ':' + v)))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("server/shared/words.js has no words for %v", missing)
	}

	codes := `/\b(CREATED|SENT|ACK|ON_ROUTE|ON_SITE|COMPLETED|FAILED|on_mission|off_duty|queued_offline|event_undispatched|requires_manual|mission_unacknowledged|crew_message)\b/`
	check := func(where, ready string) {
		t.Helper()
		waitJS(t, sup, where, ready)
		found, err := chromedp.Run(sup, chromedp.Evaluate[string](`((document.querySelector('#view').innerText + ' ' + document.querySelector('#alert-tray').innerText).match(`+codes+`) || [''])[0]`))
		if err != nil {
			t.Fatal(err)
		}
		if found != "" {
			t.Errorf("%s shows the code %q", where, found)
		}
	}
	do(t, sup, "the mission", chromedp.Navigate(d.base+"/console/#/missions/"+missionID))
	check("the mission's words", `document.querySelector('#timeline li[data-to="ON_ROUTE"]') &&
		document.querySelector('#mission-detail h3 .badge').textContent === 'On route' &&
		document.querySelector('#timeline').textContent.includes('Acknowledged → On route') &&
		[...document.querySelectorAll('#m-status option')].some(o => o.textContent === 'On site') &&
		document.querySelector('#alert-tray .kind') && document.querySelector('#alert-tray .kind').textContent === 'Not dispatched yet'`)
	openView(t, sup, "teams")
	check("the team board's words", `document.querySelector('#teams-table') && document.querySelector('#teams-table').textContent.includes('On a mission')`)
	openView(t, sup, "events")
	check("the board's words", `document.querySelector('#events-body tr[data-event-id]') && [...document.querySelectorAll('#f-status option')].some(o => o.textContent === 'Queued offline')`)
	openView(t, sup, "map")
	check("the map's words", `document.querySelectorAll('svg.map .zone-label').length > 0`)
	openView(t, sup, "dispatch")
	check("the dispatch panel's words", `document.querySelector('#queue tr[data-event-id]')`)
	watch.check(t)
}
