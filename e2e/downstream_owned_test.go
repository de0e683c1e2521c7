package e2e

import (
	"testing"
	"time"
)

// TestDownstream_SettingsComeDown: the central tenant's settings (dispatch settings and
// retention) are the site's from its first snapshot on, follow each central change while
// the link is up and after a cut, and are read-only at the site (409 naming the owner).
func TestDownstream_SettingsComeDown(t *testing.T) {
	n, gate, _ := siteAndCentral(t)
	c, e := n.central, n.edge
	me := func() map[string]any {
		status, _, body := e.call(t, "GET", "/v1/tenant/me", nil, n.edgeKey...)
		expect(t, "site tenant", status, 200, body)
		return body
	}
	n.waitFor("the snapshot's settings at the site", 10*time.Second, func() bool { return me()["settings_origin"] != nil })
	owner := me()["settings_origin"].(string)
	admin := n.centralAdmin()

	status, _, body := c.call(t, "PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_threshold": 0.42,
		"reinforcement_timeout_min": 9, "dispatch_mode": true}, n.centralKey...)
	expect(t, "central dispatch settings", status, 200, body)
	status, _, body = c.call(t, "PATCH", "/v1/tenant/retention", map[string]any{"events_days": 400}, admin...)
	expect(t, "central retention", status, 200, body)
	n.waitFor("the central settings at the site", 10*time.Second, func() bool {
		b := me()
		ff, _ := b["feature_flags"].(map[string]any)
		ret, _ := b["retention"].(map[string]any)
		return b["dispatch_threshold"] == 0.42 && b["reinforcement_timeout_min"] == float64(9) && ff["dispatch_mode"] == true &&
			ret != nil && ret["events_days"] == float64(400)
	})
	status, _, body = e.call(t, "GET", "/v1/tenant/retention", nil, n.edgeAdmin...)
	expect(t, "site retention", status, 200, body)
	if eff, _ := body["effective"].(map[string]any); eff["events_days"] != float64(400) {
		t.Fatalf("the site's effective retention: %v", body)
	}

	for _, c := range []struct{ path, field string }{{"/v1/tenant/dispatch-settings", "dispatch_threshold"},
		{"/v1/tenant/retention", "events_days"}} {
		v := any(0.5)
		if c.field == "events_days" {
			v = 30
		}
		status, _, body = e.call(t, "PATCH", c.path, map[string]any{c.field: v}, n.edgeAdmin...)
		expect(t, "site change of "+c.path, status, 409, body)
		if body["error"] != "conflict" || !contains(body["message"], owner) {
			t.Fatalf("PATCH %s at the site: %v (owner %s)", c.path, body, owner)
		}
	}

	gate.cut()
	status, _, body = c.call(t, "PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_threshold": 0.7}, n.centralKey...)
	expect(t, "central dispatch settings while cut", status, 200, body)
	time.Sleep(300 * time.Millisecond)
	if me()["dispatch_threshold"] != 0.42 {
		t.Fatal("the settings came down through a cut link")
	}
	gate.restore()
	n.waitFor("the settings after the cut", 15*time.Second, func() bool { return me()["dispatch_threshold"] == 0.7 })
}

// centralAdmin creates a company admin on the central node (bbolt) and returns its
// session's header.
func (n *twoNodes) centralAdmin() []string {
	mustRun(n.t, n.bin, "central admin password\n", "user", "create", "--data", n.centralData, "--tenant", "central",
		"--email", "admin@central.example", "--name", "Central admin", "--role", "company_admin", "--password-stdin")
	status, _, body := n.central.call(n.t, "POST", "/v1/auth/login", map[string]any{"email": "admin@central.example",
		"password": "central admin password"})
	expect(n.t, "central login", status, 200, body)
	return []string{"Authorization", "Bearer " + body["token"].(string)}
}
