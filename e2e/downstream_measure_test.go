package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// measureOnly skips a measure unless FIELDRELAY_MEASURE=1.
func measureOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("FIELDRELAY_MEASURE") != "1" {
		t.Skip("a measure: FIELDRELAY_MEASURE=1 runs it")
	}
}

// TestDownstream_MeasureCutConvergence measures the convergence after a real cut of
// FIELDRELAY_CUT (10m by default) during which the site recorded 1,000 moves and the
// central node 1,000 (250 missions, ACK, ON_ROUTE, ON_SITE, COMPLETED on each side), with
// the production retry backoff (--upstream-retry-max 1m): from the link's return to the
// same history of every mission on both nodes, and the part of it spent waiting for the
// site's next attempt.
func TestDownstream_MeasureCutConvergence(t *testing.T) {
	measureOnly(t)
	cut := 10 * time.Minute
	if v := os.Getenv("FIELDRELAY_CUT"); v != "" {
		var err error
		if cut, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	n, gate, _ := siteAndCentral(t, "--upstream-retry-max", "1m")
	const k = 250
	cutAt := n.movesDuringCut(gate, k, 120*time.Second)
	moved := time.Since(cutAt)
	time.Sleep(time.Until(cutAt.Add(cut)))
	// The backoff the site drew at its last failed attempt before the return.
	lastRetry := ""
	for _, line := range strings.Split(n.edge.logs.String(), "\n") {
		if strings.Contains(line, "upstream: push failed") {
			var l struct {
				RetryIn  string `json:"retry_in"`
				Failures int    `json:"failures"`
			}
			if json.Unmarshal([]byte(line), &l) == nil {
				lastRetry = fmt.Sprintf("%s (failure %d)", l.RetryIn, l.Failures)
			}
		}
	}
	t0 := time.Now()
	gate.restore()
	var firstPush time.Duration
	n.waitFor("convergence", 5*time.Minute, func() bool {
		if firstPush == 0 && n.upstream()["state"] != "down" {
			firstPush = time.Since(t0)
		}
		return n.sameHistories(k)
	})
	t.Logf("cut for %s (the 2,000 moves took %s; the last backoff drawn: %s); after the link returned: the site's "+
		"next attempt came within %s, converged %s (250 missions, 2,000 moves)", time.Since(cutAt.Add(time.Since(t0))).Round(time.Second),
		moved.Round(time.Second), lastRetry, firstPush.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
}

// TestDownstream_MeasureSnapshot measures, through the binaries, the snapshot of a central
// tenant of 200 zones, 1,000 teams and 2,000 users: from the link set to every record
// applied at the site, and the answer's size.
func TestDownstream_MeasureSnapshot(t *testing.T) {
	measureOnly(t)
	n, gate, _ := siteAndCentral(t)
	if err := n.central.stop(t); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(n.centralData, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := model.At(time.Now())
	square := model.Polygon{Type: "Polygon", Coordinates: [][][]float64{{{2.2, 48.8}, {2.4, 48.8}, {2.4, 49.0}, {2.2, 49.0}, {2.2, 48.8}}}}
	hash := "$argon2id$v=19$m=65536,t=3,p=2$" + strings.Repeat("s", 22) + "$" + strings.Repeat("h", 43)
	err = db.Update(context.Background(), func(tx model.Tx) error {
		for i := range 200 {
			if err := tx.PutZone(n.centralTenant, &model.Zone{ID: model.NewID(), Code: fmt.Sprintf("Z%03d", i), Name: "Zone",
				Boundary: square, Centroid: model.LatLng{Lat: 48.9, Lng: 2.3}, CreatedAt: now, UpdatedAt: now}); err != nil {
				return err
			}
		}
		for i := range 1000 {
			if err := tx.PutTeam(n.centralTenant, &model.Team{ID: model.NewID(), Name: fmt.Sprintf("Team %d", i), Status: "available",
				Verticals: []string{"emergency"}, Equipment: []string{"radio"}, Members: []model.Member{{ID: model.NewID(), Name: "Lead",
					Phone: "+33600000001"}, {ID: model.NewID(), Name: "Second", Phone: "+33600000002"}}, CreatedAt: now, UpdatedAt: now}); err != nil {
				return err
			}
		}
		for i := range 2000 {
			if err := tx.PutUserAccount(&model.UserAccount{User: model.User{ID: model.NewID(), TenantID: n.centralTenant,
				Email: fmt.Sprintf("user%d@central.example", i), Name: "User", RBACLevel: model.RoleFieldOperator,
				Status: "active", CreatedAt: now, UpdatedAt: now}, PasswordHash: hash, TokenVersion: 1}); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	n.startCentral()
	// The size of the answer, as the site will get it.
	site, _ := n.upstream()["device_id"].(string)
	began := time.Now()
	status, _, raw := n.central.call(t, "POST", "/v1/devices/downstream", map[string]any{"device_id": site, "after": 0, "snapshot": true}, n.centralKey...)
	expect(t, "a snapshot", status, 200, raw)
	served := time.Since(began)
	size, _ := json.Marshal(raw)
	// A link set anew (another URL for the same central node) starts with a snapshot.
	began = time.Now()
	mustRun(t, n.bin, n.centralKey[1]+"\n", "upstream", "set", "--data", n.edgeData, "--tenant", "site",
		"--url", "http://localhost:"+strings.Split(gate.addr(), ":")[1], "--api-key", "-", "--json")
	n.waitFor("the snapshot applied", 2*time.Minute, func() bool {
		d, _ := n.upstream()["downstream"].(map[string]any)
		return d != nil && d["snapshots"] == 1.0 && d["cursor"] == d["end"]
	})
	applied := time.Since(began)
	teams, users := len(list(t, n.edge, "/v1/teams", n.edgeKey)), len(list(t, n.edge, "/v1/tenant/users", n.edgeAdmin))
	if teams != 1000 || users < 2000 {
		t.Fatalf("at the site: %d teams, %d users", teams, users)
	}
	t.Logf("snapshot of 200 zones, 1,000 teams, 2,000 users: %d bytes (%.1f MiB), answered by the central node in %s; "+
		"from the link set to all applied at the site: %s", len(size), float64(len(size))/(1<<20), served.Round(time.Millisecond),
		applied.Round(time.Millisecond))
}
