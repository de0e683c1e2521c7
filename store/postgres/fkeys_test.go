package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// seedTenant is the SQL of a tenant of slug acme with a user and an API key, each with its
// row of the global lookups, and a stream change.
func seedTenant(tn, user, key string) []string {
	return []string{
		`INSERT INTO tenant_slugs (slug, tenant_id) VALUES ('acme', '` + tn + `')`,
		`INSERT INTO tenants (tenant_id, slug, doc) VALUES ('` + tn + `', 'acme', '{}')`,
		`INSERT INTO user_emails (email, tenant_id, user_id) VALUES ('ops@acme.example', '` + tn + `', '` + user + `')`,
		`INSERT INTO users (tenant_id, id, email, doc) VALUES ('` + tn + `', '` + user + `', 'ops@acme.example', '{}')`,
		`INSERT INTO api_key_hashes (hash, tenant_id, key_id) VALUES ('h1', '` + tn + `', '` + key + `')`,
		`INSERT INTO api_keys (tenant_id, id, hash, doc) VALUES ('` + tn + `', '` + key + `', 'h1', '{}')`,
		`INSERT INTO stream_changes (tenant_id, seq, name, perm, team_id, at, data)
			VALUES ('` + tn + `', 1, 'event.created', 'events:read', '', now(), '{}')`,
		`INSERT INTO stream_pruned (tenant_id, upto) VALUES ('` + tn + `', 0)`,
	}
}

// fkeyCases are rows that the foreign keys of migration 11 refuse, each with the key.
func fkeyCases(tn, user, key string) []struct{ name, bad, constraint string } {
	other := model.NewID()
	return []struct{ name, bad, constraint string }{
		{"a user whose email has no row", `INSERT INTO users (tenant_id, id, email, doc)
			VALUES ('` + tn + `', '` + other + `', 'new@acme.example', '{}')`, "users_email_fkey"},
		{"a user's email changed without its row", `UPDATE users SET email = 'moved@acme.example' WHERE id = '` + user + `'`, "users_email_fkey"},
		{"an email's row taken by another user", `UPDATE user_emails SET user_id = '` + other + `'`, "users_email_fkey"},
		{"an API key whose hash has no row", `INSERT INTO api_keys (tenant_id, id, hash, doc)
			VALUES ('` + tn + `', '` + other + `', 'h2', '{}')`, "api_keys_hash_fkey"},
		{"a hash's row moved to another key", `UPDATE api_key_hashes SET key_id = '` + other + `' WHERE key_id = '` + key + `'`, "api_keys_hash_fkey"},
		{"a stream change of no tenant", `INSERT INTO stream_changes (tenant_id, seq, name, perm, team_id, at, data)
			VALUES ('` + other + `', 2, 'event.created', 'events:read', '', now(), '{}')`, "stream_changes_tenant_id_fkey"},
		{"a stream prune of no tenant", `INSERT INTO stream_pruned (tenant_id, upto) VALUES ('` + other + `', 0)`, "stream_pruned_tenant_id_fkey"},
	}
}

// refusesAll checks that each case is refused by its foreign key.
func refusesAll(t *testing.T, db *postgres.DB, tn, user, key string) {
	t.Helper()
	for _, c := range fkeyCases(tn, user, key) {
		t.Run(c.name, func(t *testing.T) {
			_, err := db.Pool().Exec(context.Background(), c.bad)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "23503" || pe.ConstraintName != c.constraint {
				t.Fatalf("gave %v, want a violation of %s", err, c.constraint)
			}
		})
	}
}

// The foreign keys refuse a user, an API key or a stream row that names nothing.
func TestForeignKeys_Refuse(t *testing.T) {
	db := open(t, pgtest.URL(t))
	tn, user, key := model.NewID(), model.NewID(), model.NewID()
	for _, q := range seedTenant(tn, user, key) {
		if _, err := db.Pool().Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	refusesAll(t, db, tn, user, key)
}

// Migration 11 applies in place to a database at version 10 that holds rows: they stay,
// but for stream rows of no tenant, and the foreign keys hold from then on.
func TestMigrateForeignKeysInPlace(t *testing.T) {
	url := pgtest.URL(t)
	conn := migratedTo(t, url, 10)
	tn, user, key := model.NewID(), model.NewID(), model.NewID()
	rows := append(seedTenant(tn, user, key),
		`INSERT INTO stream_changes (tenant_id, seq, name, perm, team_id, at, data)
			VALUES ('`+model.NewID()+`', 2, 'event.created', 'events:read', '', now(), '{}')`)
	db := upgradedWith(t, url, conn, 10, rows,
		"tenants", "users", "user_emails", "api_keys", "api_key_hashes", "stream_changes", "stream_pruned")
	refusesAll(t, db, tn, user, key)
}

// Every tenant-owned table has a foreign key led by tenant_id (to tenants, or to a table of
// the same tenant): put leaves the check of the tenant to it once the transaction saw the
// tenant exist (docs/decisions/0227-event-stored-once.md).
func TestCatalogTenantForeignKeys(t *testing.T) {
	db := open(t, pgtest.URL(t))
	rows, err := db.Pool().Query(context.Background(), `SELECT c.relname FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id'
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname <> 'tenants'
		AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'f' AND k.conkey[1] = a.attnum)
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	without, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range without {
		if !globalTables[table] {
			t.Errorf("table %s: no foreign key led by tenant_id", table)
		}
	}
}
