package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
	"github.com/fieldrelay/fieldrelay/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// open opens a store on a fresh database, closed at the end of the test.
func open(t *testing.T, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: 8, SecretKey: pgtest.SecretKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestConformance(t *testing.T) {
	storetest.Conformance(t, func(t *testing.T) model.Store { return open(t, pgtest.URL(t)) })
}

// Processes starting together migrate one at a time: every Open succeeds and the schema
// is applied once.
func TestOpenConcurrent(t *testing.T) {
	url := pgtest.URL(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			db, err := postgres.Open(context.Background(), url, postgres.Options{SecretKey: pgtest.SecretKey()})
			if err == nil {
				_ = db.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	db := open(t, url)
	var n, max int
	if err := db.Pool().QueryRow(context.Background(), "SELECT count(*), max(version) FROM schema_version").Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n != postgres.SchemaVersion() || max != postgres.SchemaVersion() {
		t.Fatalf("schema_version holds %d rows up to %d, want %d", n, max, postgres.SchemaVersion())
	}
}

// A database migrated by a newer binary is refused, with a message that says so.
func TestOpenRefusesNewerSchema(t *testing.T) {
	url := pgtest.URL(t)
	db := open(t, url)
	if _, err := db.Pool().Exec(context.Background(), "INSERT INTO schema_version (version) VALUES ($1)", postgres.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(context.Background(), url, postgres.Options{SecretKey: pgtest.SecretKey()})
	if err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("Open of a newer schema = %v, want a refusal", err)
	}
}

// globalTables are the tables that no tenant owns: installation meta and the global
// lookups (docs/decisions/0091-postgres-schema.md).
var globalTables = map[string]bool{"schema_version": true, "meta": true, "tenant_slugs": true,
	"user_emails": true, "api_key_hashes": true, "login_guards": true, "auth_tokens": true, "secret_key": true}

// Every other table leads its primary key and every unique index with tenant_id: what
// lets Citus distribute the tables by tenant with co-location (issue 17, rule 3).
func TestCatalogDistributableByTenant(t *testing.T) {
	db := open(t, pgtest.URL(t))
	ctx := context.Background()
	rows, err := db.Pool().Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(tables) < 20 {
		t.Fatalf("only %d tables: %v", len(tables), tables)
	}
	for _, table := range tables {
		if globalTables[table] {
			continue
		}
		// The first column of the primary key and of every unique index.
		irows, err := db.Pool().Query(ctx, `SELECT i.relname, x.indisprimary, a.attname
			FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
			LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[0]
			WHERE x.indrelid = $1::regclass AND x.indisunique`, "public."+table)
		if err != nil {
			t.Fatal(err)
		}
		primary := false
		for irows.Next() {
			var index string
			var isPrimary bool
			var first *string
			if err := irows.Scan(&index, &isPrimary, &first); err != nil {
				t.Fatal(err)
			}
			primary = primary || isPrimary
			if first == nil || *first != "tenant_id" {
				t.Errorf("table %s: unique index %s does not begin with tenant_id", table, index)
			}
		}
		irows.Close()
		if !primary {
			t.Errorf("table %s has no primary key", table)
		}
	}
	for table := range globalTables {
		var exists bool
		if err := db.Pool().QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", "public."+table).Scan(&exists); err != nil || !exists {
			t.Errorf("declared global table %s does not exist (%v)", table, err)
		}
	}
}
