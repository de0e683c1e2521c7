package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestIDs_ClockSteps: the node's clock stepped back an hour and then forward a day while
// events come in: no two ids collide and GET /v1/events (newest first) lists them in the
// reverse order they were made, the same milliseconds included.
func TestIDs_ClockSteps(t *testing.T) {
	e, clock := MustOpenEngine(t)
	ct := MustCreateTenant(t, e, "acme")
	key := model.Principal{TenantID: ct.Tenant.ID, TenantActive: true, KeyID: model.NewID(),
		Scopes: []string{model.PermEventsWrite, model.PermEventsRead}}
	ctx := context.Background()
	var made []string
	post := func(n int) {
		for range n {
			acc := mustIngest(t, e, key, model.EventInput{Type: "FIRE", Priority: "low", Vertical: "emergency",
				IdempotencyKey: fmt.Sprintf("k-%d", len(made))})
			made = append(made, acc.EventID)
		}
	}
	post(20) // all in one millisecond of the fake clock
	clock.Step(-time.Hour)
	post(20)
	clock.Step(25 * time.Hour)
	post(20)
	clock.Step(-24 * time.Hour) // set right again
	post(20)

	listed, _, err := e.Events(ctx, key, model.EventFilter{}, model.Page{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range listed {
		got = append(got, ev.ID)
	}
	want := slices.Clone(made)
	slices.Reverse(want)
	if !slices.Equal(got, want) {
		t.Fatalf("events newest first:\n%v\nwant the reverse of the order made:\n%v", got, want)
	}
	if n := len(slices.Compact(slices.Sorted(slices.Values(made)))); n != len(made) {
		t.Fatalf("%d distinct ids for %d events", n, len(made))
	}
}
