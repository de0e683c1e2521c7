package postgres_test

import (
	"context"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// TestQueuedWriteFails: once a transaction saw its tenant, its upserts are queued and sent
// with the next statement or before the commit (tx.write); one that fails there still
// fails the transaction, and nothing it wrote before is kept.
func TestQueuedWriteFails(t *testing.T) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.URL(t), postgres.Options{MaxConns: 2, SecretKey: pgtest.SecretKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tn := model.NewID()
	if err := db.Update(ctx, func(tx model.Tx) error {
		return tx.PutTenant(&model.Tenant{ID: tn, Slug: "pipe", Status: "active"})
	}); err != nil {
		t.Fatal(err)
	}
	good := &model.Event{ID: model.NewID(), Type: "fire", Vertical: "emergency", Status: model.EventPending}
	bad := &model.Event{ID: model.NewID(), Type: "fire", Vertical: "emergency\x00", Status: model.EventPending}
	for _, last := range []bool{true, false} {
		err := db.Update(ctx, func(tx model.Tx) error {
			if err := tx.PutEvent(tn, good); err != nil {
				return err
			}
			if err := tx.PutEvent(tn, bad); err != nil || last {
				return err
			}
			// A read sends the queued writes first, and answers their failure.
			_, err := tx.Event(tn, good.ID)
			return err
		})
		if err == nil {
			t.Fatalf("a transaction whose queued write failed committed (failure before the commit: %v)", last)
		}
		if err := db.View(ctx, func(tx model.Tx) error {
			_, err := tx.Event(tn, good.ID)
			return err
		}); !model.IsKind(err, model.KindNotFound) {
			t.Fatalf("the write before the failed one was kept: %v", err)
		}
	}
}
