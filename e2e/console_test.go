package e2e

// End-to-end tests of the web console in a real headless Chromium, driven over the
// DevTools protocol by chromedp (a test-only dependency), against the real binary.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath is where Debian's chromium package installs the browser.
const chromiumPath = "/usr/bin/chromium"

// browserWatch records, for every tab of a test, the requests the pages make and the
// errors they report (exceptions, console errors, CSP violations).
type browserWatch struct {
	origin   string
	mu       sync.Mutex
	requests []string
	foreign  []string
	errors   []string
}

func (w *browserWatch) listen(t *testing.T, ctx context.Context, who string) {
	t.Helper()
	err := chromedp.Listen(ctx, func(ev any) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			u := e.Request.URL
			w.requests = append(w.requests, who+" "+u)
			if u != w.origin && !strings.HasPrefix(u, w.origin+"/") {
				w.foreign = append(w.foreign, who+" "+u)
			}
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			w.errors = append(w.errors, who+" exception: "+msg)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				w.errors = append(w.errors, who+" console.error: "+strings.Join(parts, " "))
			}
		case *cdplog.EventEntryAdded:
			// A failed request the test caused on purpose is not a fault of the console.
			if e.Entry.Level == cdplog.EntryLevelError && e.Entry.Source != cdplog.EntrySourceNetwork {
				w.errors = append(w.errors, who+" log: "+e.Entry.Text)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
}

func (w *browserWatch) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.requests) == 0 {
		t.Fatal("no request was seen: the network watch does not work")
	}
	if len(w.foreign) > 0 {
		t.Errorf("the console made requests to another origin than %s:\n%s", w.origin, strings.Join(w.foreign, "\n"))
	}
	if len(w.errors) > 0 {
		t.Errorf("the pages reported errors:\n%s", strings.Join(w.errors, "\n"))
	}
}

// artifactsDir is where screenshots go: $FIELDRELAY_E2E_ARTIFACTS (a relative path from the
// repository's root), else a temp dir.
func artifactsDir(t *testing.T) string {
	dir := fromRoot(os.Getenv("FIELDRELAY_E2E_ARTIFACTS"))
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitJS evaluates expr in the page until it is truthy (the console's CSP forbids the
// eval that chromedp.Poll runs inside the page; Runtime.evaluate is not affected).
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	waitJSWithin(t, ctx, 15*time.Second, what, expr)
}

// waitJSWithin is waitJS with another deadline (a reconnection's backoff).
func waitJSWithin(t *testing.T, ctx context.Context, within time.Duration, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (%s): %v", what, expr, err)
		}
		time.Sleep(20 * time.Millisecond) // a poll interval, not a wait for a schedule
	}
}

// clickJS clicks the first enabled element matching sel, as soon as there is one. Unlike
// chromedp.Click it cannot lose a race with a view that re-renders (a live update) between
// finding the node and clicking it: the lookup and the click are one evaluation.
func clickJS(t *testing.T, ctx context.Context, what, sel string) {
	t.Helper()
	q, _ := json.Marshal(sel)
	waitJS(t, ctx, what, `(() => { const b = document.querySelector(`+string(q)+`); if (!b || b.disabled) return false; b.click(); return true })()`)
}

func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// loginAs opens the console in ctx and logs in; it waits for the live stream.
func loginAs(t *testing.T, ctx context.Context, base, email, password string) {
	t.Helper()
	do(t, ctx, "log in as "+email,
		chromedp.Navigate(base+"/console/"),
		chromedp.WaitVisible(chromedp.ID("login-email")),
		chromedp.SendKeys(chromedp.ID("login-email"), email),
		chromedp.SendKeys(chromedp.ID("login-password"), password),
		chromedp.Click(chromedp.ID("login-submit")),
	)
	waitJS(t, ctx, "the live stream", `document.querySelector('#live-status').dataset.state === 'live'`)
}

// TestConsoleE2E drives the console through the real binary in headless Chromium: the demo
// supervisor sees an event arrive live, dispatches the best team from the score panel;
// the demo field operator, in another browser context, moves the mission ACK → ON_ROUTE
// → ON_SITE → COMPLETED, and the supervisor's timeline follows. The admin then opens
// every view (the map shows the SMS gateway, a fake Android phone, up), and no page
// requests anything from another origin or reports an error.
func TestConsoleE2E(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		// CI installs chromium (.ci/run): there, a missing browser is a failure, not a skip.
		if os.Getenv("CI") == "true" {
			t.Fatalf("console end-to-end test: %s is absent and CI=true (apt-get install -y chromium)", chromiumPath)
		}
		t.Skipf("console end-to-end test skipped: %s is absent (apt-get install -y chromium)", chromiumPath)
	}
	bin := binary(t)
	data := t.TempDir()
	// An Android SMS gateway (a fake phone): the map shows its reachability.
	phoneSrv := httptest.NewServer(&fakeAndroidPhone{user: "sms", pass: "console-pass"})
	defer phoneSrv.Close()
	s := serve(t, bin, data, false, "--demo", "--sms-gateway", "android+http://sms:console-pass@"+strings.TrimPrefix(phoneSrv.URL, "http://"))
	var creds struct {
		APIKey string `json:"api_key"`
		Users  []struct{ Email, Password, Role string }
	}
	raw, err := os.ReadFile(filepath.Join(data, "demo-credentials.json"))
	if err != nil || json.Unmarshal(raw, &creds) != nil {
		t.Fatalf("demo credentials: %v", err)
	}
	user := func(role string) (string, string) {
		for _, u := range creds.Users {
			if u.Role == role {
				return u.Email, u.Password
			}
		}
		t.Fatalf("no demo %s", role)
		return "", ""
	}
	key := []string{"x-svc-api-key", creds.APIKey}
	shots := artifactsDir(t)
	t.Logf("screenshots in %s", shots)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("no-sandbox", true), chromedp.DisableGPU, chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true), chromedp.Flag("metrics-recording-only", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1366, 768))
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	if err := chromedp.Do(browser); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	watch := &browserWatch{origin: s.base}
	sup, cancelSup := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	defer cancelSup()
	watch.listen(t, sup, "supervisor")

	// The supervisor logs in and watches the event board.
	supEmail, supPass := user("operational_supervisor")
	loginAs(t, sup, s.base, supEmail, supPass)
	do(t, sup, "the event board", chromedp.WaitVisible(chromedp.ID("events-body")))
	if _, err := chromedp.Run(sup, chromedp.Evaluate[bool](`(() => {
		window.__seen = {};
		const mark = () => {
			for (const tr of document.querySelectorAll('#events-body tr[data-event-id]')) {
				if (!window.__seen[tr.dataset.eventId]) window.__seen[tr.dataset.eventId] = Date.now();
			}
		};
		new MutationObserver(mark).observe(document.body, { childList: true, subtree: true });
		return true;
	})()`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, sup, shots, "01-supervisor-events")

	// Events posted with the API key show up live; the time from POST to the row is
	// measured in the page's clock (same machine).
	var eventID string
	var lat []time.Duration
	for i := range 5 {
		body := map[string]any{"type": "CARDIAC_ARREST", "priority": "critical", "vertical": "healthcare",
			"idempotency_key": fmt.Sprintf("console-e2e-%d", i), "zone_code": "lyon",
			"payload": map[string]any{"lat": 45.764, "lng": 4.8357, "required_equipment": []string{"defibrillator"}}}
		if i > 0 {
			body["type"], body["priority"], body["vertical"], body["zone_code"] = "DELIVERY_DELAY", "low", "logistics", "grenoble"
			body["payload"] = map[string]any{"lat": 45.19, "lng": 5.73}
		}
		sent := time.Now()
		status, _, res := s.call(t, "POST", "/v1/events", body, key...)
		expect(t, "event", status, 201, res)
		id := res["event_id"].(string)
		if i == 0 {
			eventID = id
		}
		waitJS(t, sup, "event "+id+" on the board", `window.__seen['`+id+`']`)
		seen, err := chromedp.Run(sup, chromedp.Evaluate[int64](`window.__seen['`+id+`']`))
		if err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.UnixMilli(seen).Sub(sent))
	}
	slices.Sort(lat)
	t.Logf("event POST → row on the console's board (loopback, 5 events): min %v, median %v, max %v", lat[0], lat[len(lat)/2], lat[len(lat)-1])
	waitJS(t, sup, "the critical row stands out", `document.querySelector('#events-body tr[data-event-id="`+eventID+`"]').classList.contains('critical')`)
	screenshot(t, sup, shots, "02-supervisor-event-arrived")

	// Dispatch the best team from the score panel.
	clickJS(t, sup, "open the dispatch panel", `button[data-dispatch-event="`+eventID+`"]`)
	do(t, sup, "the score panel", chromedp.WaitVisible(chromedp.CSS(`#score-table tr.selected button[data-dispatch-team]`)))
	best, err := chromedp.Run(sup, chromedp.Text(chromedp.CSS(`#score-table tr.selected td strong`)))
	if err != nil || best != "SAMU Lyon 1" {
		t.Fatalf("best team %q (%v), want SAMU Lyon 1", best, err)
	}
	screenshot(t, sup, shots, "03-supervisor-score")
	clickJS(t, sup, "dispatch the best team", `#score-table tr.selected button[data-dispatch-team]`)
	var missionID string
	pollUntil(t, s, "the mission", func() bool {
		_, _, list := s.call(t, "GET", "/v1/missions?event_id="+eventID, nil, key...)
		if items, _ := list["data"].([]any); len(items) == 1 {
			missionID = items[0].(map[string]any)["id"].(string)
		}
		return missionID != ""
	})
	// The score panel follows: the team is busy now and the event has a mission.
	waitJS(t, sup, "the score panel to show the team busy", `[...document.querySelectorAll('#score-table tbody tr')].some(tr =>
		tr.querySelector('strong').textContent === 'SAMU Lyon 1' && tr.textContent.includes('busy'))`)
	do(t, sup, "the missions view", chromedp.Click(chromedp.ID("tab-missions")))
	clickJS(t, sup, "the mission's timeline", `tr[data-mission-id="`+missionID+`"] button`)
	do(t, sup, "the timeline", chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-to="CREATED"]`)))
	screenshot(t, sup, shots, "04-supervisor-dispatched")

	// The field operator, in its own browser context, moves the mission to COMPLETED.
	op, cancelOp := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	defer cancelOp()
	watch.listen(t, op, "operator")
	opEmail, opPass := user("field_operator")
	loginAs(t, op, s.base, opEmail, opPass)
	if n, err := chromedp.Run(op, chromedp.Evaluate[int](`document.querySelectorAll('#tab-dispatch, #tab-admin, #tab-webhooks').length`)); err != nil || n != 0 {
		t.Fatalf("the field operator sees %d views it may not use (%v)", n, err)
	}
	do(t, op, "the operator's missions", chromedp.Click(chromedp.ID("tab-missions")))
	clickJS(t, op, "the operator's mission", `tr[data-mission-id="`+missionID+`"] button`)
	do(t, op, "the moves", chromedp.WaitVisible(chromedp.CSS(`button[data-move="ACK"]`)))
	screenshot(t, op, shots, "05-operator-mission")
	for _, to := range []string{"ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"} {
		if to == "COMPLETED" {
			// Typed into whatever has the focus, as a person types: the supervisor's moves
			// stream in meanwhile and re-render the view, which must keep the focus and
			// the caret in the note (a node-bound SendKeys would lose its node instead).
			// Half the note, then a live update that re-renders the view (a new input
			// node), then the rest: every key must land in the note.
			waitJS(t, op, "the note to take the focus", `(() => { const n = document.getElementById('move-note'); if (!n) return false; n.focus(); window.__note = n; return document.activeElement === n })()`)
			do(t, op, "feedback", chromedp.KeyEvent("patient "))
			st, _, body := s.call(t, "POST", "/v1/connectivity/report", map[string]any{"zone_code": "lyon", "state": "online"}, key...)
			expect(t, "a connectivity report", st, 200, body)
			waitJS(t, op, "the view re-rendered while typing", `document.getElementById('move-note') !== window.__note`)
			do(t, op, "feedback", chromedp.KeyEvent("handed over"))
			waitJS(t, op, "the whole note in the field", `document.getElementById('move-note').value === 'patient handed over'`)
		}
		clickJS(t, op, "move to "+to, `button[data-move="`+to+`"]`)
		if to == "COMPLETED" {
			clickJS(t, op, "confirm the end of the mission", "#end-confirm")
		}
		waitJS(t, op, "the operator's timeline at "+to, `document.querySelector('#timeline li[data-to="`+to+`"]')`)
		waitJS(t, sup, "the supervisor's timeline at "+to, `document.querySelector('#timeline li[data-to="`+to+`"]')`)
	}
	screenshot(t, op, shots, "06-operator-completed")
	moves, err := chromedp.Run(sup, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#timeline li')].map(li => li.dataset.to)`))
	if err != nil || !slices.Equal(moves, []string{"CREATED", "SENT", "ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"}) {
		t.Fatalf("the supervisor's timeline: %v (%v)", moves, err)
	}
	waitJS(t, sup, "the feedback in the timeline", `document.querySelector('#timeline').textContent.includes('patient handed over')`)
	screenshot(t, sup, shots, "07-supervisor-timeline")
	// The timeline reads as words: the note as text (not JSON), no "via api", and a
	// completed mission is not "not yet delivered".
	detail, err := chromedp.Run(sup, chromedp.Text(chromedp.ID("mission-detail")))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"{", "\"note\"", "via api", "not yet delivered"} {
		if strings.Contains(detail, bad) {
			t.Errorf("the completed mission's detail shows %q:\n%s", bad, detail)
		}
	}
	// The mission completed, so its event closed: the dispatch panel on it (its link) says
	// so and offers no Dispatch button (the node would answer 409 event_closed).
	if _, err := chromedp.Run(sup, chromedp.Evaluate[bool](`location.hash = '#/dispatch/`+eventID+`', true`)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, sup, "the closed event in the panel", `document.querySelector('#event-closed') && !document.querySelector('#score-panel button[data-dispatch-team]')`)
	cancelOp()

	// The admin opens every view (the API key list may 404 on this branch: handled).
	admin, cancelAdmin := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	defer cancelAdmin()
	watch.listen(t, admin, "admin")
	adEmail, adPass := user("company_admin")
	loginAs(t, admin, s.base, adEmail, adPass)
	for _, view := range []string{"events", "map", "dispatch", "missions", "webhooks", "admin"} {
		do(t, admin, "the "+view+" view", chromedp.Click(chromedp.ID("tab-"+view)))
		waitJS(t, admin, "the "+view+" view", `document.querySelector('#tab-`+view+`').getAttribute('aria-selected') === 'true'`)
		if view == "map" {
			waitJS(t, admin, "the zones on the map", `document.querySelectorAll('svg.map path.zone').length === 2 && document.querySelectorAll('svg.map circle.member').length === 6`)
			waitJS(t, admin, "the SMS gateway up under the zones", `document.querySelector('#sms-gateway').dataset.state === 'up' && document.querySelector('#sms-gateway').textContent === 'SMS gateway: up'`)
		}
		if view == "admin" {
			waitJS(t, admin, "the API keys section", `document.querySelector('#apikeys table tbody tr code')`)
		}
		screenshot(t, admin, shots, "08-admin-"+view)
	}
	do(t, admin, "the sunlight theme", chromedp.Click(chromedp.ID("theme-toggle")))
	waitJS(t, admin, "the sunlight theme", `document.documentElement.classList.contains('sun')`)
	screenshot(t, admin, shots, "09-admin-sunlight")
	do(t, admin, "log out", chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("login-email")))
	watch.check(t)
}
