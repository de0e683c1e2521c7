package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestConsoleUpstreamView: a site's console shows its link in both directions: the push
// (state, backlog, last success) and the downstream (cursor of end, how far behind,
// current or lagging, the newest central change applied and how old it is, when it last
// caught up), read again while shown. When the central node stops short of its log's end,
// the view turns to lagging and downstream_lagging shows in the alerts in its words; it
// leaves once the site caught up (docs/decisions/0210-downstream-lag-alert.md).
func TestConsoleUpstreamView(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	browser := startChromium(t, ctx)
	n, gate, site := siteAndCentral(t, "--downstream-lag-alert", "3s")
	status, _, body := n.central.call(t, "POST", "/v1/zones", map[string]any{"code": "NORTH", "name": "North",
		"boundary": downSquare, "site_id": site}, n.centralKey...)
	expect(t, "central zone", status, 201, body)
	n.waitFor("the central zone at the site", 20*time.Second, func() bool {
		st, _, _ := n.edge.call(t, "GET", "/v1/zones/NORTH", nil, n.edgeKey...)
		return st == 200
	})

	watch := &browserWatch{origin: n.edge.base}
	admin := tab(t, browser, watch, "site admin")
	loginAs(t, admin, n.edge.base, "admin@site.example", "correct horse battery")
	openView(t, admin, "upstream")
	up, down := `document.querySelector('#upstream-up').textContent`, `document.querySelector('#upstream-down').textContent`
	waitJS(t, admin, "both directions", up+`.includes('idle') && `+up+`.includes('Backlog0') && `+up+`.includes('Last success') &&
		`+down+`.includes('1 of 1 (0 behind)') && `+down+`.includes('current') &&
		/^\d+ s ago$/.test(document.querySelector('#upstream-newest-age').textContent) && `+down+`.includes('Caught up')`)
	screenshot(t, admin, artifactsDir(t), "upstream-current")

	proxy, stuck := stuckCentral(t, n.centralAddr)
	stuck.Store(true)
	gate.retarget(strings.TrimPrefix(proxy.URL, "http://"))
	gate.cut()
	gate.restore()
	item := `document.querySelector('#alert-tray li[data-kind="downstream_lagging"]')`
	waitJSWithin(t, admin, 60*time.Second, "the lag in the view", down+`.includes('(5 behind)') && `+down+`.includes('lagging')`)
	waitJSWithin(t, admin, 20*time.Second, "the lag in the alerts", item+` && `+item+`.textContent.includes('5 changes behind')`)
	screenshot(t, admin, artifactsDir(t), "upstream-lagging")

	stuck.Store(false)
	waitJSWithin(t, admin, 60*time.Second, "caught up again", `!`+item+` && `+down+`.includes('(0 behind)') && `+down+`.includes('current')`)
	watch.check(t)
}
