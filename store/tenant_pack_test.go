package store

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"
)

// splitTenant makes a tenant's bucket pass a page while its nested buckets are inline,
// then moves their records out of it (each bucket grows past the inline size), as a
// young tenant's first events do: the bucket is left split over two pages while its keys
// fit on one.
func splitTenant(t *testing.T, db *DB, tenantID string, names ...[]byte) {
	t.Helper()
	tk, _ := idKey(tenantID)
	fill := func(n, size int) {
		err := db.bolt.Update(func(btx *bolt.Tx) error {
			tb := btx.Bucket(bucketTenantRoot).Bucket(tk)
			for _, name := range names {
				b := tb.Bucket(name)
				for i := range n {
					if err := b.Put([]byte(fmt.Sprintf("k%04d", i)), bytes.Repeat([]byte{'x'}, size)); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	fill(3, 200)  // six inline buckets of ~650 bytes: the tenant's bucket passes a page
	fill(20, 200) // each one past the inline size: the tenant's bucket shrinks, still split
	if !db.tenantSplit(t, tenantID) {
		t.Fatal("the tenant's bucket did not split: the test no longer sets up what it means to")
	}
}

// tenantSplit reports whether the tenant's bucket needs packing.
func (db *DB) tenantSplit(t *testing.T, tenantID string) (split bool) {
	t.Helper()
	tk, _ := idKey(tenantID)
	if err := db.bolt.View(func(btx *bolt.Tx) error {
		split = needsPack(btx, btx.Bucket(bucketTenantRoot).Bucket(tk))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return split
}

func TestPackTenants(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openInternal(t, dir)
	tn := &model.Tenant{ID: model.NewID(), Slug: "acme", Name: "Acme"}
	if err := db.Update(ctx, func(tx model.Tx) error { return tx.PutTenant(tn) }); err != nil {
		t.Fatal(err)
	}
	splitTenant(t, db, tn.ID, tbAlerts, tbUsers, tbEvents, tbEventsByIdem, tbEventsOpen, tbBatches)
	check := func(db *DB) {
		t.Helper()
		if db.tenantSplit(t, tn.ID) {
			t.Error("the tenant's bucket is still split")
		}
		tk, _ := idKey(tn.ID)
		err := db.bolt.View(func(btx *bolt.Tx) error {
			tb := btx.Bucket(bucketTenantRoot).Bucket(tk)
			for _, name := range tenantBuckets {
				if tb.Bucket(name) == nil {
					t.Errorf("bucket %s is missing after packing", name)
				}
			}
			for _, name := range [][]byte{tbAlerts, tbEvents, tbBatches} {
				if n := tb.Bucket(name).Stats().KeyN; n != 20 {
					t.Errorf("bucket %s holds %d keys after packing; want 20", name, n)
				}
			}
			if btx.Bucket(bucketTenantRoot).Bucket(tmpTenantKey) != nil {
				t.Error("the packing bucket was left behind")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// At open: an existing data directory is packed as it is opened.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openInternal(t, dir)
	check(db)
	// Between groups of the commit loop: a tenant split while the node runs is packed
	// after packCheckEvery group commits (the loop packs before it takes the next group).
	splitTenant(t, db, tn.ID, tbTeams, tbZones, tbLedger, tbMissions, tbDispatches, tbDevices)
	for range packCheckEvery + 1 {
		if err := db.Batch(ctx, "", func(tx model.Tx) error { return tx.PutMeta("n", []byte("1")) }); err != nil {
			t.Fatal(err)
		}
	}
	check(db)
	// And a tenant's records are where they were.
	if err := db.View(ctx, func(tx model.Tx) error {
		got, err := tx.Tenant(tn.ID)
		if err != nil || got.Slug != "acme" {
			t.Errorf("tenant after packing = %+v, %v", got, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
