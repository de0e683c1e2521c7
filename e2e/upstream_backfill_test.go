package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// newSiteTenant creates a tenant on a node's store (--data DIR or --database URL) and
// returns its id and key.
func newSiteTenant(t *testing.T, bin string, where []string, slug string) (id, key string) {
	t.Helper()
	var created struct {
		Tenant struct {
			ID string `json:"id"`
		} `json:"tenant"`
		APIKey string `json:"api_key"`
	}
	args := append([]string{"tenant", "create"}, where...)
	if err := json.Unmarshal(mustRun(t, bin, "", append(args, "--json", "--name", slug, "--slug", slug, "--email", "ops@"+slug+".example", "--country", "FR", "--plan", "mission-critical")...), &created); err != nil {
		t.Fatal(err)
	}
	return created.Tenant.ID, created.APIKey
}

// TestUpstream_Backfill: a site that has worked alone (2,000 events, missions with their
// moves) joins a central node late. Once its upstream is set, its history goes up through
// the change log, a few records per transaction; the edge is killed (-9) in the middle of
// it and restarts, and records keep coming meanwhile. The central node then holds every
// event, dispatch and mission of the site once, the missions with their whole history,
// and it applied each dispatch and mission after its event. The edge runs on bbolt, then
// on PostgreSQL.
func TestUpstream_Backfill(t *testing.T) {
	bin := binary(t)
	t.Run("bbolt", func(t *testing.T) { testBackfill(t, bin, "") })
	t.Run("postgres", func(t *testing.T) { testBackfill(t, bin, pgtest.URL(t)) })
}

// testBackfill is TestUpstream_Backfill with the edge's records in database ("" for bbolt).
func testBackfill(t *testing.T, bin, database string) {
	began := time.Now()
	n := &twoNodes{t: t, bin: bin, edgeData: t.TempDir(), centralData: t.TempDir(), centralAddr: freeAddr(t),
		edgeFlags: []string{"--upstream-retry-max", "1s", "--upstream-batch", "10"}}
	edgeStore := []string{"--data", n.edgeData}
	if database != "" {
		edgeStore = []string{"--database", database}
		n.edgeFlags = append(n.edgeFlags, edgeStore...)
	}
	var ck, ek string
	n.centralTenant, ck = newSiteTenant(t, bin, []string{"--data", n.centralData}, "central")
	n.centralKey = []string{"x-svc-api-key", ck}
	_, ek = newSiteTenant(t, bin, edgeStore, "site")
	n.edgeKey = []string{"x-svc-api-key", ek}
	mustRun(t, bin, "correct horse battery\n", append(append([]string{"user", "create"}, edgeStore...), "--tenant", "site",
		"--email", "admin@site.example", "--name", "Site admin", "--role", "company_admin", "--password-stdin")...)
	n.startCentral()
	n.startEdge()

	// The site's past, with no upstream.
	n.events("past", 2000)
	var teams []string
	for i := range 4 {
		teams = append(teams, n.newTeam(fmt.Sprintf("Patrol %d", i)))
	}
	var open []mission
	for round := range 3 {
		for i, team := range teams {
			m := n.dispatch(team, fmt.Sprintf("past-incident-%d-%d", round, i))
			n.move(m, "ACK")
			if round == 2 {
				open = append(open, m)
				continue
			}
			n.move(m, "ON_ROUTE")
			n.move(m, "ON_SITE")
			end := "COMPLETED"
			if i == 1 {
				end = "FAILED"
			}
			n.move(m, end)
		}
	}
	if st := n.upstream(); st["state"] != "unconfigured" {
		t.Fatalf("before the upstream: %v", st)
	}

	// The upstream is set; the edge is killed while its history goes up.
	status, _, body := n.edge.call(t, "PUT", "/v1/tenant/upstream", map[string]any{"url": "http://" + n.centralAddr,
		"api_key": ck}, n.edgeAdmin...)
	expect(t, "upstream set", status, 200, body)
	n.nodeID = body["node_id"].(string)
	var killedAt map[string]any
	n.waitFor("the history to be going up", 30*time.Second, func() bool {
		st := n.upstream()
		bf, _ := st["backfill"].(map[string]any)
		if bf == nil || bf["state"] == "done" {
			t.Fatalf("the backfill is not under way: %v", st)
		}
		if st["acked_through"].(float64) >= 200 {
			killedAt = st
			return true
		}
		return false
	})
	_ = n.edge.cmd.Process.Kill()
	<-n.edge.done
	n.startEdge()
	// Changes after the restart, while the history is still on its way.
	n.events("later", 100)
	for _, m := range open {
		n.move(m, "ON_ROUTE")
	}
	n.waitFor("the history and the changes to be up", 60*time.Second, func() bool {
		st := n.upstream()
		bf, _ := st["backfill"].(map[string]any)
		return st["state"] == "idle" && st["backlog"] == float64(0) && bf["state"] == "done"
	})
	st := n.upstream()
	bf := st["backfill"].(map[string]any)
	c := n.compare()
	if c.missing != 0 || c.duplicates != 0 || c.different != 0 || c.events != 2000+12+100 || c.missions != 12 {
		t.Fatalf("after the backfill: %d events, %d missions, missing %d, duplicates %d, different %d: %v",
			c.events, c.missions, c.missing, c.duplicates, c.different, c.notes)
	}
	// Killed mid-walk, the walk went on where its last transaction left it: the 2,036
	// records of the past (2,012 events, 12 dispatches, 12 missions), and those of the
	// later events it reached before they were logged as changes, none twice (the
	// central node's items below say so too).
	if q := bf["queued"].(float64); q < 2036 || q > 2136 || st["acked_through"].(float64) < bf["through"].(float64) {
		t.Fatalf("backfill: %v (status %v)", bf, st)
	}
	if strings.Contains(n.edge.logs.String(), "does not match the change log") {
		t.Fatalf("the edge renumbered its log:\n%s", tail(n.edge.logs.String()))
	}

	// On the central node: every dispatch, and the device's items in order, each
	// sequence once, every dispatch and mission after its event.
	edgeMissions := list(t, n.edge, "/v1/missions", n.edgeKey)
	db := n.stopCentral(t)
	var items int
	err := db.View(context.Background(), func(tx model.Tx) error {
		if err := dispatchesUpstream(tx, n.centralTenant, n.nodeID, edgeMissions); err != nil {
			return err
		}
		if ids, err := tx.RecordIDs(n.centralTenant, model.ChangeDispatch, "", 1000); err != nil || len(ids) != len(edgeMissions) {
			return fmt.Errorf("%d dispatches upstream for %d missions (%v)", len(ids), len(edgeMissions), err)
		}
		dev, err := tx.DeviceByHardware(n.centralTenant, n.nodeID)
		if err != nil {
			return err
		}
		if dev.Sync.AppliedThrough != int64(st["acked_through"].(float64)) || dev.Sync.Waiting != 0 {
			return fmt.Errorf("the device upstream: %+v; the edge acked through %v", dev.Sync, st["acked_through"])
		}
		events := map[string]bool{}
		var walkErr error
		err = tx.WalkDeviceItems(n.centralTenant, dev.ID, 0, func(seq int64) bool {
			items++
			it, err := tx.DeviceItem(n.centralTenant, dev.ID, seq)
			switch {
			case err != nil:
				walkErr = err
			case it == nil || it.Status != model.ItemApplied && it.Status != model.ItemDuplicate:
				walkErr = fmt.Errorf("item %d upstream: %+v", seq, it)
			case it.Kind == model.ItemUpstreamEvent:
				events[it.EventID] = true
			case !events[it.EventID]:
				walkErr = fmt.Errorf("item %d (%s) was applied before its event %s", seq, it.Kind, it.EventID)
			}
			return walkErr == nil
		})
		if err == nil {
			err = walkErr
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if int64(items) != int64(st["acked_through"].(float64)) {
		t.Fatalf("%d items upstream, the edge acked through %v", items, st["acked_through"])
	}
	t.Logf("killed at acked_through %v of the history (backfill %v); after the restart: %d events, %d missions and "+
		"their dispatches, %d items upstream: missing 0, duplicates 0; whole test %s",
		killedAt["acked_through"], killedAt["backfill"], c.events, c.missions, items, time.Since(began).Round(time.Millisecond))
}
