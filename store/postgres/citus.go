package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Citus (docs/decisions/0240-citus-distribution.md): when the database has the citus
// extension, the migration distributes the schema by tenant. Every table whose primary key
// leads with tenant_id is distributed by tenant_id, co-located with tenants, so that a
// tenant's rows of every table are in one shard and a transaction of one tenant
// (docs/decisions/0237-group-commit-by-tenant.md) runs on one node; every other table (meta,
// the global lookups) becomes a reference table, copied to every node; schema_version
// stays on the coordinator. On plain PostgreSQL nothing changes.

// distribute distributes the tables that are not yet (those of a first migration, or of a
// later one that created tables), within the migration's transaction; it does nothing
// without the citus extension.
func distribute(ctx context.Context, tx pgx.Tx) error {
	var citus bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')").Scan(&citus); err != nil {
		return fmt.Errorf("looking for the citus extension: %w", err)
	}
	if !citus {
		return nil
	}
	// The tables not distributed yet, reference tables first (tenants' foreign key names
	// tenant_slugs), then tenants, then the tables co-located with it.
	rows, err := tx.Query(ctx, `SELECT c.relname, coalesce((SELECT a.attname = 'tenant_id'
			FROM pg_index x JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[0]
			WHERE x.indrelid = c.oid AND x.indisprimary), false) AS by_tenant
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname <> 'schema_version'
			AND NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = c.oid)
		ORDER BY by_tenant, c.relname <> 'tenants', c.relname`)
	if err != nil {
		return fmt.Errorf("listing the tables to distribute: %w", err)
	}
	type table struct {
		name     string
		byTenant bool
	}
	var tables []table
	var tb table
	if _, err := pgx.ForEachRow(rows, []any{&tb.name, &tb.byTenant}, func() error {
		tables = append(tables, tb)
		return nil
	}); err != nil {
		return fmt.Errorf("listing the tables to distribute: %w", err)
	}
	if len(tables) == 0 {
		return nil
	}
	// Citus distributes no table that a local table's foreign key names: the foreign keys
	// of the tables not yet distributed are dropped first and made again after.
	rows, err = tx.Query(ctx, `SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
		WHERE contype = 'f' AND connamespace = 'public'::regnamespace
			AND (NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = conrelid)
				OR NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = confrelid))`)
	if err != nil {
		return fmt.Errorf("listing the foreign keys: %w", err)
	}
	var drops, fkeys []string // the ALTER TABLE statements that drop them, and make them again
	var rel, name, def string
	if _, err := pgx.ForEachRow(rows, []any{&rel, &name, &def}, func() error {
		drops = append(drops, fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT %s", rel, pgx.Identifier{name}.Sanitize()))
		fkeys = append(fkeys, fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s %s", rel, pgx.Identifier{name}.Sanitize(), def))
		return nil
	}); err != nil {
		return fmt.Errorf("listing the foreign keys: %w", err)
	}
	// One connection per worker for the whole transaction: Citus refuses to alter a table
	// after a parallel operation on distributed tables in the same transaction.
	if _, err := tx.Exec(ctx, "SET LOCAL citus.multi_shard_modify_mode TO 'sequential'"); err != nil {
		return fmt.Errorf("citus: %w", err)
	}
	for _, sql := range drops {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("citus: %s: %w", sql, err)
		}
	}
	for _, t := range tables {
		var sql string
		switch {
		case !t.byTenant:
			sql = "SELECT create_reference_table($1)"
		case t.name == "tenants":
			sql = "SELECT create_distributed_table($1, 'tenant_id')"
		default:
			sql = "SELECT create_distributed_table($1, 'tenant_id', colocate_with => 'tenants')"
		}
		if _, err := tx.Exec(ctx, sql, t.name); err != nil {
			return fmt.Errorf("citus: distributing %s: %w", t.name, err)
		}
	}
	for _, sql := range fkeys {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("citus: %s: %w", sql, err)
		}
	}
	return nil
}
