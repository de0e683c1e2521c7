package e2e

import (
	"encoding/json"
	"fmt"
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

// TestDownstream_SMSAtTheCentralGateway: a crew's SMS reply reaching the central node's
// gateway for a mission of a site (dispatched there at the central node's request) finds
// the replica by its code and records the move as a fact; the fact goes down and the site
// derives the same status and history; an FR1 MSG reaches the site's mission; a DONE
// received while the site is cut off is accepted and completes the site's mission (its
// team freed by the site) once the link returns.
func TestDownstream_SMSAtTheCentralGateway(t *testing.T) {
	n, gate, site := siteAndCentral(t)
	c, e := n.central, n.edge
	const phone = "+33611111111"
	status, _, body := c.call(t, "POST", "/v1/teams", map[string]any{"name": "Rescue 1", "verticals": []string{"gov"},
		"site_id": site, "members": []map[string]any{{"name": "Lead", "phone": phone}}}, n.centralKey...)
	expect(t, "central team", status, 201, body)
	team := body["id"].(string)
	n.waitFor("the team at the site", 10*time.Second, func() bool {
		st, _, _ := e.call(t, "GET", "/v1/teams/"+team, nil, n.edgeKey...)
		return st == 200
	})
	status, _, body = e.call(t, "POST", "/v1/events", map[string]any{"type": "INTRUSION", "priority": "high",
		"vertical": "gov", "idempotency_key": "sms-central-1"}, n.edgeKey...)
	expect(t, "site event", status, 201, body)
	ev := body["event_id"].(string)
	n.waitFor("the event centrally", 10*time.Second, func() bool {
		st, _, _ := c.call(t, "GET", "/v1/events/"+ev, nil, n.centralKey...)
		return st == 200
	})
	status, _, body = c.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": ev, "team_id": team}, n.centralKey...)
	expect(t, "central dispatch", status, 202, body)
	req := body["dispatch_request_id"].(string)
	var mission, code string
	n.waitFor("the site's mission centrally", 15*time.Second, func() bool {
		_, _, r := c.call(t, "GET", "/v1/dispatch-requests/"+req, nil, n.centralKey...)
		id, _ := r["mission_id"].(string)
		if id == "" {
			return false
		}
		st, _, m := c.call(t, "GET", "/v1/missions/"+id, nil, n.centralKey...)
		mission, code = id, fmt.Sprint(m["code"])
		return st == 200 && m["code"] != nil
	})
	var gw struct {
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(mustRun(t, n.bin, "", "apikey", "create", "--data", n.centralData, "--tenant", "central",
		"--name", "sms gateway", "--scopes", "sms:inbound", "--json"), &gw); err != nil {
		t.Fatal(err)
	}
	sms := func(text string) map[string]any {
		status, _, body := c.call(t, "POST", "/v1/sms/inbound", map[string]any{"from": phone, "body": text},
			"x-svc-api-key", gw.APIKey)
		expect(t, text, status, 200, body)
		if body["outcome"] != "applied" || body["mission_id"] != mission {
			t.Fatalf("%s at the central gateway: %v", text, body)
		}
		return body
	}
	get := func(s *served, key []string) map[string]any {
		status, _, body := s.call(t, "GET", "/v1/missions/"+mission, nil, key...)
		expect(t, "mission", status, 200, body)
		return body
	}
	same := func(status string) func() bool {
		return func() bool {
			a, b := get(e, n.edgeKey), get(c, n.centralKey)
			ha, _ := json.Marshal(a["history"])
			hb, _ := json.Marshal(b["history"])
			return a["status"] == status && b["status"] == status && string(ha) == string(hb)
		}
	}

	sms("FR1 ACK " + code)
	sms("FR1 SITE " + code)
	n.waitFor("ON_SITE from the central gateway at the site", 15*time.Second, same("ON_SITE"))
	node := ""
	for _, mv := range get(e, n.edgeKey)["history"].([]any) {
		if m := mv.(map[string]any); m["to"] == "ON_SITE" {
			node, _ = m["node"].(string)
			if m["source"] != "sms" {
				t.Fatalf("the ON_SITE fact: %v", m)
			}
		}
	}
	if node == "" {
		t.Fatalf("the site's history has no fact of the central node: %v", get(e, n.edgeKey)["history"])
	}

	sms("FR1 MSG " + code + " need a ladder")
	n.waitFor("the crew's message at the site", 15*time.Second, func() bool {
		_, _, b := e.call(t, "GET", "/v1/missions/"+mission+"/messages", nil, n.edgeKey...)
		for _, m := range b["data"].([]any) {
			if m := m.(map[string]any); m["text"] == "need a ladder" && m["channel"] == "sms" {
				return true
			}
		}
		return false
	})

	gate.cut()
	sms("FR1 DONE " + code)
	if got := get(c, n.centralKey)["status"]; got != "COMPLETED" {
		t.Fatalf("the central copy after DONE: %v", got)
	}
	gate.restore()
	n.waitFor("COMPLETED at the site", 20*time.Second, same("COMPLETED"))
	n.waitFor("the team freed by the site", 10*time.Second, func() bool {
		_, _, b := e.call(t, "GET", "/v1/teams/"+team, nil, n.edgeKey...)
		return b["status"] == "available"
	})
	if _, _, b := e.call(t, "GET", "/v1/missions/"+mission+"/messages", nil, n.edgeKey...); len(b["data"].([]any)) < 1 {
		t.Fatalf("messages at the site: %v", b)
	}
}

// TestDownstream_TeamStatusGoesUp: the status of a central team at its site (and when it
// entered it) reaches the central node's team through the push, whether the site's
// supervisor set it or a dispatch and the mission's end moved it; the central node
// refuses to set it itself (409 naming the site), and a central change of the team's
// roster keeps the site's status on both nodes.
func TestDownstream_TeamStatusGoesUp(t *testing.T) {
	n, _, site := siteAndCentral(t)
	c, e := n.central, n.edge
	status, _, body := c.call(t, "POST", "/v1/teams", map[string]any{"name": "Rescue 1", "verticals": []string{"gov"},
		"site_id": site, "members": []map[string]any{{"name": "Lead", "phone": "+33611111111"}}}, n.centralKey...)
	expect(t, "central team", status, 201, body)
	team := body["id"].(string)
	n.waitFor("the team at the site", 10*time.Second, func() bool {
		st, _, _ := e.call(t, "GET", "/v1/teams/"+team, nil, n.edgeKey...)
		return st == 200
	})
	get := func(s *served, key []string) map[string]any {
		status, _, body := s.call(t, "GET", "/v1/teams/"+team, nil, key...)
		expect(t, "team", status, 200, body)
		return body
	}
	upThere := func(want string) {
		t.Helper()
		n.waitFor("the site's status "+want+" centrally", 10*time.Second, func() bool {
			a, b := get(e, n.edgeKey), get(c, n.centralKey)
			return a["status"] == want && b["status"] == want && a["status_since"] == b["status_since"]
		})
	}

	// The regional board's stream hears of it as the site's board does.
	board := stream(t, &demoNode{served: c}, n.centralKey...)
	status, _, body = e.call(t, "PATCH", "/v1/teams/"+team, map[string]any{"status": "off_duty"}, n.edgeKey...)
	expect(t, "status at the site", status, 200, body)
	upThere("off_duty")
	if m := board.next(t, "team.updated", 10*time.Second); m.data["id"] != team || m.data["status"] != "off_duty" {
		t.Fatalf("the central stream after the site's status: %s", m.raw)
	}
	status, _, body = c.call(t, "PATCH", "/v1/teams/"+team, map[string]any{"status": "available"}, n.centralKey...)
	expect(t, "status centrally", status, 409, body)
	if body["error"] != "conflict" || !contains(body["message"], site) {
		t.Fatalf("a central change of a site's team status: %v", body)
	}
	status, _, body = e.call(t, "PATCH", "/v1/teams/"+team, map[string]any{"status": "available"}, n.edgeKey...)
	expect(t, "available at the site", status, 200, body)
	upThere("available")

	m := n.dispatch(team, "team-status-1")
	upThere("on_mission")
	status, _, body = c.call(t, "PATCH", "/v1/teams/"+team, map[string]any{"name": "Rescue One"}, n.centralKey...)
	expect(t, "central rename", status, 200, body)
	n.waitFor("the rename at the site", 10*time.Second, func() bool { return get(e, n.edgeKey)["name"] == "Rescue One" })
	if a, b := get(e, n.edgeKey), get(c, n.centralKey); a["status"] != "on_mission" || b["status"] != "on_mission" {
		t.Fatalf("after a central rename: site %v, central %v", a["status"], b["status"])
	}
	for _, to := range []string{"ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"} {
		n.move(m, to)
	}
	upThere("available")
}

// TestDownstream_RemovalsComeDown: a central zone deleted, and a central team routed to
// another site, leave the site within seconds; a team on a mission at the site stays
// (marked removed_at, still on its mission) until the mission ends, then goes, its
// mission kept whole; after a cut longer than the central log keeps, the snapshot removes
// the copies it no longer holds.
func TestDownstream_RemovalsComeDown(t *testing.T) {
	n, gate, site := siteAndCentralWith(t, []string{"--downstream-keep", "5"}, nil)
	c, e := n.central, n.edge
	status, _, body := c.call(t, "POST", "/v1/devices/register", map[string]any{"name": "another site",
		"platform": "fieldrelay-node", "hardware_id": "node-other"}, n.centralKey...)
	expect(t, "another site", status, 201, body)
	other := body["device_id"].(string)
	newTeam := func(name string) string {
		status, _, body := c.call(t, "POST", "/v1/teams", map[string]any{"name": name, "verticals": []string{"gov"},
			"site_id": site, "members": []map[string]any{{"name": name + " lead", "phone": "+33611111111"}}}, n.centralKey...)
		expect(t, "central team", status, 201, body)
		return body["id"].(string)
	}
	at := func(path string) int { st, _, _ := e.call(t, "GET", path, nil, n.edgeKey...); return st }
	status, _, body = c.call(t, "POST", "/v1/zones", map[string]any{"code": "NORTH", "name": "North",
		"boundary": downSquare, "site_id": site}, n.centralKey...)
	expect(t, "central zone", status, 201, body)
	idle, busy, later := newTeam("Idle"), newTeam("Busy"), newTeam("Later")
	for _, p := range []string{"/v1/zones/NORTH", "/v1/teams/" + idle, "/v1/teams/" + busy, "/v1/teams/" + later} {
		n.waitFor(p+" at the site", 10*time.Second, func() bool { return at(p) == 200 })
	}
	m := n.dispatch(busy, "removal-1")
	reroute := func(team string) {
		status, _, body := c.call(t, "PATCH", "/v1/teams/"+team, map[string]any{"site_id": other}, n.centralKey...)
		expect(t, "team to another site", status, 200, body)
	}

	status, _, body = c.call(t, "DELETE", "/v1/zones/NORTH", nil, n.centralKey...)
	expect(t, "central zone deleted", status, 200, body)
	reroute(idle)
	reroute(busy)
	var b map[string]any
	n.waitFor("the zone and the idle team gone from the site, the busy one marked", 10*time.Second, func() bool {
		_, _, b = e.call(t, "GET", "/v1/teams/"+busy, nil, n.edgeKey...)
		return at("/v1/zones/NORTH") == 404 && at("/v1/teams/"+idle) == 404 && b["removed_at"] != nil
	})
	if b["status"] != "on_mission" {
		t.Fatalf("the busy team at the site after its removal: %v", b)
	}
	for _, to := range []string{"ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"} {
		n.move(m, to)
	}
	if st := at("/v1/teams/" + busy); st != 404 {
		t.Fatalf("the busy team after its mission: %d, want 404", st)
	}
	status, _, b = e.call(t, "GET", "/v1/missions/"+m.id, nil, n.edgeKey...)
	expect(t, "the mission of the removed team", status, 200, b)
	if b["status"] != "COMPLETED" || len(b["history"].([]any)) < 5 {
		t.Fatalf("the mission of the removed team: %v", b)
	}

	// Cut off through more changes than the log keeps: the snapshot removes the team.
	gate.cut()
	reroute(later)
	for i := range 6 {
		status, _, body := c.call(t, "POST", "/v1/zones", map[string]any{"code": fmt.Sprintf("Z%d", i), "name": "Zone",
			"boundary": downSquare, "site_id": site}, n.centralKey...)
		expect(t, "central zone", status, 201, body)
	}
	snaps := n.upstream()["downstream"].(map[string]any)["snapshots"].(float64)
	gate.restore()
	n.waitFor("the snapshot after the cut", 20*time.Second, func() bool {
		d, _ := n.upstream()["downstream"].(map[string]any)
		return d["snapshots"].(float64) > snaps && at("/v1/zones/Z5") == 200
	})
	if st := at("/v1/teams/" + later); st != 404 {
		t.Fatalf("a team the snapshot no longer holds: %d, want 404", st)
	}
}

// TestDownstream_SiteZoneCollision: a zone the site created itself reaches its central
// node, which refuses a zone of its own with that code for that site (or for every site)
// with 409 naming the site and the local zone, also when a zone of another site is routed
// to it; a zone the site had before it joined is known from its first snapshot; once the
// site deletes its zone the central one is accepted and comes down.
func TestDownstream_SiteZoneCollision(t *testing.T) {
	n, _, site := siteAndCentralWith(t, nil, func(n *twoNodes) {
		status, _, body := n.edge.call(t, "POST", "/v1/zones", map[string]any{"code": "BEFORE", "name": "Site's BEFORE",
			"boundary": downSquare}, n.edgeKey...)
		expect(t, "a site zone before the link", status, 201, body)
	})
	c, e := n.central, n.edge
	status, _, body := c.call(t, "POST", "/v1/devices/register", map[string]any{"name": "another site",
		"platform": "fieldrelay-node", "hardware_id": "node-other"}, n.centralKey...)
	expect(t, "another site", status, 201, body)
	other := body["device_id"].(string)
	for _, code := range []string{"LOCAL", "LOCAL2"} {
		status, _, body = e.call(t, "POST", "/v1/zones", map[string]any{"code": code, "name": "Site's " + code,
			"boundary": downSquare}, n.edgeKey...)
		expect(t, "site zone", status, 201, body)
	}
	local := body["id"].(string) // LOCAL2's
	zone := func(code string, siteID any) (int, map[string]any) {
		st, _, b := c.call(t, "POST", "/v1/zones", map[string]any{"code": code, "name": "Central " + code,
			"boundary": downSquare, "site_id": siteID}, n.centralKey...)
		return st, b
	}
	n.waitFor("the site's zones known centrally", 10*time.Second, func() bool { st, _ := zone("LOCAL", site); return st == 409 })
	st, b := zone("LOCAL", site)
	if b["error"] != "conflict" || !contains(b["message"], site) || !contains(b["message"], "Site's LOCAL") {
		t.Fatalf("a central zone with a site's code: %d %v", st, b)
	}
	if st, b := zone("BEFORE", site); st != 409 || !contains(b["message"], "Site's BEFORE") {
		t.Fatalf("a central zone with the code of a zone the site had before it joined: %d %v", st, b)
	}
	if st, b := zone("LOCAL", nil); st != 409 || !contains(b["message"], site) {
		t.Fatalf("a central zone for every site with a site's code: %d %v", st, b)
	}
	st, b = zone("LOCAL2", other)
	expect(t, "a zone of another site", st, 201, b)
	status, _, body = c.call(t, "PATCH", "/v1/zones/LOCAL2", map[string]any{"site_id": site}, n.centralKey...)
	expect(t, "routed to the site that holds the code", status, 409, body)
	if !contains(body["message"], local) {
		t.Fatalf("the conflict does not name the local zone %s: %v", local, body)
	}

	status, _, body = e.call(t, "DELETE", "/v1/zones/LOCAL", nil, n.edgeKey...)
	expect(t, "site zone deleted", status, 200, body)
	n.waitFor("the central zone accepted", 10*time.Second, func() bool { st, _ := zone("LOCAL", site); return st == 201 })
	n.waitFor("the central zone at the site", 10*time.Second, func() bool {
		_, _, b := e.call(t, "GET", "/v1/zones/LOCAL", nil, n.edgeKey...)
		return b["origin"] != nil
	})
}
