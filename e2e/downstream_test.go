package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// gateProxy forwards TCP connections from a loopback port to a target while it is open;
// closing it drops every connection and refuses new ones: a site's link cut and restored.
type gateProxy struct {
	ln     net.Listener
	target string
	closed atomic.Bool
	mu     sync.Mutex
	conns  map[net.Conn]bool
}

func startGateProxy(t *testing.T, target string) *gateProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &gateProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.handle(c)
		}
	}()
	t.Cleanup(func() { ln.Close(); p.cut() })
	return p
}

func (p *gateProxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
}

func (p *gateProxy) handle(c net.Conn) {
	defer c.Close()
	if p.closed.Load() {
		return
	}
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	up, err := net.DialTimeout("tcp", target, time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	p.track(c, true)
	p.track(up, true)
	defer p.track(c, false)
	defer p.track(up, false)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// cut closes the link: every connection now and every new one.
func (p *gateProxy) cut() {
	p.closed.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

func (p *gateProxy) restore() { p.closed.Store(false) }

func (p *gateProxy) addr() string { return p.ln.Addr().String() }

// siteAndCentral starts a central node and a site node linked to it through a gate, and
// waits until the site is registered there; it returns the site's device id on the
// central node.
func siteAndCentral(t *testing.T, siteFlags ...string) (*twoNodes, *gateProxy, string) {
	return siteAndCentralWith(t, nil, nil, siteFlags...)
}

// siteAndCentralWith is siteAndCentral with flags for the central node too, and
// beforeLink (when not nil) run on the started site before its link is set.
func siteAndCentralWith(t *testing.T, centralFlags []string, beforeLink func(*twoNodes), siteFlags ...string) (*twoNodes, *gateProxy, string) {
	bin := binary(t)
	n := &twoNodes{t: t, bin: bin, edgeData: t.TempDir(), centralData: t.TempDir(), centralAddr: freeAddr(t),
		edgeFlags: append([]string{"--upstream-retry-max", "1s"}, siteFlags...), centralFlags: centralFlags}
	var centralKey string
	n.centralTenant, centralKey = newSiteTenant(t, bin, []string{"--data", n.centralData}, "central")
	n.centralKey = []string{"x-svc-api-key", centralKey}
	n.makeSite()
	n.startCentral()
	gate := startGateProxy(t, n.centralAddr)
	n.startEdge()
	if beforeLink != nil {
		beforeLink(n)
	}
	mustRun(t, bin, n.centralKey[1]+"\n", "upstream", "set", "--data", n.edgeData, "--tenant", "site",
		"--url", "http://"+gate.addr(), "--api-key", "-", "--json")
	var site string
	n.waitFor("the site's registration", 20*time.Second, func() bool {
		d, _ := n.upstream()["device_id"].(string)
		site = d
		return d != ""
	})
	return n, gate, site
}

var downSquare = map[string]any{"type": "Polygon",
	"coordinates": [][][]float64{{{2.2, 48.8}, {2.4, 48.8}, {2.4, 49.0}, {2.2, 49.0}, {2.2, 48.8}}}}

// TestDownstream_ConfigFlowsDown: zones, teams (with site_id) and a user made on the
// central node appear on the site within seconds while the link is up, and after a cut as
// soon as it returns; the user signs in at the site with the same password; the roster of
// a central team is read-only at the site (409 naming the owner), its status and members'
// positions are the site's; a zone routed to another site does not come down; the status
// shows the cursor and the age of the newest change applied. It measures the latency
// from a central change to its application at the site (p50, p99).
func TestDownstream_ConfigFlowsDown(t *testing.T) {
	const internal = "downstream-metrics-secret-0123456789"
	n, gate, site := siteAndCentral(t, "--internal-secret", internal)
	c, e := n.central, n.edge

	status, _, body := c.call(t, "POST", "/v1/zones", map[string]any{"code": "NORTH", "name": "North",
		"boundary": downSquare, "site_id": site}, n.centralKey...)
	expect(t, "central zone", status, 201, body)
	status, _, body = c.call(t, "POST", "/v1/zones", map[string]any{"code": "ELSEWHERE", "name": "Elsewhere",
		"boundary": downSquare, "site_id": "0190f5c8-0000-7000-8000-000000000000"}, n.centralKey...)
	expect(t, "a zone of an unknown site", status, 400, body)
	status, _, body = c.call(t, "POST", "/v1/teams", map[string]any{"name": "Rescue 1", "verticals": []string{"gov"},
		"zone_code": "NORTH", "site_id": site, "members": []map[string]any{{"name": "Lead", "phone": "+33611111111"}}},
		n.centralKey...)
	expect(t, "central team", status, 201, body)
	team := body["id"].(string)
	member := body["members"].([]any)[0].(map[string]any)["id"].(string)
	mustRun(t, n.bin, "central user password\n", "user", "create", "--data", n.centralData, "--tenant", "central",
		"--email", "dispatcher@central.example", "--name", "Regional dispatcher", "--role", "operational_supervisor",
		"--password-stdin")

	has := func(path string) func() bool {
		return func() bool { st, _, _ := e.call(t, "GET", path, nil, n.edgeKey...); return st == 200 }
	}
	n.waitFor("the central zone at the site", 10*time.Second, has("/v1/zones/NORTH"))
	n.waitFor("the central team at the site", 10*time.Second, has("/v1/teams/"+team))
	login := func() (int, map[string]any) {
		st, _, b := e.call(t, "POST", "/v1/auth/login", map[string]any{"email": "dispatcher@central.example",
			"password": "central user password"})
		return st, b
	}
	n.waitForUser("dispatcher@central.example", 10*time.Second)
	if st, b := login(); st != 200 {
		t.Fatalf("the central user's sign-in at the site: %d %v", st, b)
	}

	status, _, body = e.call(t, "GET", "/v1/teams/"+team, nil, n.edgeKey...)
	expect(t, "site's copy", status, 200, body)
	if body["origin"] == nil || body["site_id"] != site || body["name"] != "Rescue 1" {
		t.Fatalf("the site's copy of the team: %v", body)
	}
	owner := body["origin"].(string)
	status, _, body = e.call(t, "PATCH", "/v1/teams/"+team, map[string]any{"name": "Renamed at the site"}, n.edgeKey...)
	expect(t, "roster edit at the site", status, 409, body)
	if body["error"] != "conflict" || !contains(body["message"], owner) {
		t.Fatalf("roster edit of a copy: %v (owner %s)", body, owner)
	}
	status, _, body = e.call(t, "POST", "/v1/teams/"+team+"/members", map[string]any{"name": "Extra"}, n.edgeKey...)
	expect(t, "member added at the site", status, 409, body)
	status, _, body = e.call(t, "PATCH", "/v1/teams/"+team, map[string]any{"status": "off_duty"}, n.edgeKey...)
	expect(t, "status at the site", status, 200, body)
	status, _, body = e.call(t, "PATCH", "/v1/teams/"+team+"/members/"+member+"/location",
		map[string]any{"lat": 48.9, "lng": 2.3}, n.edgeKey...)
	expect(t, "position at the site", status, 200, body)
	status, _, body = e.call(t, "PATCH", "/v1/zones/NORTH", map[string]any{"name": "x"}, n.edgeKey...)
	expect(t, "zone edit at the site", status, 409, body)

	// Latency with the link up: 20 renames of the central zone.
	var lat []time.Duration
	for i := range 20 {
		name := fmt.Sprintf("North %d", i)
		t0 := time.Now()
		status, _, body = c.call(t, "PATCH", "/v1/zones/NORTH", map[string]any{"name": name}, n.centralKey...)
		expect(t, "central rename", status, 200, body)
		n.waitFor("a rename at the site", 10*time.Second, func() bool {
			_, _, z := e.call(t, "GET", "/v1/zones/NORTH", nil, n.edgeKey...)
			return z["name"] == name
		})
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	t.Logf("downstream latency with the link up (20 changes): p50 %s, p99 %s", lat[len(lat)/2].Round(time.Millisecond),
		lat[len(lat)*99/100].Round(time.Millisecond))

	// A cut: the central node changes the team and adds a zone; nothing arrives; the link
	// returns and both do, the site's status and positions kept.
	gate.cut()
	status, _, body = c.call(t, "PATCH", "/v1/teams/"+team, map[string]any{"name": "Rescue One"}, n.centralKey...)
	expect(t, "central rename of the team", status, 200, body)
	status, _, body = c.call(t, "POST", "/v1/zones", map[string]any{"code": "SOUTH", "name": "South",
		"boundary": downSquare}, n.centralKey...)
	expect(t, "central zone during the cut", status, 201, body)
	time.Sleep(3 * time.Second) // what a pull every 2 s would have brought, had the link been up
	if has("/v1/zones/SOUTH")() {
		t.Fatal("a change crossed a cut link")
	}
	gate.restore()
	n.waitFor("the zone made during the cut", 15*time.Second, has("/v1/zones/SOUTH"))
	n.waitFor("the rename made during the cut", 10*time.Second, func() bool {
		_, _, b := e.call(t, "GET", "/v1/teams/"+team, nil, n.edgeKey...)
		return b["name"] == "Rescue One"
	})
	_, _, body = e.call(t, "GET", "/v1/teams/"+team, nil, n.edgeKey...)
	m := body["members"].([]any)[0].(map[string]any)
	if body["status"] != "off_duty" || m["lat"] != 48.9 {
		t.Fatalf("the site's status and positions were not kept: %v", body)
	}
	st := n.upstream()
	down, _ := st["downstream"].(map[string]any)
	if down == nil || down["cursor"] != down["end"] || down["cursor"].(float64) < 24 || down["newest_applied_at"] == nil ||
		down["lagging"] != false || down["owner"] != owner {
		t.Fatalf("downstream status: %v", down)
	}
	families, text := scrapeMetrics(t, e, internal)
	if !strings.Contains(text, "\nfieldrelay_downstream_behind 0\n") || !strings.Contains(text, "\nfieldrelay_downstream_lagging_links 0\n") ||
		families["fieldrelay_downstream_newest_age_seconds"] == nil {
		t.Fatalf("/metrics of the site:\n%s", text)
	}
	show := string(mustRun(t, n.bin, "", "upstream", "show", "--data", n.edgeData, "--tenant", "site"))
	if !strings.Contains(show, "Downstream: cursor") || !strings.Contains(show, "(0 behind)") {
		t.Fatalf("upstream show:\n%s", show)
	}
}

func contains(v any, s string) bool {
	str, _ := v.(string)
	return s != "" && strings.Contains(str, s)
}

// TestDownstream_DispatchRequests: a central dispatch of a site's team to a site's event
// is a request (202) that becomes a mission on the site, reported back up with the
// request id; a request for a team busy at the site is refused with the reason; a
// request made while the link is down waits, then completes.
func TestDownstream_DispatchRequests(t *testing.T) {
	n, gate, site := siteAndCentral(t)
	c, e := n.central, n.edge
	newTeam := func(name string) string {
		status, _, body := c.call(t, "POST", "/v1/teams", map[string]any{"name": name, "verticals": []string{"gov"},
			"site_id": site, "members": []map[string]any{{"name": name + " lead", "phone": "+33611111111"}}}, n.centralKey...)
		expect(t, "central team", status, 201, body)
		id := body["id"].(string)
		n.waitFor("the team at the site", 10*time.Second, func() bool {
			st, _, _ := e.call(t, "GET", "/v1/teams/"+id, nil, n.edgeKey...)
			return st == 200
		})
		return id
	}
	siteEvent := func(key string) string {
		status, _, body := e.call(t, "POST", "/v1/events", map[string]any{"type": "INTRUSION", "priority": "high",
			"vertical": "gov", "idempotency_key": key}, n.edgeKey...)
		expect(t, "site event", status, 201, body)
		id := body["event_id"].(string)
		n.waitFor("the site's event on the central node", 10*time.Second, func() bool {
			st, _, _ := c.call(t, "GET", "/v1/events/"+id, nil, n.centralKey...)
			return st == 200
		})
		return id
	}
	request := func(event, team string) string {
		status, _, body := c.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": event, "team_id": team,
			"notes": "from the region"}, n.centralKey...)
		expect(t, "central dispatch", status, 202, body)
		if body["status"] != "requested" || body["site_id"] != site || body["dispatch_request_id"] == nil {
			t.Fatalf("dispatch request: %v", body)
		}
		return body["dispatch_request_id"].(string)
	}
	decided := func(id string, limit time.Duration) map[string]any {
		var r map[string]any
		n.waitFor("the site's decision on "+id, limit, func() bool {
			var st int
			st, _, r = c.call(t, "GET", "/v1/dispatch-requests/"+id, nil, n.centralKey...)
			return st == 200 && r["status"] != "requested"
		})
		return r
	}

	team := newTeam("Rescue 1")
	ev := siteEvent("incident-1")
	req := request(ev, team)
	r := decided(req, 15*time.Second)
	if r["status"] != "dispatched" || r["mission_id"] == nil || r["reason"] != nil {
		t.Fatalf("request decided: %v", r)
	}
	mission := r["mission_id"].(string)
	status, _, body := e.call(t, "GET", "/v1/missions/"+mission, nil, n.edgeKey...)
	expect(t, "the site's mission", status, 200, body)
	if body["team_id"] != team || body["event_id"] != ev {
		t.Fatalf("the site's mission: %v", body)
	}
	n.waitFor("the mission on the central node", 10*time.Second, func() bool {
		st, _, _ := c.call(t, "GET", "/v1/missions/"+mission, nil, n.centralKey...)
		return st == 200
	})
	_, _, body = e.call(t, "GET", "/v1/teams/"+team, nil, n.edgeKey...)
	if body["status"] != "on_mission" {
		t.Fatalf("the site's team after the request: %v", body)
	}

	// The same team again, on another event: busy at the site.
	busy := request(siteEvent("incident-2"), team)
	r = decided(busy, 15*time.Second)
	if r["status"] != "refused" || r["reason"] != "team_unavailable" || r["mission_id"] != nil {
		t.Fatalf("a request for a busy team: %v", r)
	}

	// While the link is down: the request waits, then completes.
	spare := newTeam("Rescue 2")
	ev3 := siteEvent("incident-3")
	gate.cut()
	waiting := request(ev3, spare)
	time.Sleep(3 * time.Second)
	status, _, body = c.call(t, "GET", "/v1/dispatch-requests/"+waiting, nil, n.centralKey...)
	expect(t, "a waiting request", status, 200, body)
	if body["status"] != "requested" || body["waited_seconds"].(float64) < 2 {
		t.Fatalf("a request while the link is down: %v", body)
	}
	gate.restore()
	r = decided(waiting, 20*time.Second)
	if r["status"] != "dispatched" || r["waited_seconds"].(float64) < 3 {
		t.Fatalf("the request after the cut: %v", r)
	}
}

// TestDownstream_MovesConverge: the site and the central node move the same missions
// while cut off from each other (the site's crew ACK → ON_ROUTE, the central node ON_SITE,
// in both orders of their field times); once the link returns both hold the same status,
// the same *_at and the same history, the skipped states marked implied nowhere. Then
// COMPLETED at the site against FAILED centrally: the same pick on both (the earlier),
// both facts kept, terminal_conflict on both, the site's team freed by the site.
func TestDownstream_MovesConverge(t *testing.T) {
	n, gate, _ := siteAndCentral(t)
	c, e := n.central, n.edge
	team1, team2 := n.newTeam("Patrol 1"), n.newTeam("Patrol 2")
	m1, m2 := n.dispatch(team1, "converge-1"), n.dispatch(team2, "converge-2")
	for _, m := range []mission{m1, m2} {
		n.waitFor("the mission on the central node", 10*time.Second, func() bool {
			st, _, _ := c.call(t, "GET", "/v1/missions/"+m.id, nil, n.centralKey...)
			return st == 200
		})
	}
	centralMove := func(m mission, to string) {
		status, _, body := c.call(t, "PATCH", "/v1/missions/"+m.id+"/status", map[string]any{"status": to}, n.centralKey...)
		expect(t, "central move "+to, status, 200, body)
	}
	get := func(s *served, key []string, m mission) map[string]any {
		status, _, body := s.call(t, "GET", "/v1/missions/"+m.id, nil, key...)
		expect(t, "mission", status, 200, body)
		return body
	}
	fields := []string{"status", "ack_at", "on_route_at", "on_site_at", "completed_at", "failed_at"}
	same := func(m mission) (bool, string) {
		a, b := get(e, n.edgeKey, m), get(c, n.centralKey, m)
		for _, f := range fields {
			if fmt.Sprint(a[f]) != fmt.Sprint(b[f]) {
				return false, fmt.Sprintf("%s: site %v, central %v", f, a[f], b[f])
			}
		}
		ha, _ := json.Marshal(a["history"])
		hb, _ := json.Marshal(b["history"])
		if string(ha) != string(hb) {
			return false, fmt.Sprintf("history: site %s, central %s", ha, hb)
		}
		if fmt.Sprint(a["terminal_conflict"]) != fmt.Sprint(b["terminal_conflict"]) {
			return false, fmt.Sprintf("terminal_conflict: site %v, central %v", a["terminal_conflict"], b["terminal_conflict"])
		}
		return true, ""
	}
	converge := func(what string, ms ...mission) {
		t0 := time.Now()
		for _, m := range ms {
			var why string
			deadline := time.Now().Add(12 * time.Second)
			for ok := false; !ok; {
				if ok, why = same(m); !ok && time.Now().After(deadline) {
					t.Fatalf("%s: mission %s did not converge: %s\nsite's link: %v\nsite: %v\ncentral: %v", what, m.id, why,
						n.upstream(), get(e, n.edgeKey, m)["history"], get(c, n.centralKey, m)["history"])
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		t.Logf("%s: converged in %s", what, time.Since(t0).Round(time.Millisecond))
	}

	gate.cut()
	// m1: the crew first, then the central node; m2: the central node first.
	n.move(m1, "ACK")
	n.move(m1, "ON_ROUTE")
	centralMove(m1, "ON_SITE")
	centralMove(m2, "ON_SITE")
	time.Sleep(10 * time.Millisecond)
	n.move(m2, "ACK")
	n.move(m2, "ON_ROUTE")
	gate.restore()
	converge("concurrent moves", m1, m2)
	for _, m := range []mission{m1, m2} {
		got := get(e, n.edgeKey, m)
		if got["status"] != "ON_SITE" || got["ack_at"] == nil || got["on_route_at"] == nil || got["implied"] != nil {
			t.Fatalf("after the merge: %v", got)
		}
	}

	// COMPLETED against FAILED: the central node's FAILED is the earlier.
	gate.cut()
	centralMove(m1, "FAILED")
	time.Sleep(10 * time.Millisecond)
	n.move(m1, "COMPLETED")
	gate.restore()
	converge("COMPLETED against FAILED", m1)
	got := get(e, n.edgeKey, m1)
	tc, _ := got["terminal_conflict"].(map[string]any)
	if got["status"] != "FAILED" || tc == nil || tc["chosen"] != "FAILED" || tc["other"] != "COMPLETED" ||
		got["completed_at"] == nil || got["failed_at"] == nil {
		t.Fatalf("terminal conflict at the site: %v", got)
	}
	if !strings.Contains(e.logs.String(), "recorded both COMPLETED and FAILED") ||
		!strings.Contains(c.logs.String(), "recorded both COMPLETED and FAILED") {
		t.Fatal("no warning on both nodes")
	}
	for _, node := range []struct {
		name string
		s    *served
		key  []string
	}{{"site", e, n.edgeKey}, {"central", c, n.centralKey}} {
		status, _, body := node.s.call(t, "GET", "/v1/alerts?kind=mission_terminal_conflict", nil, node.key...)
		expect(t, node.name+" alerts", status, 200, body)
		list, _ := body["data"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["mission_id"] != m1.id {
			t.Fatalf("%s: the terminal conflict's alert: %v", node.name, body)
		}
	}
	n.waitFor("the site's team freed", 5*time.Second, func() bool {
		_, _, b := e.call(t, "GET", "/v1/teams/"+team1, nil, n.edgeKey...)
		return b["status"] == "available"
	})
}

// TestDownstream_CentralOnPostgres: the two-way link with the central tier on PostgreSQL,
// two processes behind a round-robin proxy (the downstream log, the dispatch requests and
// the missions in the database): a zone, a team and a user made through one process come
// down; the user signs in at the site; the tenant's settings come down; a zone deleted
// leaves the site; a dispatch request made through one process is
// dispatched at the site and read as such through the other; moves made centrally and at
// the site while cut off converge.
func TestDownstream_CentralOnPostgres(t *testing.T) {
	n, gate, c, site := siteAndPostgresCentral(t)
	bin, ps := n.bin, c.processes()
	p1, p2 := ps[0], ps[1]
	e := n.edge

	status, _, body := p1.call(t, "POST", "/v1/zones", map[string]any{"code": "NORTH", "name": "North",
		"boundary": downSquare, "site_id": site}, n.centralKey...)
	expect(t, "central zone", status, 201, body)
	status, _, body = p2.call(t, "POST", "/v1/teams", map[string]any{"name": "Rescue 1", "verticals": []string{"gov"},
		"site_id": site, "members": []map[string]any{{"name": "Lead", "phone": "+33611111111"}}}, n.centralKey...)
	expect(t, "central team", status, 201, body)
	team := body["id"].(string)
	mustRun(t, bin, "central user password\n", "user", "create", "--database", c.url, "--tenant", "central",
		"--email", "dispatcher@central.example", "--name", "Regional dispatcher", "--role", "operational_supervisor",
		"--password-stdin")
	for _, path := range []string{"/v1/zones/NORTH", "/v1/teams/" + team} {
		n.waitFor(path+" at the site", 15*time.Second, func() bool { st, _, _ := e.call(t, "GET", path, nil, n.edgeKey...); return st == 200 })
	}
	n.waitForUser("dispatcher@central.example", 15*time.Second)
	status, _, body = e.call(t, "POST", "/v1/auth/login", map[string]any{"email": "dispatcher@central.example",
		"password": "central user password"})
	expect(t, "the central user's sign-in at the site", status, 200, body)

	// The tenant's settings, changed through one process, come down.
	status, _, body = p2.call(t, "PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_threshold": 0.35},
		n.centralKey...)
	expect(t, "central dispatch settings", status, 200, body)
	n.waitFor("the central settings at the site", 15*time.Second, func() bool {
		_, _, b := e.call(t, "GET", "/v1/tenant/me", nil, n.edgeKey...)
		return b["dispatch_threshold"] == 0.35 && b["settings_origin"] != nil
	})

	// A zone deleted through one process leaves the site.
	status, _, body = p2.call(t, "DELETE", "/v1/zones/NORTH", nil, n.centralKey...)
	expect(t, "central zone deleted", status, 200, body)
	n.waitFor("the zone gone from the site", 15*time.Second, func() bool {
		st, _, _ := e.call(t, "GET", "/v1/zones/NORTH", nil, n.edgeKey...)
		return st == 404
	})

	// A dispatch request through one process, read through the other.
	status, _, body = e.call(t, "POST", "/v1/events", map[string]any{"type": "INTRUSION", "priority": "high",
		"vertical": "gov", "idempotency_key": "pg-1"}, n.edgeKey...)
	expect(t, "site event", status, 201, body)
	ev := body["event_id"].(string)
	n.waitFor("the event centrally", 15*time.Second, func() bool {
		st, _, _ := p2.call(t, "GET", "/v1/events/"+ev, nil, n.centralKey...)
		return st == 200
	})
	status, _, body = p2.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": ev, "team_id": team}, n.centralKey...)
	expect(t, "central dispatch", status, 202, body)
	req := body["dispatch_request_id"].(string)
	var r map[string]any
	n.waitFor("the request decided", 20*time.Second, func() bool {
		_, _, r = p1.call(t, "GET", "/v1/dispatch-requests/"+req, nil, n.centralKey...)
		return r["status"] == "dispatched"
	})
	m := mission{id: r["mission_id"].(string), team: team}
	n.waitFor("the mission centrally", 15*time.Second, func() bool {
		st, _, _ := p1.call(t, "GET", "/v1/missions/"+m.id, nil, n.centralKey...)
		return st == 200
	})

	// Moves on both sides while cut off.
	gate.cut()
	n.move(m, "ACK")
	status, _, body = p2.call(t, "PATCH", "/v1/missions/"+m.id+"/status", map[string]any{"status": "ON_SITE"}, n.centralKey...)
	expect(t, "central move", status, 200, body)
	gate.restore()
	n.waitFor("convergence", 20*time.Second, func() bool {
		_, _, a := e.call(t, "GET", "/v1/missions/"+m.id, nil, n.edgeKey...)
		_, _, b := p1.call(t, "GET", "/v1/missions/"+m.id, nil, n.centralKey...)
		ha, _ := json.Marshal(a["history"])
		hb, _ := json.Marshal(b["history"])
		return a["status"] == "ON_SITE" && b["status"] == "ON_SITE" && string(ha) == string(hb) &&
			fmt.Sprint(a["ack_at"]) == fmt.Sprint(b["ack_at"])
	})
}

// TestDownstream_KilledMidApply: the site is killed (SIGKILL) while it applies the
// central node's log of 600 new teams and 200 zones (two batches of 500), at several
// points; after each kill the stored cursor and the copies agree: every team the log holds
// up to the cursor is there, none after it. Read with the link paused, so that nothing
// moves while it is looked at.
func TestDownstream_KilledMidApply(t *testing.T) {
	n, gate, site := siteAndCentral(t)
	c := n.central
	n.waitFor("the first (empty) snapshot", 10*time.Second, func() bool {
		d, _ := n.upstream()["downstream"].(map[string]any)
		return d != nil && d["snapshots"] == float64(1)
	})
	gate.cut() // the site waits while the central node fills up
	fillCentral(t, [2]*served{c, c}, n.centralKey)
	teamSeqs := n.teamSeqs(t, c, site, 0, 800)
	outcomes := n.killsMidApply(t, gate, teamSeqs, 0, 800, killDelays)
	t.Logf("cursors after the kills: %v", outcomes)
}

// fillCentral makes 600 teams and 200 zones (Z000–Z199) on the central node, through
// both of its processes (or one twice), four requests at a time: 800 changes of its log.
func fillCentral(t *testing.T, ps [2]*served, key []string) {
	t.Helper()
	postAll(t, ps, key, "POST", 800, func(i int) string {
		if i >= 600 {
			return "/v1/zones"
		}
		return "/v1/teams"
	}, func(i int) map[string]any {
		if i >= 600 {
			return map[string]any{"code": fmt.Sprintf("Z%03d", i-600), "name": "Zone", "boundary": downSquare}
		}
		return map[string]any{"name": fmt.Sprintf("Team %d", i), "verticals": []string{"gov"},
			"members": []map[string]any{{"name": "Lead", "phone": "+33611111111"}}}
	})
}

// killDelays are the pauses between a resume and a kill in killsMidApply: dense at first,
// where a pull of 800 changes is applied in two batches within a few hundred milliseconds.
var killDelays = []time.Duration{20 * time.Millisecond, 60 * time.Millisecond, 100 * time.Millisecond,
	140 * time.Millisecond, 180 * time.Millisecond, 220 * time.Millisecond, 260 * time.Millisecond,
	300 * time.Millisecond, 400 * time.Millisecond, 550 * time.Millisecond, 700 * time.Millisecond,
	900 * time.Millisecond, 2 * time.Second}

// teamSeqs reads the central log of site as s holds it, from after to upto, and returns
// the sequence of each team change.
func (n *twoNodes) teamSeqs(t *testing.T, s *served, site string, after, upto float64) []float64 {
	t.Helper()
	var seqs []float64
	for after < upto {
		status, _, body := s.call(t, "POST", "/v1/devices/downstream", map[string]any{"device_id": site, "after": after}, n.centralKey...)
		expect(t, "the central log", status, 200, body)
		for _, ch := range body["changes"].([]any) {
			if ch := ch.(map[string]any); ch["kind"] == "team" {
				seqs = append(seqs, ch["seq"].(float64))
			}
		}
		after = body["through"].(float64)
	}
	return seqs
}

// killsMidApply resumes the site's link and kills the site (kill -9) after each delay,
// while it applies the central log, then cuts the link and restarts the site paused: its
// stored cursor and its team copies must agree (a copy for each team change of teamSeqs
// at or below the cursor), until the cursor reaches upto. It returns how many kills left
// each cursor, counted past base.
func (n *twoNodes) killsMidApply(t *testing.T, gate *gateProxy, teamSeqs []float64, base, upto float64, delays []time.Duration) map[float64]int {
	t.Helper()
	state := func() (cursor float64, teams int) {
		var shown struct {
			Status struct {
				Downstream struct {
					Cursor float64 `json:"cursor"`
				} `json:"downstream"`
			} `json:"status"`
		}
		mustRun(t, n.bin, "", "upstream", "pause", "--data", n.edgeData, "--tenant", "site")
		if err := json.Unmarshal(mustRun(t, n.bin, "", "upstream", "show", "--data", n.edgeData, "--tenant", "site", "--json"), &shown); err != nil {
			t.Fatal(err)
		}
		n.startEdge()
		return shown.Status.Downstream.Cursor, len(list(t, n.edge, "/v1/teams", n.edgeKey))
	}
	outcomes := map[float64]int{}
	for _, delay := range delays {
		gate.restore()
		mustRun(t, n.bin, "", "upstream", "resume", "--data", n.edgeData, "--tenant", "site")
		time.Sleep(delay)
		if err := n.edge.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-n.edge.done
		gate.cut()
		cursor, teams := state()
		want := 0
		for _, seq := range teamSeqs {
			if seq <= cursor {
				want++
			}
		}
		if teams != want {
			t.Fatalf("after a kill at %s: cursor %v and %d team copies, want %d", delay, cursor, teams, want)
		}
		outcomes[cursor-base]++
		if cursor >= upto {
			break
		}
	}
	return outcomes
}

// TestDownstream_ConvergenceAfterCut measures the convergence of 250 missions after a cut
// during which the site recorded 1,000 moves (ACK, ON_ROUTE, ON_SITE, COMPLETED each) and
// the central node 1,000 (the same four, as facts of its own): from the link's return to
// the same history of every mission on both nodes. The cut lasts as long as the moves
// take; its length does not matter to the logs (each side's backlog does), only to the
// retry backoff (capped at 1 s here, 60 s by default).
func TestDownstream_ConvergenceAfterCut(t *testing.T) {
	n, gate, _ := siteAndCentral(t)
	const k = 250
	cutAt := n.movesDuringCut(gate, k, 60*time.Second)
	t.Logf("cut for %s: 1,000 moves on each side", time.Since(cutAt).Round(time.Second))
	t0 := time.Now()
	gate.restore()
	n.waitFor("convergence", 120*time.Second, func() bool { return n.sameHistories(k) })
	t.Logf("converged %s after the link returned (250 missions, 2,000 moves)", time.Since(t0).Round(time.Millisecond))
	for _, m := range list(t, n.edge, "/v1/missions", n.edgeKey) {
		if m["status"] != "COMPLETED" || len(m["history"].([]any)) != 10 { // CREATED, SENT and four moves of each side
			t.Fatalf("a mission after the merge: %v", m)
		}
	}
}

// movesDuringCut dispatches k missions from the site, waits (up to limit) until the central
// node holds them, cuts the link and moves each through ACK, ON_ROUTE, ON_SITE and
// COMPLETED on both nodes: 4k moves a side. It returns when the cut began.
func (n *twoNodes) movesDuringCut(gate *gateProxy, k int, limit time.Duration) time.Time {
	t := n.t
	t.Helper()
	ms := make([]mission, k)
	for i := range ms {
		ms[i] = n.dispatch(n.newTeam(fmt.Sprintf("Patrol %d", i)), fmt.Sprintf("cut-%d", i))
	}
	n.waitFor("the missions centrally", limit, func() bool { return len(list(t, n.central, "/v1/missions", n.centralKey)) == k })
	gate.cut()
	cutAt := time.Now()
	for _, to := range []string{"ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"} {
		for _, m := range ms {
			n.move(m, to)
			status, _, body := n.central.call(t, "PATCH", "/v1/missions/"+m.id+"/status", map[string]any{"status": to}, n.centralKey...)
			expect(t, "central move", status, 200, body)
		}
	}
	return cutAt
}

// sameHistories tells whether both nodes hold k missions, each with the same status,
// completed_at and history on both.
func (n *twoNodes) sameHistories(k int) bool {
	histories := func(s *served, key []string) map[string]string {
		out := map[string]string{}
		for _, m := range list(n.t, s, "/v1/missions", key) {
			h, _ := json.Marshal([]any{m["status"], m["completed_at"], m["history"]})
			out[m["id"].(string)] = string(h)
		}
		return out
	}
	a, b := histories(n.edge, n.edgeKey), histories(n.central, n.centralKey)
	if len(a) != k || len(b) != k {
		return false
	}
	for id, h := range a {
		if b[id] != h {
			return false
		}
	}
	return true
}

// waitForUser waits until the site holds a user with email (a copy of a central user):
// signing in before it arrives would count failed logins and lock the email.
func (n *twoNodes) waitForUser(email string, limit time.Duration) {
	n.t.Helper()
	n.waitFor(email+" at the site", limit, func() bool {
		for _, u := range list(n.t, n.edge, "/v1/tenant/users", n.edgeAdmin) {
			if u["email"] == email {
				return true
			}
		}
		return false
	})
}
