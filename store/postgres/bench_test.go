package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// BenchmarkPutEvent measures event ingest through Batch, from parallel writers (the test
// cluster runs with fsync off: the numbers compare code, not disks).
func BenchmarkPutEvent(b *testing.B) {
	db, err := postgres.Open(context.Background(), pgtest.URL(b), postgres.Options{MaxConns: 16})
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
			if err := db.Batch(context.Background(), func(tx model.Tx) error { return tx.PutEvent(tn, ev) }); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
