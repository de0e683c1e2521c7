package postgres_test

import (
	"context"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"

	"github.com/jackc/pgx/v5"
)

// TestTenantReadsKept: a write transaction reads the tenant's record, its zones and its
// webhooks once under the tenant's lock, and its own writes of them are read back
// (docs/decisions/0243-tenant-reads-kept-under-its-lock.md). Another connection changes
// the zones and webhooks behind the lock's back (no writer of the store does): a read made
// again under the lock still answers what the first read found, so it made no round trip;
// a read-only transaction, which holds no lock, reads them every time.
func TestTenantReadsKept(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 2, SecretKey: pgtest.SecretKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	raw, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close(ctx)
	tn := model.NewID()
	hook := &model.Webhook{ID: model.NewID(), URL: "https://hooks.example/a", Events: []string{"event.created"}, Secret: "whsec_a", Status: "active"}
	if err := db.Update(ctx, func(tx model.Tx) error {
		if err := tx.PutTenant(&model.Tenant{ID: tn, Name: "Kept", Slug: "kept", Status: "active"}); err != nil {
			return err
		}
		if err := tx.PutZone(tn, &model.Zone{ID: model.NewID(), Code: "A", Name: "A"}); err != nil {
			return err
		}
		return tx.PutWebhook(tn, hook)
	}); err != nil {
		t.Fatal(err)
	}
	behind := func(sql string) {
		t.Helper()
		if _, err := raw.Exec(ctx, sql, tn); err != nil {
			t.Fatal(err)
		}
	}
	type seen struct {
		name  string
		zones []string
		hooks []string
	}
	read := func(tx model.Tx) seen {
		t.Helper()
		ten, err := tx.Tenant(tn)
		if err != nil {
			t.Fatal(err)
		}
		zs, err := tx.Zones(tn)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := tx.Webhooks(tn)
		if err != nil {
			t.Fatal(err)
		}
		s := seen{name: ten.Name}
		for _, z := range zs {
			s.zones = append(s.zones, z.Name)
		}
		for _, w := range ws {
			s.hooks = append(s.hooks, w.URL+" "+w.Secret)
		}
		return s
	}
	// The tenant's own row cannot change behind the lock: the zones and webhooks can (their
	// updates take no lock that conflicts with it).
	changeBehind := func() {
		behind(`UPDATE zones SET doc = jsonb_set(doc, '{name}', '"Behind"') WHERE tenant_id = $1`)
		behind(`UPDATE webhooks SET doc = jsonb_set(doc, '{url}', '"https://hooks.example/behind"') WHERE tenant_id = $1`)
	}
	want := func(what string, got seen, name, zone, hookURL string) {
		t.Helper()
		if got.name != name || len(got.zones) != 1 || got.zones[0] != zone || len(got.hooks) != 1 || got.hooks[0] != hookURL+" whsec_a" {
			t.Fatalf("%s: read %+v; want the tenant %q, the zone %q, the webhook %q with its secret", what, got, name, zone, hookURL)
		}
	}

	if err := db.Update(ctx, func(tx model.Tx) error {
		want("first read under the lock", read(tx), "Kept", "A", "https://hooks.example/a")
		changeBehind()
		want("second read under the lock", read(tx), "Kept", "A", "https://hooks.example/a")
		// The transaction's own writes are read back.
		ten, err := tx.Tenant(tn)
		if err != nil {
			return err
		}
		ten.Name = "Own"
		if err := tx.PutTenant(ten); err != nil {
			return err
		}
		if err := tx.PutZone(tn, &model.Zone{ID: model.NewID(), Code: "B", Name: "B"}); err != nil {
			return err
		}
		if err := tx.DeleteZone(tn, "A"); err != nil {
			return err
		}
		own := *hook
		own.URL = "https://hooks.example/own"
		if err := tx.PutWebhook(tn, &own); err != nil {
			return err
		}
		want("read after the transaction's own writes", read(tx), "Own", "B", "https://hooks.example/own")
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	changeBehind()
	if err := db.View(ctx, func(tx model.Tx) error {
		want("first read-only read", read(tx), "Own", "Behind", "https://hooks.example/behind")
		behind(`UPDATE zones SET doc = jsonb_set(doc, '{name}', '"Again"') WHERE tenant_id = $1`)
		if zs, err := tx.Zones(tn); err != nil || len(zs) != 1 || zs[0].Name != "Again" {
			t.Fatalf("a read-only transaction's second read of the zones: %+v %v; want the zone renamed meanwhile", zs, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
