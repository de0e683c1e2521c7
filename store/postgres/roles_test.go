package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
	"github.com/google/uuid"
)

// TestServingRole: a role that owns nothing cannot create the schema and Open says to run
// `fieldrelay migrate`; after Migrate as the owner with the grants, it serves; a schema one
// version older than the binary is refused the same way, and nothing is changed.
func TestServingRole(t *testing.T) {
	owner := pgtest.URL(t)
	app := pgtest.AppURL(t, owner)
	ctx := context.Background()
	if _, err := postgres.Open(ctx, app, postgres.Options{SecretKey: pgtest.SecretKey()}); err == nil || !strings.Contains(err.Error(), "fieldrelay migrate --database URL") {
		t.Fatalf("Open as %s on an empty database: %v, want the refusal naming fieldrelay migrate", pgtest.AppRole, err)
	}
	v, err := postgres.Migrate(ctx, owner, pgtest.AppRole, nil)
	if err != nil || v != postgres.SchemaVersion() {
		t.Fatalf("Migrate = %d, %v", v, err)
	}
	db := open(t, app)
	id := uuid.NewString()
	putTenant(t, db, id, "active")
	if err := db.View(ctx, func(tx model.Tx) error { _, err := tx.Tenant(id); return err }); err != nil {
		t.Fatal(err)
	}
	var super bool
	if err := db.Pool().QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil || super {
		t.Fatalf("serving as a superuser (%v)", err)
	}

	// One version older.
	if _, err := db.Pool().Exec(ctx, "DELETE FROM schema_version WHERE version = $1", postgres.SchemaVersion()); err == nil {
		t.Fatal("the serving role may delete from schema_version")
	}
	o := open(t, owner)
	if _, err := o.Pool().Exec(ctx, "DELETE FROM schema_version WHERE version = $1", postgres.SchemaVersion()); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(ctx, app, postgres.Options{SecretKey: pgtest.SecretKey()})
	if err == nil || !strings.Contains(err.Error(), "is older than this binary's") || !strings.Contains(err.Error(), "fieldrelay migrate --database URL") {
		t.Fatalf("Open as %s on an older schema: %v, want the refusal naming fieldrelay migrate", pgtest.AppRole, err)
	}
}
