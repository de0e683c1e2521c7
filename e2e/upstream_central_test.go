package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
)

// roundRobin is a reverse proxy on loopback that sends each request to the next of its
// targets in turn, whatever connection it came on: a load balancer in front of a central
// tier. It counts the POSTs each target answered with a 2xx.
type roundRobin struct {
	mu      sync.Mutex
	proxies []*httputil.ReverseProxy
	next    int
	posted  []atomic.Int64
}

func newRoundRobin(targets ...string) *roundRobin {
	p := &roundRobin{posted: make([]atomic.Int64, len(targets))}
	for i, target := range targets {
		u, err := url.Parse(target)
		if err != nil {
			panic(err)
		}
		rp := httputil.NewSingleHostReverseProxy(u)
		rp.ModifyResponse = func(res *http.Response) error {
			if res.Request.Method == http.MethodPost && res.StatusCode/100 == 2 {
				p.posted[i].Add(1)
			}
			return nil
		}
		p.proxies = append(p.proxies, rp)
	}
	return p
}

func (p *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	rp := p.proxies[p.next]
	p.next = (p.next + 1) % len(p.proxies)
	p.mu.Unlock()
	rp.ServeHTTP(w, r)
}

// TestUpstream_CentralOnPostgres: the two-node upstream test with the central side a
// central tier: two `serve --database` processes on one PostgreSQL database behind a
// round-robin proxy, so that the edge's pushes land on both in turn. The edge (bbolt)
// records events and runs missions while pushing; one central process is killed (-9)
// mid-push and a new one starts in its place; in the end each process lists every edge
// record once (missing 0, duplicates 0, mission histories in order), and every dispatch is
// in the database.
func TestUpstream_CentralOnPostgres(t *testing.T) {
	bin := binary(t)
	began := time.Now()
	c := serveCentral(t, bin, 2)
	centralTenant, centralKey := newSiteTenant(t, bin, []string{"--database", c.url}, "central")
	rr := newRoundRobin(c.nodes[0].base, c.nodes[1].base)
	lb := httptest.NewServer(rr)
	defer lb.Close()

	n := &twoNodes{t: t, bin: bin, edgeData: t.TempDir(), edgeFlags: []string{"--upstream-retry-max", "1s"},
		central: c.nodes[0].served, centralTenant: centralTenant, centralKey: []string{"x-svc-api-key", centralKey}}
	n.makeSite()
	n.startEdge()
	var set struct {
		Upstream struct {
			NodeID string `json:"node_id"`
		} `json:"upstream"`
	}
	if err := json.Unmarshal(mustRun(t, bin, n.centralKey[1]+"\n", "upstream", "set", "--data", n.edgeData, "--tenant", "site",
		"--url", lb.URL, "--api-key", "-", "--json"), &set); err != nil || set.Upstream.NodeID == "" {
		t.Fatalf("upstream set: %v %+v", err, set)
	}
	n.nodeID = set.Upstream.NodeID

	// Events and missions while the edge pushes.
	var teams []string
	for i := range 3 {
		teams = append(teams, n.newTeam(fmt.Sprintf("Patrol %d", i)))
	}
	round := 0
	work := func(k int) {
		round++
		n.events(fmt.Sprintf("round%d", round), k)
		for i, team := range teams {
			m := n.dispatch(team, fmt.Sprintf("incident-%d-%d", round, i))
			for _, to := range []string{"ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"} {
				n.move(m, to)
			}
		}
	}
	work(1500)
	work(500)

	// Process 2 is killed mid-push; the proxy's requests to it fail until a new process
	// (a fresh --data: a process of the tier keeps no record of its own) serves its address.
	before := n.upstream()["acked_through"].(float64)
	work(1500)
	n.waitFor("the edge to push", 20*time.Second, func() bool { return n.upstream()["acked_through"].(float64) > before })
	midPush := n.upstream()["backlog"].(float64) > 0
	second := c.nodes[1]
	_ = second.cmd.Process.Kill()
	<-second.done
	work(300)
	addr := strings.TrimPrefix(second.base, "http://")
	c.nodes[1] = &demoNode{served: serveAt(t, bin, t.TempDir(), addr, false, "--database", c.url), APIKey: second.APIKey, Users: second.Users}
	work(300)

	t0 := time.Now()
	n.waitFor("the convergence", 60*time.Second, n.idle)
	converged := time.Since(t0)
	for i, node := range c.nodes {
		n.central = node.served
		var cmp *comparison
		n.waitFor(fmt.Sprintf("central process %d to hold every record", i+1), 20*time.Second, func() bool {
			cmp = n.compare()
			return cmp.missing+cmp.different == 0 || cmp.duplicates > 0
		})
		if cmp.missing != 0 || cmp.duplicates != 0 || cmp.different != 0 {
			t.Fatalf("through central process %d: missing %d, duplicates %d, different %d: %v", i+1,
				cmp.missing, cmp.duplicates, cmp.different, cmp.notes)
		}
		if i == 0 {
			t.Logf("%d events and %d missions upstream, missing 0, duplicates 0", cmp.events, cmp.missions)
		}
	}
	// Every dispatch is in the database, once, with the edge's origin.
	edgeMissions := list(t, n.edge, "/v1/missions", n.edgeKey)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := postgres.Open(ctx, c.url, postgres.Options{MaxConns: 2, SecretKey: pgtest.SecretKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(ctx, func(tx model.Tx) error {
		return dispatchesUpstream(tx, n.centralTenant, n.nodeID, edgeMissions)
	})
	if err != nil {
		t.Fatal(err)
	}

	p1, p2 := rr.posted[0].Load(), rr.posted[1].Load()
	if p1 == 0 || p2 == 0 {
		t.Fatalf("the pushes did not land on both processes: %d and %d accepted", p1, p2)
	}
	t.Logf("pushes accepted by process 1: %d, by process 2: %d; killed mid-push: %t; converged %s after the restart; whole test %s",
		p1, p2, midPush, converged.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}
