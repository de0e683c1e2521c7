package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// cutProxy forwards TCP connections from a loopback port to a target. While it has cuts
// to make, each new connection is cut (both sides closed) after a random number of bytes
// of the request stream or of the answer stream: a link that drops mid-body.
type cutProxy struct {
	ln     net.Listener
	target string
	toCut  atomic.Int32 // connections still to cut
	cut    atomic.Int32 // connections cut so far
	mu     sync.Mutex
	rnd    *rand.Rand
	wg     sync.WaitGroup
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, rnd: rand.New(rand.NewPCG(7, 2026))}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.handle(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

// takeCut reports whether this connection is to be cut.
func (p *cutProxy) takeCut() bool {
	for {
		n := p.toCut.Load()
		if n <= 0 {
			return false
		}
		if p.toCut.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

func (p *cutProxy) handle(c net.Conn) {
	defer c.Close()
	up, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		return // the target is down: the client sees its connection closed
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go p.pipe(up, c, 400_000, done) // requests: cut mid-body, the upstream never gets it whole
	go p.pipe(c, up, 20_000, done)  // answers: cut after the upstream applied, unheard here
	<-done                          // either side ending (or a cut) ends both
	c.Close()
	up.Close()
	<-done
}

// pipe copies src to dst. When a cut is pending, the pipe that next carries data takes
// it half of the time, forwards a random number of bytes below span more and closes.
func (p *cutProxy) pipe(dst, src net.Conn, span int64, done chan<- struct{}) {
	buf := make([]byte, 32<<10)
	budget := int64(-1)
	defer func() {
		if budget >= 0 {
			p.toCut.Add(1) // the connection ended before its cut: give it back
		}
		done <- struct{}{}
	}()
	for {
		nr, err := src.Read(buf)
		if nr > 0 {
			if budget < 0 && p.toCut.Load() > 0 {
				p.mu.Lock()
				take := p.rnd.IntN(2) == 0
				b := p.rnd.Int64N(span)
				p.mu.Unlock()
				if take && p.takeCut() {
					budget = b
				}
			}
			data := buf[:nr]
			if budget >= 0 && int64(nr) > budget {
				_, _ = dst.Write(data[:budget])
				p.cut.Add(1)
				budget = -1
				return
			}
			if budget >= 0 {
				budget -= int64(nr)
			}
			if _, werr := dst.Write(data); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// twoNodes is the test's view of an edge and its central node.
type twoNodes struct {
	t                     *testing.T
	bin                   string
	edgeData, centralData string
	centralAddr           string
	edge, central         *served
	edgeKey, centralKey   []string
	edgeAdmin             []string
	nodeID, centralTenant string
	edgeFlags             []string
	centralFlags          []string
}

func (n *twoNodes) startEdge() {
	n.edge = serve(n.t, n.bin, n.edgeData, false, n.edgeFlags...)
	status, _, body := n.edge.call(n.t, "POST", "/v1/auth/login", map[string]any{"email": "admin@site.example",
		"password": "correct horse battery"})
	expect(n.t, "edge login", status, 200, body)
	n.edgeAdmin = []string{"Authorization", "Bearer " + body["token"].(string)}
}

func (n *twoNodes) startCentral() {
	n.central = serveAt(n.t, n.bin, n.centralData, n.centralAddr, false, n.centralFlags...)
}

// upstream reads the edge's link status.
func (n *twoNodes) upstream() map[string]any {
	status, _, body := n.edge.call(n.t, "GET", "/v1/tenant/upstream/status", nil, n.edgeAdmin...)
	expect(n.t, "upstream status", status, 200, body)
	return body
}

// waitFor polls cond every 25 ms until it holds or limit passes.
func (n *twoNodes) waitFor(what string, limit time.Duration, cond func() bool) {
	n.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			n.t.Fatalf("timed out waiting for %s; edge status %v\nedge:\n%s", what, n.upstream(), tail(n.edge.logs.String()))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// idle reports whether the edge's log is empty and its link healthy.
func (n *twoNodes) idle() bool {
	st := n.upstream()
	return st["state"] == "idle" && st["backlog"] == float64(0)
}

// events posts k events through sync batches of at most 1,000.
func (n *twoNodes) events(prefix string, k int) {
	for done := 0; done < k; {
		m := min(1000, k-done)
		items := make([]map[string]any, m)
		for i := range items {
			items[i] = map[string]any{"type": "PATROL_REPORT", "priority": "low", "vertical": "gov",
				"idempotency_key": fmt.Sprintf("%s-%d", prefix, done+i),
				"payload":         map[string]any{"note": "routine", "n": done + i}}
		}
		status, _, body := n.edge.call(n.t, "POST", "/v1/sync/batch", map[string]any{"events": items,
			"captured_at": time.Now().UTC().Format(time.RFC3339Nano)}, n.edgeKey...)
		if status != 200 && status != 201 && status != 202 || body["accepted"] != float64(m) {
			n.t.Fatalf("sync batch: %d %v", status, body)
		}
		done += m
	}
}

// mission is a mission the test runs on the edge.
type mission struct{ id, team string }

// newTeam creates an available team of vertical gov.
func (n *twoNodes) newTeam(name string) string {
	status, _, body := n.edge.call(n.t, "POST", "/v1/teams", map[string]any{"name": name, "verticals": []string{"gov"},
		"members": []map[string]any{{"name": name + " lead", "phone": "+33611111111"}}}, n.edgeKey...)
	expect(n.t, "team", status, 201, body)
	return body["id"].(string)
}

// dispatch posts an event and dispatches team to it.
func (n *twoNodes) dispatch(team, key string) mission {
	status, _, body := n.edge.call(n.t, "POST", "/v1/events", map[string]any{"type": "INTRUSION", "priority": "high",
		"vertical": "gov", "idempotency_key": key}, n.edgeKey...)
	expect(n.t, "event", status, 201, body)
	status, _, body = n.edge.call(n.t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": body["event_id"],
		"team_id": team, "notes": "go " + key}, n.edgeKey...)
	expect(n.t, "dispatch", status, 201, body)
	return mission{id: body["mission_id"].(string), team: team}
}

// move moves a mission.
func (n *twoNodes) move(m mission, to string) {
	status, _, body := n.edge.call(n.t, "PATCH", "/v1/missions/"+m.id+"/status", map[string]any{"status": to,
		"feedback": map[string]any{"step": to}}, n.edgeKey...)
	expect(n.t, "move "+to, status, 200, body)
}

// list reads every item of a list endpoint.
func list(t *testing.T, s *served, path string, auth []string) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := ""
	for {
		q := url.Values{"limit": {"500"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		sep := "?"
		if bytes.ContainsRune([]byte(path), '?') {
			sep = "&"
		}
		status, _, body := s.call(t, "GET", path+sep+q.Encode(), nil, auth...)
		expect(t, "list "+path, status, 200, body)
		for _, it := range body["data"].([]any) {
			out = append(out, it.(map[string]any))
		}
		c, _ := body["next_cursor"].(string)
		if c == "" {
			return out
		}
		cursor = c
	}
}

// comparison is what the central node holds of the edge's records.
type comparison struct {
	events, missions               int
	missing, duplicates, different int
	notes                          []string
}

func (c *comparison) note(format string, args ...any) {
	if len(c.notes) < 10 {
		c.notes = append(c.notes, fmt.Sprintf(format, args...))
	}
}

// compare lists the edge's events and missions and the central node's replicas: every
// edge record must be there once, with origin the edge's node id, as it stands on the
// edge (events by updated_at, missions by their whole history, in order).
func (n *twoNodes) compare() *comparison {
	c := &comparison{}
	edgeEvents := list(n.t, n.edge, "/v1/events", n.edgeKey)
	centralEvents := list(n.t, n.central, "/v1/events?origin="+n.nodeID, n.centralKey)
	seen := map[string]map[string]any{}
	for _, ev := range centralEvents {
		id := ev["event_id"].(string)
		if seen[id] != nil {
			c.duplicates++
			c.note("event %s listed twice upstream", id)
		}
		seen[id] = ev
	}
	c.events = len(edgeEvents)
	edgeIDs := map[string]bool{}
	for _, ev := range edgeEvents {
		id := ev["event_id"].(string)
		edgeIDs[id] = true
		up := seen[id]
		switch {
		case up == nil:
			c.missing++
			c.note("event %s missing upstream", id)
		case up["origin"] != n.nodeID || up["source"] != "upstream" || up["updated_at"] != ev["updated_at"] ||
			up["created_at"] != ev["created_at"] || up["status"] != ev["status"] || up["idempotency_key"] != ev["idempotency_key"]:
			c.different++
			c.note("event %s upstream %v/%v/%v/%v, edge %v/%v", id, up["origin"], up["source"], up["updated_at"], up["status"],
				ev["updated_at"], ev["status"])
		}
	}
	for id := range seen {
		if !edgeIDs[id] {
			c.duplicates++ // a record of the edge's origin that the edge does not have
			c.note("event %s upstream is no edge event", id)
		}
	}

	edgeMissions := list(n.t, n.edge, "/v1/missions", n.edgeKey)
	centralMissions := list(n.t, n.central, "/v1/missions?origin="+n.nodeID, n.centralKey)
	up := map[string]map[string]any{}
	for _, m := range centralMissions {
		id := m["id"].(string)
		if up[id] != nil {
			c.duplicates++
		}
		up[id] = m
	}
	c.missions = len(edgeMissions)
	if len(centralMissions) != len(edgeMissions) {
		c.note("%d missions upstream, %d on the edge", len(centralMissions), len(edgeMissions))
	}
	for _, m := range edgeMissions {
		id := m["id"].(string)
		u := up[id]
		if u == nil {
			c.missing++
			c.note("mission %s missing upstream", id)
			continue
		}
		a, _ := json.Marshal(m["history"])
		b, _ := json.Marshal(u["history"])
		if !bytes.Equal(a, b) || u["status"] != m["status"] || u["origin"] != n.nodeID || u["dispatch_id"] != m["dispatch_id"] {
			c.different++
			c.note("mission %s: upstream %s %s, edge %s %s", id, u["status"], b, m["status"], a)
		}
	}
	return c
}

// makeSite creates the site's tenant ("site") in n.edgeData, its key in n.edgeKey, and a
// company admin of it (admin@site.example).
func (n *twoNodes) makeSite() {
	n.t.Helper()
	_, key := newSiteTenant(n.t, n.bin, []string{"--data", n.edgeData}, "site")
	n.edgeKey = []string{"x-svc-api-key", key}
	mustRun(n.t, n.bin, "correct horse battery\n", "user", "create", "--data", n.edgeData, "--tenant", "site",
		"--email", "admin@site.example", "--name", "Site admin", "--role", "company_admin", "--password-stdin")
}

// TestUpstream_TwoNodes: two real nodes on 127.0.0.1. The edge records 5,000 events and
// runs missions while its central node is down; the central node starts and everything
// arrives once. Then the link is cut and restored five times mid-push (the central node
// stopped, killed, a proxy that drops connections mid-body), with a kill -9 of the edge in
// the middle: nothing is missing, nothing is duplicated, mission histories keep their
// order, every dispatch is there; the time to converge is logged.
func TestUpstream_TwoNodes(t *testing.T) {
	bin := binary(t)
	began := time.Now()
	n := &twoNodes{t: t, bin: bin, edgeData: t.TempDir(), centralData: t.TempDir(), centralAddr: freeAddr(t),
		edgeFlags: []string{"--upstream-retry-max", "1s"}}
	var centralKey string
	n.centralTenant, centralKey = newSiteTenant(t, bin, []string{"--data", n.centralData}, "central")
	n.centralKey = []string{"x-svc-api-key", centralKey}
	n.makeSite()

	proxy := startCutProxy(t, n.centralAddr)
	n.startEdge()
	// Through the running edge's admin socket; the key from stdin.
	var set struct {
		Upstream struct {
			NodeID string `json:"node_id"`
		} `json:"upstream"`
	}
	if err := json.Unmarshal(mustRun(t, bin, n.centralKey[1]+"\n", "upstream", "set", "--data", n.edgeData, "--tenant", "site",
		"--url", "http://"+proxy.addr(), "--api-key", "-", "--json"), &set); err != nil || set.Upstream.NodeID == "" {
		t.Fatalf("upstream set: %v %+v", err, set)
	}
	n.nodeID = set.Upstream.NodeID

	// Offline: 5,000 events and missions.
	n.events("offline", 5000)
	var teams []string
	for i := range 6 {
		teams = append(teams, n.newTeam(fmt.Sprintf("Patrol %d", i)))
	}
	var open []mission // missions left mid-way, moved on later
	for round := range 3 {
		for i, team := range teams {
			m := n.dispatch(team, fmt.Sprintf("incident-%d-%d", round, i))
			n.move(m, "ACK")
			if round < 2 || i%2 == 0 {
				n.move(m, "ON_ROUTE")
				n.move(m, "ON_SITE")
				end := "COMPLETED"
				if i == 1 {
					end = "FAILED"
				}
				n.move(m, end)
			} else {
				open = append(open, m)
			}
		}
	}
	st := n.upstream()
	if st["state"] != "down" || st["backlog"].(float64) < 5000 || st["last_error"] == nil {
		t.Fatalf("with the central node down: %v", st)
	}
	t.Logf("offline: %v changes waiting after %s", st["backlog"], time.Since(began).Round(time.Millisecond))

	// The central node starts: everything arrives.
	t0 := time.Now()
	n.startCentral()
	n.waitFor("the first convergence", 60*time.Second, n.idle)
	first := time.Since(t0)
	if c := n.compare(); c.missing+c.duplicates+c.different != 0 {
		t.Fatalf("after the first push: %+v", c)
	}
	t.Logf("first push: %.0f changes converged in %s", st["backlog"], first.Round(time.Millisecond))

	// Five cuts mid-push.
	round := 0
	steps := []string{"ON_ROUTE", "ON_SITE", "COMPLETED"}
	work := func(k int) {
		round++
		n.events(fmt.Sprintf("round%d", round), k)
		if round <= len(steps) {
			for _, m := range open {
				n.move(m, steps[round-1])
			}
		}
		m := n.dispatch(teams[0], fmt.Sprintf("incident-round%d", round))
		for _, to := range []string{"ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"} {
			n.move(m, to)
		}
	}
	midPush := func() bool {
		before := n.upstream()["acked_through"].(float64)
		work(1500)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			st := n.upstream()
			if st["acked_through"].(float64) > before {
				return st["backlog"].(float64) > 0
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("the edge does not push: %v", n.upstream())
		return false
	}
	down := func() bool { return n.upstream()["state"] == "down" }
	var cutsMidPush int
	for cut := 1; cut <= 5; cut++ {
		if midPush() {
			cutsMidPush++
		}
		switch cut {
		case 1, 5: // the central node stops (SIGTERM), then starts again
			if err := n.central.stop(t); err != nil {
				t.Fatalf("central exit: %v", err)
			}
			// Changes made while it is down: the edge tries, fails and says so (an edge
			// whose backlog had drained before the stop has nothing to try with).
			work(300)
			n.waitFor("the edge to see the link down", 20*time.Second, down)
			n.startCentral()
		case 2, 4: // the proxy drops three connections mid-body
			base := proxy.cut.Load()
			proxy.toCut.Store(3)
			more := 0
			n.waitFor(fmt.Sprintf("three dropped connections (cut %d)", cut), 30*time.Second, func() bool {
				if proxy.cut.Load() >= base+3 {
					return true
				}
				if more < 20 && n.idle() { // nothing in flight to cut: more to push
					more++
					n.events(fmt.Sprintf("cut%d-%d", cut, more), 500)
				}
				return false
			})
		case 3: // the central node and the edge are killed (-9) mid-push; both restart
			_ = n.central.cmd.Process.Kill()
			<-n.central.done
			_ = n.edge.cmd.Process.Kill()
			<-n.edge.done
			n.startEdge()
			work(300)
			n.startCentral()
		}
	}
	t1 := time.Now()
	n.waitFor("the final convergence", 60*time.Second, n.idle)
	var c *comparison
	n.waitFor("the central node to hold every record", 20*time.Second, func() bool {
		c = n.compare()
		return c.missing+c.different == 0 || c.duplicates > 0
	})
	converged := time.Since(t1)
	if c.missing != 0 || c.duplicates != 0 || c.different != 0 {
		t.Fatalf("after five cuts: missing %d, duplicates %d, different %d: %v", c.missing, c.duplicates, c.different, c.notes)
	}
	if proxy.cut.Load() < 6 || cutsMidPush < 4 {
		t.Fatalf("the cuts did not happen mid-push: %d connections cut, %d of 5 cuts with a backlog", proxy.cut.Load(), cutsMidPush)
	}

	// Every dispatch is on the central node, once, with the edge's origin.
	edgeMissions := list(t, n.edge, "/v1/missions", n.edgeKey)
	db := n.stopCentral(t)
	err := db.View(context.Background(), func(tx model.Tx) error {
		return dispatchesUpstream(tx, n.centralTenant, n.nodeID, edgeMissions)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after 5 cuts (%d mid-push, %d connections dropped by the proxy, the edge and the central node killed once): "+
		"%d events, %d missions and their dispatches: missing 0, duplicates 0, histories in order; converged %s after the last restore; whole test %s",
		cutsMidPush, proxy.cut.Load(), c.events, c.missions, converged.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// dispatchesUpstream checks that the central tenant holds the dispatch of every mission
// the edge node lists, with the edge's origin and the mission's id.
func dispatchesUpstream(tx model.Tx, tenantID, nodeID string, edgeMissions []map[string]any) error {
	for _, m := range edgeMissions {
		d, err := tx.Dispatch(tenantID, m["dispatch_id"].(string))
		if err != nil {
			return fmt.Errorf("dispatch %s of mission %s: %w", m["dispatch_id"], m["id"], err)
		}
		if d.Origin == nil || *d.Origin != nodeID || d.MissionID != m["id"] {
			return fmt.Errorf("dispatch %s upstream: %+v", d.ID, d)
		}
	}
	return nil
}

// stopCentral stops the central node and opens its bbolt file read-only for the test's
// checks (closed at the test's end).
func (n *twoNodes) stopCentral(t *testing.T) *store.DB {
	t.Helper()
	if err := n.central.stop(t); err != nil {
		t.Fatalf("central exit: %v", err)
	}
	db, err := store.Open(n.centralData, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
