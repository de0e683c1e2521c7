package e2e

// Chromium test of the console's administration of API keys and webhook subscriptions:
// created, rotated with a grace, revoked, edited; a new key or secret shown once.

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleAdminKeysAndWebhooks: the admin creates a key (shown once, and it works),
// rotates it with a 60-minute grace (both keys work), revokes the new one (refused at
// once); subscribes a webhook (secret shown once) and edits its events; a "Saved." goes
// at the first key typed after it.
func TestConsoleAdminKeysAndWebhooks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	browser := startChromium(t, ctx)
	d := serveDemo(t, binary(t), t.TempDir())
	watch := &browserWatch{origin: d.base}
	adm := tab(t, browser, watch, "admin")
	email, pass := d.demoUser(t, "company_admin")
	loginAs(t, adm, d.base, email, pass)
	openView(t, adm, "admin")

	text := func(expr string) string {
		v, err := chromedp.Run(adm, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	works := func(key string) int {
		st, _, _ := d.call(t, "GET", "/v1/events?limit=1", nil, "x-svc-api-key", key)
		return st
	}
	keyRe := regexp.MustCompile(`^fr_live_[0-9A-Za-z]{32}$`)

	waitJS(t, adm, "the keys", `!!document.querySelector('#apikey-table')`)
	text(`document.querySelector('#key-name').value = 'console test', document.querySelector('input[name=scope][value="events:read"]').checked = true, ''`)
	clickJS(t, adm, "create the key", "#key-create")
	waitJS(t, adm, "the new key, shown", `!!document.querySelector('#new-key-value')`)
	first := text(`document.querySelector('#new-key-value').textContent`)
	if !keyRe.MatchString(first) {
		t.Fatalf("the new key = %q", first)
	}
	if st := works(first); st != 200 {
		t.Fatalf("the new key answers %d", st)
	}
	clickJS(t, adm, "done", "#new-key-done")
	waitJS(t, adm, "the key no longer on the page", `!document.querySelector('#new-key') && !document.body.innerHTML.includes('`+first+`')`)

	prefix := first[:12]
	id := text(`[...document.querySelectorAll('#apikey-table tr[data-key-id]')].find(r => r.textContent.includes('` + prefix + `')).dataset.keyId`)
	clickJS(t, adm, "rotate", `button[data-rotate="`+id+`"]`)
	waitJS(t, adm, "the grace asked", `document.activeElement && document.activeElement.id === 'rotate-grace'`)
	text(`document.querySelector('#rotate-grace').value = '60', ''`)
	clickJS(t, adm, "rotate it", "#rotate-confirm")
	waitJS(t, adm, "the rotated key, shown", `!!document.querySelector('#new-key-value') && !!document.querySelector('#old-key-until')`)
	second := text(`document.querySelector('#new-key-value').textContent`)
	if !keyRe.MatchString(second) || second == first {
		t.Fatalf("the rotated key = %q", second)
	}
	if st := works(first); st != 200 {
		t.Errorf("the old key within its grace answers %d", st)
	}
	if st := works(second); st != 200 {
		t.Errorf("the rotated key answers %d", st)
	}
	clickJS(t, adm, "done", "#new-key-done")

	id2 := text(`[...document.querySelectorAll('#apikey-table tr[data-key-id]')].find(r => r.textContent.includes('` + second[:12] + `')).dataset.keyId`)
	clickJS(t, adm, "revoke", `button[data-revoke="`+id2+`"]`)
	waitJS(t, adm, "the revocation asked, focused", `document.activeElement && document.activeElement.id === 'revoke-confirm'`)
	if st := works(second); st != 200 {
		t.Fatalf("revoked before the confirmation: %d", st)
	}
	clickJS(t, adm, "revoke it", "#revoke-confirm")
	waitJS(t, adm, "the key gone from the list", `!document.querySelector('#apikey-table tr[data-key-id="`+id2+`"]')`)
	if st := works(second); st != 401 {
		t.Errorf("the revoked key answers %d", st)
	}

	// A "Saved." goes at the first key typed after it.
	clickJS(t, adm, "save the settings", `#settings-form button[type=submit]`)
	waitJS(t, adm, "Saved.", `document.querySelector('#msg-settings') && document.querySelector('#msg-settings').textContent === 'Saved.'`)
	do(t, adm, "type a value", chromedp.Focus(chromedp.ID("set-threshold")), chromedp.KeyEvent("5"))
	waitJS(t, adm, "no stale Saved.", `!document.querySelector('#msg-settings')`)

	// An address, not a name: the node resolves a name, and the test may run offline.
	openView(t, adm, "webhooks")
	text(`document.querySelector('#wh-url').value = 'https://93.184.215.14/fieldrelay', document.querySelector('#wh-events').value = 'mission.*, team.dispatched', ''`)
	clickJS(t, adm, "subscribe", "#wh-create")
	waitJS(t, adm, "the secret, shown", `!!document.querySelector('#wh-secret-value') || !!document.querySelector('#wh-error')`)
	if e := text(`(document.querySelector('#wh-error') || {}).textContent || ''`); e != "" {
		t.Fatalf("subscribing: %s", e)
	}
	if s := text(`document.querySelector('#wh-secret-value').textContent`); !strings.HasPrefix(s, "whsec_") {
		t.Fatalf("the secret = %q", s)
	}
	clickJS(t, adm, "done", "#wh-secret-done")
	waitJS(t, adm, "the secret gone", `!document.querySelector('#wh-secret')`)
	_, _, list := d.call(t, "GET", "/v1/webhooks", nil, d.key()...)
	hook := list["data"].([]any)[0].(map[string]any)
	hookID := hook["id"].(string)
	clickJS(t, adm, "edit", `button[data-edit="`+hookID+`"]`)
	waitJS(t, adm, "the edit form, focused", `document.activeElement && document.activeElement.id === 'wh-edit-url'`)
	text(`document.querySelector('#wh-edit-events').value = 'event.created', ''`)
	clickJS(t, adm, "save", "#wh-edit-save")
	waitJS(t, adm, "the form closed", `!document.querySelector('#wh-edit')`)
	_, _, got := d.call(t, "GET", "/v1/webhooks/"+hookID, nil, d.key()...)
	if evs, _ := got["events"].([]any); len(evs) != 1 || evs[0] != "event.created" {
		t.Errorf("the edited subscription = %v", got)
	}
	watch.check(t)
}
