package store

import (
	"context"
	"strconv"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"
)

// openInternal opens a store of a temporary directory for the package's own tests.
func openInternal(tb testing.TB, dir string) *DB {
	tb.Helper()
	db, err := Open(dir, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

func TestBuckets(t *testing.T) {
	t.Run("RootAndSchema", func(t *testing.T) {
		db := openInternal(t, t.TempDir())
		err := db.bolt.View(func(tx *bolt.Tx) error {
			for _, name := range rootBuckets {
				if tx.Bucket(name) == nil {
					t.Errorf("root bucket %s is missing", name)
				}
			}
			if v := string(tx.Bucket(bucketMeta).Get(metaSchemaVersion)); v != strconv.Itoa(schemaVersion) {
				t.Errorf("schema version = %q, want %d", v, schemaVersion)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("UniqueNames", func(t *testing.T) {
		for _, list := range [][][]byte{rootBuckets, tenantBuckets} {
			seen := map[string]bool{}
			for _, name := range list {
				if seen[string(name)] {
					t.Errorf("bucket %s is declared twice", name)
				}
				seen[string(name)] = true
			}
		}
	})
	t.Run("TenantBuckets", func(t *testing.T) {
		db := openInternal(t, t.TempDir())
		tn := &model.Tenant{ID: model.NewID(), Slug: "acme", Name: "Acme"}
		if err := db.Update(context.Background(), func(tx model.Tx) error { return tx.PutTenant(tn) }); err != nil {
			t.Fatal(err)
		}
		k, _ := idKey(tn.ID)
		err := db.bolt.View(func(tx *bolt.Tx) error {
			tb := tx.Bucket(bucketTenantRoot).Bucket(k)
			if tb == nil {
				t.Fatal("the tenant has no bucket")
			}
			for _, name := range tenantBuckets {
				if tb.Bucket(name) == nil {
					t.Errorf("tenant bucket %s is missing", name)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("OlderFileUpgraded", func(t *testing.T) {
		// A file of an older layout gains the buckets of this one and its version at open.
		dir := t.TempDir()
		db := openInternal(t, dir)
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			if err := tx.DeleteBucket(bucketLoginGuards); err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(metaSchemaVersion, []byte("0"))
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = openInternal(t, dir)
		err = db.bolt.View(func(tx *bolt.Tx) error {
			if tx.Bucket(bucketLoginGuards) == nil {
				t.Error("a missing root bucket was not created at open")
			}
			if v := string(tx.Bucket(bucketMeta).Get(metaSchemaVersion)); v != strconv.Itoa(schemaVersion) {
				t.Errorf("schema version = %q after open, want %d", v, schemaVersion)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
