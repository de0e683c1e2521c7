package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// TestCompact: a file that grew and shrank comes out of Compact smaller, with the same
// records and a clean check; with keep the old file stays beside it, and a copy left by an
// interrupted run is no obstacle.
func TestCompact(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tn := &model.Tenant{ID: model.NewID(), Name: "Tenant c", Slug: "c", Email: "ops@c.example", LicenseType: "starter",
		Status: "active", Country: "FR", Verticals: model.StandardVerticals, CreatedAt: model.At(time.Unix(0, 0))}
	MustUpdate(t, db, func(tx model.Tx) error { return tx.PutTenant(tn) })
	body := []byte(`{"note":"` + strings.Repeat("x", 4000) + `"}`)
	old, recent := time.Unix(1000, 0), time.Unix(5000, 0)
	for i := range 2000 {
		at := old
		if i%10 == 0 {
			at = recent // a tenth stays
		}
		MustUpdate(t, db, func(tx model.Tx) error {
			return tx.PutIdempotency(tn.ID, fmt.Sprintf("POST /v1/zones\nk%d", i),
				&model.IdempotencyRecord{Reply: model.Reply{Status: 201, Body: body}, CreatedAt: model.At(at)})
		})
	}
	MustUpdate(t, db, func(tx model.Tx) error { _, err := tx.ExpireIdempotency(time.Unix(2000, 0)); return err })
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// What an interrupted compaction would have left.
	if err := os.WriteFile(store.Path(dir)+".compact", []byte("half a copy"), 0o600); err != nil {
		t.Fatal(err)
	}

	res, err := store.Compact(dir, true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.After >= res.Before/2 || res.Records == 0 || res.Kept == "" {
		t.Fatalf("Compact: %+v, want less than half the size, records, the old file kept", res)
	}
	if fi, err := os.Stat(res.Kept); err != nil || fi.Size() != res.Before {
		t.Fatalf("the kept file: %v %v", fi, err)
	}
	if left, _ := filepath.Glob(store.Path(dir) + ".compact"); len(left) != 0 {
		t.Fatalf("a copy is left: %v", left)
	}
	db, err = store.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	report, err := db.Check()
	if err != nil || !report.OK {
		t.Fatalf("check after compact: %v\n%s", err, store.FormatCheck(report))
	}
	err = db.View(ctx, func(tx model.Tx) error {
		for i := range 2000 {
			got, err := tx.Idempotency(tn.ID, fmt.Sprintf("POST /v1/zones\nk%d", i))
			if err != nil {
				return err
			}
			if (got != nil) != (i%10 == 0) || got != nil && string(got.Body) != string(body) {
				return fmt.Errorf("record %d after compact: %+v", i, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCompact_Locked: a data directory in use is not compacted.
func TestCompact_Locked(t *testing.T) {
	dir := t.TempDir()
	MustOpenDir(t, dir)
	if _, err := store.Compact(dir, false, 50*time.Millisecond); err != store.ErrLocked {
		t.Fatalf("Compact of a directory in use: %v, want ErrLocked", err)
	}
}
