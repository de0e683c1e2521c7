package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// BenchmarkEventLists1M measures the first page of GET /v1/events?open=true and ?q= on a
// tenant of 1,000,000 events of which 2,000 are open (docs/decisions/0170-open-events.md,
// docs/decisions/0171-event-search.md): 100 reads of each list's first page (limit 50, the
// byte cap of the API), p50 and p99. Not a test; run it with
//
//	make bench-event-lists
//
// BENCH_EVENTS_DIR names a directory kept between runs: built once when it holds no store
// (the build's time is printed), reused as it is afterwards.
func BenchmarkEventLists1M(b *testing.B) {
	const total, open, rare = 1_000_000, 2_000, 20
	dir := os.Getenv("BENCH_EVENTS_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	db := openInternal(b, dir)
	var tenant *model.Tenant
	err := db.View(context.Background(), func(tx model.Tx) error {
		ts, err := tx.Tenants()
		if len(ts) > 0 {
			tenant = &ts[0]
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	if tenant == nil {
		start := time.Now()
		tenant = buildEventLists(b, db, total, open, rare)
		b.Logf("built %d events (%d open, %d with the rare word) in %s", total, open, rare, time.Since(start).Round(time.Second))
	}
	for _, c := range []struct {
		name string
		f    model.EventFilter
	}{
		{"open", model.EventFilter{Open: true}},
		{"open_priority_high", model.EventFilter{Open: true, Priority: model.PriorityHigh}},
		{"q_common_word", model.EventFilter{Query: "noise"}},
		{"q_rare_word", model.EventFilter{Query: "gas leak"}},
		{"q_rare_word_open", model.EventFilter{Query: "gas leak", Open: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var took []time.Duration
			n := 0
			for range b.N {
				for range 100 {
					t0 := time.Now()
					err := db.View(context.Background(), func(tx model.Tx) error {
						evs, _, err := tx.Events(tenant.ID, c.f, model.Page{Limit: 50, MaxBytes: model.MaxPageBytes})
						n = len(evs)
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(t0))
				}
			}
			slices.Sort(took)
			p := func(q float64) time.Duration { return took[int(q*float64(len(took)-1))] }
			b.ReportMetric(float64(p(0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(n), "events/page")
		})
	}
}

// buildEventLists writes the tenant of BenchmarkEventLists1M: total events a second apart
// with ~300-byte payloads, every total/open-th one open (the rest closed), rare of them
// (spread over the whole age) saying "Gas leak".
func buildEventLists(b *testing.B, db *DB, total, open, rare int) *model.Tenant {
	tenant := &model.Tenant{ID: model.NewID(), Slug: "bench", Name: "Bench"}
	if err := db.Update(context.Background(), func(tx model.Tx) error { return tx.PutTenant(tenant) }); err != nil {
		b.Fatal(err)
	}
	types := []string{"NOISE", "FIRE_ALARM", "MEDICAL", "ATM_FAILURE", "NETWORK_OUTAGE"}
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	const perTx = 20_000
	for from := 0; from < total; from += perTx {
		err := db.Update(context.Background(), func(tx model.Tx) error {
			for i := from; i < min(from+perTx, total); i++ {
				at := model.At(t0.Add(time.Duration(i) * time.Second))
				desc := fmt.Sprintf("noise complaint number %d, music heard from the street", i)
				if i%(total/rare) == total/rare/2 {
					desc = fmt.Sprintf("Gas leak reported by a neighbour, case %d", i)
				}
				payload, _ := json.Marshal(map[string]any{"description": desc, "address": fmt.Sprintf("%d Rue de la République", i%300),
					"caller": map[string]any{"name": "Jean Dupont", "phone": "+33 6 12 34 56 78"}, "lat": 45.76, "lng": 4.83})
				ev := &model.Event{ID: model.NewIDAt(at.Time), Type: types[i%len(types)], Priority: model.Priorities[i%4],
					Vertical: "emergency", IdempotencyKey: fmt.Sprintf("bench-%d", i), Payload: payload, ZoneCode: ptrTo("lyon"),
					Status: model.EventClosed, ChannelSelected: "rest_full", ChannelsAttempted: []string{"rest_full"},
					Source: "api", CreatedAt: at, UpdatedAt: at, ClosedAt: &at}
				if i%(total/open) == 0 { // open, of every priority
					ev.Status, ev.ClosedAt, ev.Priority = model.EventDelivered, nil, model.Priorities[(i/(total/open))%4]
				}
				if err := tx.PutEvent(tenant.ID, ev); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return tenant
}

func ptrTo[T any](v T) *T { return &v }
