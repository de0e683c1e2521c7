package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// BenchmarkPutEvent measures event ingest through Batch, from parallel writers (the test
// cluster runs with fsync off: the numbers compare code, not disks).
func BenchmarkPutEvent(b *testing.B) { benchPutEvent(b, false) }

// BenchmarkPutEventStreamed is BenchmarkPutEvent with the event's stream change recorded in
// the same transaction, as the engine does on this store (feed.go).
func BenchmarkPutEventStreamed(b *testing.B) { benchPutEvent(b, true) }

func benchPutEvent(b *testing.B, streamed bool) {
	db, err := postgres.Open(context.Background(), pgtest.URL(b), postgres.Options{MaxConns: 16, SecretKey: pgtest.SecretKey()})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tn := model.NewID()
	if err := db.Update(context.Background(), func(tx model.Tx) error {
		return tx.PutTenant(&model.Tenant{ID: tn, Slug: "bench", Status: "active"})
	}); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			now := time.Now()
			ev := &model.Event{ID: model.NewIDAt(now), Type: "incident", Priority: "high", Vertical: "fire",
				Status: model.EventPending, Payload: []byte(`{"a":1}`), CreatedAt: model.At(now)}
			err := db.Batch(context.Background(), "", func(tx model.Tx) error {
				if err := tx.PutEvent(tn, ev); err != nil || !streamed {
					return err
				}
				data, err := json.Marshal(ev)
				if err != nil {
					return err
				}
				return db.AppendChange(tx, tn, model.Change{Name: "event.created", Perm: model.PermEventsRead,
					Data: data, At: ev.CreatedAt})
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkTeams measures listing a tenant's 1,000 teams, as the dispatch score does on
// every call (docs/decisions/0108-postgres-team-cache.md).
func BenchmarkTeams(b *testing.B) {
	db, err := postgres.Open(context.Background(), pgtest.URL(b), postgres.Options{SecretKey: pgtest.SecretKey()})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tn := model.NewID()
	now := model.At(time.Now())
	if err := db.Update(context.Background(), func(tx model.Tx) error {
		if err := tx.PutTenant(&model.Tenant{ID: tn, Slug: "bench", Status: "active"}); err != nil {
			return err
		}
		for i := range 1000 {
			lat, lng := 45.7+float64(i)/1e4, 4.8+float64(i)/1e4
			tm := &model.Team{ID: model.NewID(), Name: "team", Status: "available",
				Verticals: []string{"emergency", "healthcare"}, Equipment: []string{"defibrillator"},
				Members: []model.Member{{ID: model.NewID(), Name: "m", Phone: "+33600000000",
					Lat: &lat, Lng: &lng, LocationUpdatedAt: &now}},
				CreatedAt: now, UpdatedAt: now}
			if err := tx.PutTeam(tn, tm); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := db.View(context.Background(), func(tx model.Tx) error {
			teams, err := tx.Teams(tn)
			if err == nil && len(teams) != 1000 {
				b.Fatalf("%d teams", len(teams))
			}
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}
