package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/server/servertest"
)

// siteAndPostgresCentral starts a central tier of two processes on PostgreSQL (centralFlags
// given to both) behind a round-robin proxy, and a site on bbolt linked to it through a
// gate; it waits for the site's registration and returns the central tier and the site's
// device id there.
func siteAndPostgresCentral(t *testing.T, centralFlags ...string) (*twoNodes, *gateProxy, *central, string) {
	t.Helper()
	bin := binary(t)
	c := serveCentral(t, bin, 2, centralFlags...)
	_, centralKey := newSiteTenant(t, bin, []string{"--database", c.url}, "central")
	lb := httptest.NewServer(newRoundRobin(c.nodes[0].base, c.nodes[1].base))
	t.Cleanup(func() { lb.CloseClientConnections(); lb.Close() })
	n := &twoNodes{t: t, bin: bin, edgeData: t.TempDir(), edgeFlags: []string{"--upstream-retry-max", "1s"}, central: c.nodes[0].served,
		centralKey: []string{"x-svc-api-key", centralKey}}
	n.makeSite()
	n.startEdge()
	gate := startGateProxy(t, strings.TrimPrefix(lb.URL, "http://"))
	mustRun(t, bin, n.centralKey[1]+"\n", "upstream", "set", "--data", n.edgeData, "--tenant", "site",
		"--url", "http://"+gate.addr(), "--api-key", "-", "--json")
	var site string
	n.waitFor("the site's registration", 20*time.Second, func() bool {
		site, _ = n.upstream()["device_id"].(string)
		return site != ""
	})
	return n, gate, c, site
}

// processes are the central tier's two processes.
func (c *central) processes() [2]*served { return [2]*served{c.nodes[0].served, c.nodes[1].served} }

// postAll sends k requests of body(i) to path across the processes, four at a time.
func postAll(t *testing.T, ps [2]*served, key []string, method string, k int, path func(i int) string, body func(i int) map[string]any) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < k; i += 4 {
				p := ps[i%2]
				res, err := p.client.Do(servertest.NewRequest(t, context.Background(), method, p.base+path(i), body(i), key...))
				if err != nil || res.StatusCode > 299 {
					errs <- fmt.Sprintf("%s %s: %v %v", method, path(i), err, res)
					return
				}
				res.Body.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestDownstream_PostgresKillAndRetention: the site's side of the downstream with the
// central tier on PostgreSQL, two processes.
//   - Latency: a site's pull held by one process is answered by a change committed through
//     the other (docs/decisions/0211-downstream-long-poll.md): 20 renames, p50 and p99.
//   - Killed mid-apply: the site is killed (SIGKILL) while it applies 600 teams and 200
//     zones made through both processes (two batches of 500), at several points; after each
//     kill the stored cursor and the copies agree: every team the log holds up to the
//     cursor is there, none after it.
//   - Past the retention (--downstream-keep 1000): cut off through 1,100 more changes, the
//     site gets one snapshot and then pulls as usual: a later change comes as a change, and
//     no other snapshot follows.
func TestDownstream_PostgresKillAndRetention(t *testing.T) {
	n, gate, c, site := siteAndPostgresCentral(t, "--downstream-keep", "1000")
	ps := c.processes()
	down := func() map[string]any { d, _ := n.upstream()["downstream"].(map[string]any); return d }
	n.waitFor("the first (empty) snapshot", 20*time.Second, func() bool { d := down(); return d != nil && d["snapshots"] == 1.0 })

	status, _, body := ps[0].call(t, "POST", "/v1/zones", map[string]any{"code": "NORTH", "name": "North",
		"boundary": downSquare, "site_id": site}, n.centralKey...)
	expect(t, "central zone", status, 201, body)
	zoneAt := func(name string) func() bool {
		return func() bool {
			_, _, z := n.edge.call(t, "GET", "/v1/zones/NORTH", nil, n.edgeKey...)
			return z["name"] == name
		}
	}
	n.waitFor("the zone at the site", 15*time.Second, zoneAt("North"))
	var lat []time.Duration
	for i := range 20 {
		name := fmt.Sprintf("North %d", i)
		t0 := time.Now()
		status, _, body = ps[i%2].call(t, "PATCH", "/v1/zones/NORTH", map[string]any{"name": name}, n.centralKey...)
		expect(t, "central rename", status, 200, body)
		n.waitFor("a rename at the site", 10*time.Second, zoneAt(name))
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	t.Logf("downstream latency, central tier on PostgreSQL (two processes), link up (20 changes): p50 %s, p99 %s",
		lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond))
	if lat[len(lat)/2] > time.Second {
		t.Fatalf("a held pull waits for the other process's changes: p50 %s", lat[len(lat)/2])
	}

	// Killed mid-apply.
	gate.cut()
	base := down()["end"].(float64)
	fillCentral(t, ps, n.centralKey)
	teamSeqs := n.teamSeqs(t, ps[1], site, base, base+800)

	// Killed mid-apply.
	outcomes := n.killsMidApply(t, gate, teamSeqs, base, base+800, killDelays)
	t.Logf("cursors after the kills (changes past the start): %v", outcomes)

	// Past the retention.
	gate.restore()
	mustRun(t, n.bin, "", "upstream", "resume", "--data", n.edgeData, "--tenant", "site")
	n.waitFor("caught up", 30*time.Second, func() bool { d := down(); return d["cursor"] == d["end"] && d["end"] == base+800 })
	snapshots := down()["snapshots"].(float64)
	gate.cut()
	postAll(t, ps, n.centralKey, "PATCH", 1100, func(i int) string { return fmt.Sprintf("/v1/zones/Z%03d", i%200) },
		func(i int) map[string]any { return map[string]any{"name": fmt.Sprintf("Zone %d", i)} })
	gate.restore()
	n.waitFor("the snapshot past the retention", 30*time.Second, func() bool {
		d := down()
		return d["snapshots"] == snapshots+1 && d["cursor"] == base+1900
	})
	_, _, z := n.edge.call(t, "GET", "/v1/zones/Z099", nil, n.edgeKey...)
	if z["name"] != "Zone 1099" {
		t.Fatalf("the zone after the snapshot: %v", z)
	}
	status, _, body = ps[1].call(t, "PATCH", "/v1/zones/NORTH", map[string]any{"name": "North after the snapshot"}, n.centralKey...)
	expect(t, "a change after the snapshot", status, 200, body)
	n.waitFor("the change after the snapshot", 10*time.Second, zoneAt("North after the snapshot"))
	time.Sleep(3 * time.Second) // a loop would show as more snapshots by now
	if d := down(); d["snapshots"] != snapshots+1 || d["cursor"] != base+1901 || d["lagging"] != false {
		t.Fatalf("after the snapshot: %v", d)
	}
}
