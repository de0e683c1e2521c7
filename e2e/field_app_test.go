package e2e

// The field app end to end in a real headless Chromium, against the real binary: sign in,
// lose the network and the node, work from the service worker's cache and IndexedDB,
// close and reopen the tab, then come back and find every change on the node once, in
// order, with the time it happened in the field.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// setOffline cuts (or gives back) a tab's network, its service worker's included, and
// says so to navigator.onLine.
func setOffline(t *testing.T, ctx context.Context, offline bool) {
	t.Helper()
	if _, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		EmulateOfflineServiceWorker: &offline,
		MatchedNetworkConditions:    []*network.Conditions{{Offline: offline, DownloadThroughput: -1, UploadThroughput: -1}},
	}); err != nil {
		t.Fatalf("network conditions: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: offline,
		DownloadThroughput: -1, UploadThroughput: -1}); err != nil {
		t.Fatalf("network state: %v", err)
	}
}

// waitLong is waitJS with a longer deadline, for what waits on the app's sync.
func waitLong(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (%s): %v", what, expr, err)
		}
		time.Sleep(50 * time.Millisecond) // a poll interval
	}
}

func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// TestFieldAppOffline: the demo's field operator signs in to /field/ on a 390×844 screen
// and sees its team's critical mission; the manifest passes Chromium's installability
// check. The node stops and the network is cut; the reloaded app opens from its cache,
// the operator moves the mission ACK → ON_ROUTE → ON_SITE → COMPLETED with feedback and
// reports an event; the tab is closed and reopened, still offline, and the five changes
// still wait. Two tabs are open when the node and the network come back: the node holds
// every move once, in order, at its field time, and the event; the supervisor's console
// shows the timeline. Then a move the node has already passed is shown rejected with its
// reason, and a device an admin revokes in the console's Devices view is refused.
func TestFieldAppOffline(t *testing.T) {
	needChromium(t)
	bin := binary(t)
	data := t.TempDir()
	s := serveDemo(t, bin, data)
	addr := strings.TrimPrefix(s.base, "http://")
	key := s.key()
	sup := s.login(t, "operational_supervisor")
	shots := artifactsDir(t)
	t.Logf("screenshots in %s", shots)
	teamID := demoTeam(t, s, "SAMU Lyon 1", sup)
	dispatch := func(idem string) string {
		t.Helper()
		status, _, body := s.call(t, "POST", "/v1/events", map[string]any{"type": "CARDIAC_ARREST", "priority": "critical",
			"vertical": "healthcare", "idempotency_key": idem, "zone_code": "lyon",
			"payload": map[string]any{"lat": 45.764, "lng": 4.8357, "address": "12 rue de la République, Lyon",
				"required_equipment": []string{"defibrillator"}}}, key...)
		expect(t, "event", status, 201, body)
		status, _, body = s.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": body["event_id"], "team_id": teamID}, sup...)
		expect(t, "dispatch", status, 201, body)
		return body["mission_id"].(string)
	}
	mission := dispatch("field-app-1")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	browser := startChromiumAt(t, ctx, 390, 844)
	watch := &browserWatch{origin: s.base}
	// The phone is the browser's own profile: Chromium installs no app from an incognito
	// context, which a new browser context is.
	phone := browser
	tab, cancelTab := chromedp.NewContext(phone)
	watch.listen(t, tab, "tab 1")

	// Sign in once, with the network.
	email, password := s.demoUser(t, "field_operator")
	do(t, tab, "sign in", chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(s.base+"/field/"),
		chromedp.WaitVisible(chromedp.ID("email")),
		chromedp.SendKeys(chromedp.ID("email"), email),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.ID("signin-submit")))
	card := `document.querySelector('button[data-mission-id="` + mission + `"]')`
	waitLong(t, tab, "the mission on the phone", card) // a sign-in hashes a password: slow under -race
	waitLong(t, tab, "the service worker in control", `navigator.serviceWorker.controller !== null`)
	waitJS(t, tab, "the last sync said", `document.getElementById('status').textContent.includes('Last sync')`)
	noStrayText(t, tab, "the missions")
	screenshot(t, tab, shots, "field-01-missions")
	axe := loadAxe(t)
	axeCheck(t, tab, axe, "the missions")
	inst, err := chromedp.Call(tab, page.GetInstallabilityErrors, cdp.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if len(inst.InstallabilityErrors) > 0 {
		var errs []string
		for _, e := range inst.InstallabilityErrors {
			errs = append(errs, e.ErrorID)
		}
		t.Errorf("the field app is not installable: %v", errs)
	}
	deviceID := evalJS[string](t, tab, `document.body.dataset.device`)

	// The node stops and the network is cut: the reloaded app opens from its cache.
	if err := s.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	setOffline(t, tab, true)
	do(t, tab, "reload offline", chromedp.Reload())
	waitJS(t, tab, "the mission from IndexedDB", card)
	paint := evalJS[float64](t, tab, `(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: -1}).startTime`)
	t.Logf("field app: first contentful paint offline at 390×844, from the service worker's cache: %.0f ms", paint)
	waitJS(t, tab, "offline said", `document.getElementById('status').dataset.online === 'false'`)
	clickJS(t, tab, "open the mission", `button[data-mission-id="`+mission+`"]`)
	waitJS(t, tab, "the mission's address", `document.getElementById('mission').textContent.includes('12 rue de la République')`)
	if href := evalJS[string](t, tab, `document.getElementById('maplink').getAttribute('href')`); !strings.HasPrefix(href, "geo:45.764,4.8357") {
		t.Errorf("open in maps: %q", href)
	}
	for _, to := range []string{"ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"} {
		if to == "COMPLETED" {
			// Typed into whatever has the focus, as a person types: a re-render of the view
			// (the link's state changing) keeps the focus and the text in the note.
			waitJS(t, tab, "the note to take the focus", `(() => { const n = document.getElementById('move-note'); if (!n) return false; n.focus(); return document.activeElement === n })()`)
			do(t, tab, "feedback", chromedp.KeyEvent("patient handed over"))
			waitJS(t, tab, "the whole note", `document.getElementById('move-note').value === 'patient handed over'`)
		}
		clickJS(t, tab, "move to "+to, `button[data-move="`+to+`"]`)
		waitJS(t, tab, "the waiting "+to, `document.querySelector('#timeline li[data-to="`+to+`"][data-local="waiting"]')`)
	}
	screenshot(t, tab, shots, "field-02-offline-completed")
	axeCheck(t, tab, axe, "a mission, offline")
	clickJS(t, tab, "back to the list", `#back`)
	for _, f := range [][2]string{{"report-type", "gas leak"}, {"report-note", "smell of gas in the stairwell"}} {
		waitJS(t, tab, f[0]+" to take the focus", `(() => { const n = document.getElementById('`+f[0]+`'); if (!n) return false; n.focus(); return document.activeElement === n })()`)
		do(t, tab, f[0], chromedp.KeyEvent(f[1]))
		waitJS(t, tab, "the whole "+f[0], `document.getElementById('`+f[0]+`').value === '`+f[1]+`'`)
	}
	clickJS(t, tab, "send the report", `#report-submit`)
	waitJS(t, tab, "five changes waiting", `document.getElementById('status').dataset.waiting === '5'`)
	cancelTab()

	// Reopened, still offline: the changes still wait.
	tab2, cancelTab2 := chromedp.NewContext(phone)
	defer cancelTab2()
	watch.listen(t, tab2, "tab 2")
	do(t, tab2, "viewport", chromedp.EmulateViewport(390, 844))
	setOffline(t, tab2, true)
	do(t, tab2, "reopen offline", chromedp.Navigate(s.base+"/field/"))
	waitJS(t, tab2, "five changes still waiting", `document.getElementById('status').dataset.waiting === '5'`)
	screenshot(t, tab2, shots, "field-03-reopened-offline")
	tab3, cancelTab3 := chromedp.NewContext(phone)
	defer cancelTab3()
	watch.listen(t, tab3, "tab 3")
	setOffline(t, tab3, true)
	do(t, tab3, "a second tab", chromedp.Navigate(s.base+"/field/"))
	waitJS(t, tab3, "the second tab sees them", `document.getElementById('status').dataset.waiting === '5'`)

	// The node and the network come back, to both tabs at once.
	s.served = serveAt(t, bin, data, addr, false)
	setOffline(t, tab2, false)
	setOffline(t, tab3, false)
	for _, tb := range []context.Context{tab2, tab3} {
		waitLong(t, tb, "every change sent", `document.getElementById('status').dataset.waiting === '0' &&
			document.querySelectorAll('#outbox li[data-state="applied"]').length === 5`)
	}
	noStrayText(t, tab2, "the synced phone")
	screenshot(t, tab2, shots, "field-04-synced")
	type sent struct{ Seq, State, Captured string }
	var box []sent
	if err := json.Unmarshal([]byte(evalJS[string](t, tab2, `JSON.stringify([...document.querySelectorAll('#outbox li')].reverse().map(li => ({Seq: li.dataset.seq, State: li.dataset.state, Captured: li.dataset.captured})))`)), &box); err != nil || len(box) != 5 {
		t.Fatalf("outbox: %v %v", box, err)
	}
	status, _, body := s.call(t, "GET", "/v1/missions/"+mission, nil, key...)
	expect(t, "the mission", status, 200, body)
	var moves []string
	for i, it := range body["history"].([]any) {
		mv := it.(map[string]any)
		moves = append(moves, mv["to"].(string))
		if i >= 2 {
			if mv["source"] != "device" || mv["at"] != box[i-2].Captured {
				t.Errorf("move %v: want source device at the field time %s", mv, box[i-2].Captured)
			}
		}
	}
	if !slices.Equal(moves, []string{"CREATED", "SENT", "ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"}) || body["status"] != "COMPLETED" {
		t.Fatalf("the node's moves: %v (%v)", moves, body["status"])
	}
	if fb, _ := json.Marshal(body["feedback"]); !strings.Contains(string(fb), "patient handed over") {
		t.Errorf("feedback: %s", fb)
	}
	status, _, body = s.call(t, "GET", "/v1/events?limit=100", nil, key...)
	expect(t, "events", status, 200, body)
	reported := 0
	for _, it := range body["data"].([]any) {
		if ev := it.(map[string]any); ev["type"] == "GAS_LEAK" {
			reported++
			if ev["source"] != "device" || ev["device_id"] != deviceID || ev["captured_at"] != box[4].Captured {
				t.Errorf("the reported event: %v", ev)
			}
		}
	}
	if reported != 1 {
		t.Fatalf("%d GAS_LEAK events, want 1", reported)
	}

	// The supervisor's console shows the field's moves.
	console, cancelConsole := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	defer cancelConsole()
	watch.listen(t, console, "supervisor")
	supEmail, supPass := s.demoUser(t, "operational_supervisor")
	loginAs(t, console, s.base, supEmail, supPass)
	do(t, console, "the missions view", chromedp.Click(chromedp.ID("tab-missions")))
	clickJS(t, console, "the mission's timeline", `tr[data-mission-id="`+mission+`"] button`)
	waitJS(t, console, "the completed move", `document.querySelector('#timeline li[data-to="COMPLETED"]')`)
	screenshot(t, console, shots, "field-05-supervisor")
	cancelConsole()
	cancelTab3()

	// A move the node has already passed: the supervisor fails a new mission while the
	// phone, offline, acknowledges it.
	sup = s.login(t, "operational_supervisor")
	second := dispatch("field-app-2")
	do(t, tab2, "reload for the queue", chromedp.Reload())
	// Without a session token since the reload, the mission and its event come from the
	// device's queue.
	waitLong(t, tab2, "the second mission", `document.querySelector('button[data-mission-id="`+second+`"]')`)
	waitJS(t, tab2, "its event from the queue", `document.querySelector('button[data-mission-id="`+second+`"]').textContent.includes('Cardiac arrest')`)
	waitJS(t, tab2, "the new mission's alert", `document.getElementById('new-mission') && document.body.dataset.alert === '1'`)
	setOffline(t, tab2, true)
	clickJS(t, tab2, "open the second mission", `button[data-mission-id="`+second+`"]`)
	waitJS(t, tab2, "the team's and the dispatcher's names from the queue", `document.getElementById('mission').textContent.includes('SAMU Lyon 1') &&
		document.getElementById('mission').textContent.includes('Sofia Supervisor') && document.getElementById('mission').textContent.includes('12 rue de la République')`)
	clickJS(t, tab2, "acknowledge it", `button[data-move="ACK"]`)
	waitJS(t, tab2, "the ACK waits", `document.getElementById('status').dataset.waiting === '1'`)
	status, _, body = s.call(t, "PATCH", "/v1/missions/"+second+"/status", map[string]any{"status": "FAILED",
		"feedback": map[string]any{"reason": "another team took it"}}, sup...)
	expect(t, "the supervisor fails it", status, 200, body)
	setOffline(t, tab2, false)
	waitLong(t, tab2, "the ACK rejected", `document.querySelector('#outbox li[data-state="rejected"]')`)
	if msg := evalJS[string](t, tab2, `document.querySelector('#outbox li[data-state="rejected"]').textContent`); !strings.Contains(msg, "already closed") {
		t.Errorf("the rejection in plain words: %q", msg)
	}
	// The supervisor's failure reaches the phone as a mission_update (issue 27): the
	// mission is failed, without buttons, and the alert names who and why.
	waitJS(t, tab2, "no move offered on the closed mission", `document.getElementById('mission-state').textContent === 'failed' &&
		!document.querySelector('button[data-move]')`)
	waitJS(t, tab2, "the alert names who and why", `document.getElementById('crew-alert') &&
		document.getElementById('crew-alert').textContent.includes('Sofia Supervisor') &&
		document.getElementById('crew-alert').textContent.includes('another team took it')`)
	screenshot(t, tab2, shots, "field-06-rejected")
	axeCheck(t, tab2, axe, "a rejected move")

	// An admin revokes the phone in the console's Devices view; the phone is refused.
	adminTab, cancelAdmin := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	defer cancelAdmin()
	watch.listen(t, adminTab, "admin")
	adEmail, adPass := s.demoUser(t, "company_admin")
	loginAs(t, adminTab, s.base, adEmail, adPass)
	do(t, adminTab, "the devices view", chromedp.Click(chromedp.ID("tab-devices")))
	waitJS(t, adminTab, "the phone listed with its team", `document.querySelector('#devices-table tr[data-device-id="`+deviceID+`"]') &&
		document.querySelector('#devices-table tr[data-device-id="`+deviceID+`"]').textContent.includes('SAMU Lyon 1')`)
	// Revoke asks first: Esc backs out with the focus on Revoke again, a second ask confirms.
	clickJS(t, adminTab, "revoke the phone", `button[data-revoke="`+deviceID+`"]`)
	waitJS(t, adminTab, "the confirmation, focused", `document.activeElement && document.activeElement.id === 'revoke-confirm'`)
	do(t, adminTab, "Esc", chromedp.KeyEvent("\u001b"))
	waitJS(t, adminTab, "no revoke yet", `!document.querySelector('#revoke-confirm') &&
		document.activeElement && document.activeElement.dataset.revoke === '`+deviceID+`' &&
		!document.querySelector('#devices-table tr[data-device-id="`+deviceID+`"]').textContent.includes('revoked')`)
	clickJS(t, adminTab, "revoke the phone", `button[data-revoke="`+deviceID+`"]`)
	clickJS(t, adminTab, "confirm the revoke", `#revoke-confirm`)
	waitJS(t, adminTab, "the phone revoked", `document.querySelector('#devices-table tr[data-device-id="`+deviceID+`"]').textContent.includes('revoked')`)
	screenshot(t, adminTab, shots, "field-07-console-devices")
	do(t, tab2, "reload", chromedp.Reload())
	waitLong(t, tab2, "the refusal", `document.getElementById('status').dataset.state === 'revoked'`)
	screenshot(t, tab2, shots, "field-08-revoked")
	do(t, tab2, "the sunlight theme", chromedp.Click(chromedp.ID("theme-toggle")))
	waitJS(t, tab2, "the sunlight theme", `document.documentElement.classList.contains('sun')`)
	axeCheck(t, tab2, axe, "the sunlight theme")
	watch.check(t)
}

// TestFieldAppUpdate: a phone has the app of one build; the node restarts with another
// build (its field app stamped otherwise): the next visit installs the new service worker,
// which takes over from the old one, reloads the page and drops the old cache.
func TestFieldAppUpdate(t *testing.T) {
	needChromium(t)
	bin := binary(t)
	next := filepath.Join(t.TempDir(), "fieldrelay-next")
	if err := goBuild(next, "-ldflags", "-X github.com/fieldrelay/fieldrelay/server.fieldBuild=next"); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	s := serve(t, bin, data, false)
	addr := strings.TrimPrefix(s.base, "http://")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	browser := startChromiumAt(t, ctx, 390, 844)
	tab, cancelTab := chromedp.NewContext(browser)
	defer cancelTab()
	watch := &browserWatch{origin: s.base}
	watch.listen(t, tab, "phone")
	const version = `new Promise((resolve) => {
		navigator.serviceWorker.addEventListener('message', (e) => resolve(e.data.version), { once: true });
		navigator.serviceWorker.controller.postMessage('version');
	})`
	swVersion := func(base string) string {
		res, err := http.Get(base + "/field/sw.js")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		m := regexp.MustCompile(`const VERSION = "([^"]+)"`).FindSubmatch(body)
		if m == nil {
			t.Fatalf("sw.js: %s", body)
		}
		return string(m[1])
	}
	old := swVersion(s.base)
	do(t, tab, "open the app", chromedp.Navigate(s.base+"/field/"))
	waitLong(t, tab, "the service worker in control", `navigator.serviceWorker.controller !== null`)
	if v, err := chromedp.Run(tab, chromedp.Evaluate[string](version, chromedp.EvalAwaitPromise)); err != nil || v != old {
		t.Fatalf("the worker's version %q (%v), want %q", v, err, old)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	s = serveAt(t, next, data, addr, false)
	fresh := swVersion(s.base)
	if fresh == old {
		t.Fatalf("the new build's app has the old version %s", old)
	}
	do(t, tab, "visit again", chromedp.Navigate(s.base+"/field/"))
	waitLong(t, tab, "the new worker in control", `navigator.serviceWorker.controller !== null &&
		navigator.serviceWorker.controller.scriptURL.endsWith('/field/sw.js') && document.readyState === 'complete'`)
	// The new worker's activation drops the old cache. Wait for that without a message to
	// the old worker: Chromium activates a waiting worker (skipWaiting or not) only once the
	// active one has no event in flight, so a poll that keeps messaging it holds the
	// update back on a busy machine.
	visited := time.Now()
	registration := `navigator.serviceWorker.getRegistration('/field/').then((r) => JSON.stringify({
		installing: r.installing && r.installing.state, waiting: r.waiting && r.waiting.state, active: r.active && r.active.state }))`
	deadline := visited.Add(45 * time.Second)
	for {
		keys, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`caches.keys()`, chromedp.EvalAwaitPromise))
		if err == nil && slices.Equal(keys, []string{"field-" + fresh}) {
			t.Logf("the new worker activated %v after the visit", time.Since(visited).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			reg, _ := chromedp.Run(tab, chromedp.Evaluate[string](registration, chromedp.EvalAwaitPromise))
			t.Fatalf("the caches are %v (%v), want the new one alone; the registration: %s", keys, err, reg)
		}
		time.Sleep(100 * time.Millisecond) // a poll interval
	}
	// The page reloads when the new worker takes over: ask until it answers, once a second.
	deadline = time.Now().Add(30 * time.Second)
	for {
		v, err := chromedp.Run(tab, chromedp.Evaluate[string](version, chromedp.EvalAwaitPromise))
		if err == nil && v == fresh {
			break
		}
		if time.Now().After(deadline) {
			reg, _ := chromedp.Run(tab, chromedp.Evaluate[string](registration, chromedp.EvalAwaitPromise))
			t.Fatalf("the worker's version is %q (%v), want the new %q; the registration: %s", v, err, fresh, reg)
		}
		time.Sleep(time.Second) // a poll interval
	}
	watch.check(t)
}

// TestFieldAppPosition: the operator shares its position (the browser allows it): once
// the mission is acknowledged, the position reaches its member of the team, though the app
// does not know its member id. A move made offline waits through a sign-out and reaches
// the node, once, after the next sign-in.
func TestFieldAppPosition(t *testing.T) {
	needChromium(t)
	bin := binary(t)
	s := serveDemo(t, bin, t.TempDir())
	key, sup := s.key(), s.login(t, "operational_supervisor")
	teamID := demoTeam(t, s, "SAMU Lyon 1", sup)
	status, _, body := s.call(t, "POST", "/v1/events", map[string]any{"type": "FALL", "priority": "high",
		"vertical": "healthcare", "idempotency_key": "field-position", "zone_code": "lyon",
		"payload": map[string]any{"lat": 45.76, "lng": 4.84}}, key...)
	expect(t, "event", status, 201, body)
	status, _, body = s.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": body["event_id"], "team_id": teamID}, sup...)
	expect(t, "dispatch", status, 201, body)
	mission := body["mission_id"].(string)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	browser := startChromiumAt(t, ctx, 390, 844)
	if _, err := chromedp.CallBrowser(browser, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "geolocation"}, Setting: cdpbrowser.PermissionSettingGranted,
		Origin: s.base}); err != nil {
		t.Fatal(err)
	}
	tab, cancelTab := chromedp.NewContext(browser)
	defer cancelTab()
	watch := &browserWatch{origin: s.base}
	watch.listen(t, tab, "phone")
	lat, lng, acc := 45.7512, 4.8467, 10.0
	if _, err := chromedp.Call(tab, emulation.SetGeolocationOverride, emulation.SetGeolocationOverrideParams{
		Latitude: &lat, Longitude: &lng, Accuracy: &acc}); err != nil {
		t.Fatal(err)
	}
	var email, password string
	for _, u := range s.Users {
		if u.Role == "field_operator" {
			email, password = u.Email, u.Password
		}
	}
	signIn := func() {
		t.Helper()
		waitJS(t, tab, "an empty form", `(() => { const e = document.getElementById('email'); e.value = ''; return !document.getElementById('signin').hidden })()`)
		do(t, tab, "sign in", chromedp.WaitVisible(chromedp.ID("email")),
			chromedp.SendKeys(chromedp.ID("email"), email),
			chromedp.SendKeys(chromedp.ID("password"), password),
			chromedp.Click(chromedp.ID("signin-submit")))
		waitLong(t, tab, "the mission", `document.querySelector('button[data-mission-id="`+mission+`"]')`) // a sign-in hashes a password: slow under -race
	}
	do(t, tab, "open the app", chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.base+"/field/"))
	signIn()
	clickJS(t, tab, "share the position", `#share-position`)
	waitJS(t, tab, "sharing on", `document.getElementById('share-position').checked`)
	clickJS(t, tab, "open the mission", `button[data-mission-id="`+mission+`"]`)
	clickJS(t, tab, "acknowledge", `button[data-move="ACK"]`)
	waitLong(t, tab, "the move and the position applied", `document.querySelectorAll('#outbox li[data-state="applied"]').length === 2`)
	status, _, body = s.call(t, "GET", "/v1/teams/"+teamID, nil, sup...)
	expect(t, "team", status, 200, body)
	for _, it := range body["members"].([]any) {
		m := it.(map[string]any)
		if m["name"] == "Camille Martin" && (m["lat"] != lat || m["lng"] != lng) {
			t.Fatalf("the operator's position: %v", m)
		}
		if m["name"] != "Camille Martin" && m["lat"] == lat {
			t.Fatalf("another member moved: %v", m)
		}
	}

	// Offline, a move waits; sign-out keeps it; after sign-in it reaches the node once.
	setOffline(t, tab, true)
	clickJS(t, tab, "on route", `button[data-move="ON_ROUTE"]`)
	waitJS(t, tab, "the move waits", `document.getElementById('status').dataset.waiting === '1'`)
	clickJS(t, tab, "sign out", `#signout`)
	waitJS(t, tab, "signed out", `!document.getElementById('signin').hidden`)
	setOffline(t, tab, false)
	signIn()
	waitLong(t, tab, "the waiting move sent", `document.getElementById('status').dataset.waiting === '0'`)
	status, _, body = s.call(t, "GET", "/v1/missions/"+mission, nil, key...)
	expect(t, "mission", status, 200, body)
	var moves []string
	for _, it := range body["history"].([]any) {
		moves = append(moves, it.(map[string]any)["to"].(string))
	}
	if !slices.Equal(moves, []string{"CREATED", "SENT", "ACK", "ON_ROUTE"}) {
		t.Fatalf("the node's moves: %v", moves)
	}
	watch.check(t)
}
