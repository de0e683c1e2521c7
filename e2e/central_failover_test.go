package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// TestCentral_Failover: two processes serving as the least-privilege role through a
// multi-host URL (the primary, then its synchronous standby; target_session_attrs=
// read-write) under a load of events; the primary killed with SIGKILL: both answer 503
// unavailable with a Retry-After, never 500; the standby promoted: both reconnect to it by
// themselves, without a restart (their listeners of notifications too), and every event acknowledged with 201, before the kill
// included, is there (docs/decisions/0225-failover.md).
func TestCentral_Failover(t *testing.T) {
	bin := binary(t)
	primary := pgtest.Own(t)
	standby := primary.Standby(t, true)
	url := primary.URL(t) // created on the primary, streamed to the standby
	app := servingRole(t, bin, url)
	c := serveCentralVia(t, bin, url, pgtest.FailoverURL(t, app, standby), 2)
	key := []string{"x-svc-api-key", centralTenant(t, bin, c.url, "load", "mission-critical")}
	load := startEventLoad(t, c, key)
	c.waitFor(t, "50 events acknowledged before the failover", 20*time.Second, func() bool { return load.ackedCount() >= 50 })

	primary.Kill(t)
	load.unavailable(t)
	promoted := time.Now()
	standby.Promote(t)
	load.recovered(t, 30*time.Second)
	t.Logf("serving again %v after the promotion began", time.Since(promoted).Round(10*time.Millisecond))
	// The listener of notifications, on the same URL, found the new primary too.
	for i, n := range c.nodes {
		c.waitFor(t, fmt.Sprintf("node %d's notifications up again", i+1), 15*time.Second, func() bool {
			s, _ := readyNotifications(t, n)
			return s == "up"
		})
	}
}
