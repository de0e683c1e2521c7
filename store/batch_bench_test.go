package store

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// BenchmarkCommit compares one durable db.Update per write with the group commit loop of
// Batch, for 1 to 64 concurrent writers. Each op stores a ~500-byte value under a new
// UUIDv7 key in a tenant's events bucket of a file in a temporary directory, fsynced.
//
//	go test ./store -run XXX -bench Commit -benchtime 3s
func BenchmarkCommit(b *testing.B) {
	value := bytes.Repeat([]byte(`{"kind":"sensor","payload":"0123456789abcdef"}`), 11)[:500]
	modes := []struct {
		name   string
		commit func(db *DB) func(context.Context, func(model.Tx) error) error
	}{
		{"update", func(db *DB) func(context.Context, func(model.Tx) error) error { return db.Update }},
		{"batch", func(db *DB) func(context.Context, func(model.Tx) error) error {
			return func(ctx context.Context, fn func(model.Tx) error) error { return db.Batch(ctx, "", fn) }
		}},
	}
	for _, mode := range modes {
		b.Run(mode.name, func(b *testing.B) {
			for _, writers := range []int{1, 8, 32, 64} {
				b.Run(fmt.Sprint(writers), func(b *testing.B) {
					db := openInternal(b, b.TempDir())
					tenant := &model.Tenant{ID: model.NewID(), Slug: "bench", Name: "Bench"}
					if err := db.Update(context.Background(), func(t model.Tx) error { return t.PutTenant(tenant) }); err != nil {
						b.Fatal(err)
					}
					commit := mode.commit(db)
					write := func(t model.Tx) error {
						var raw *tx
						if bt, ok := t.(*batchTx); ok {
							raw = &bt.tx
						} else {
							raw = t.(*tx)
						}
						events, err := raw.tbucket(tenant.ID, tbEvents)
						if err != nil {
							return err
						}
						k, err := idKey(model.NewID())
						if err != nil {
							return err
						}
						return events.Put(k, value)
					}
					left := int64(b.N)
					var wg sync.WaitGroup
					var failed atomic.Value
					b.ResetTimer()
					for range writers {
						wg.Go(func() {
							for atomic.AddInt64(&left, -1) >= 0 {
								if err := commit(context.Background(), write); err != nil {
									failed.Store(err)
									return
								}
							}
						})
					}
					wg.Wait()
					b.StopTimer()
					if err, _ := failed.Load().(error); err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
				})
			}
		})
	}
}
