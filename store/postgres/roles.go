package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Least privilege (docs/decisions/0223-least-privilege.md): the tables belong to an owner
// role, which migrates them (`fieldrelay migrate`); the processes serve as a role that only
// reads and writes rows. A serving role meets an older schema as a permission error,
// which Open explains.

// Migrate creates or migrates the schema of the database at url, as the role of the URL
// (the tables' owner), and returns its version. With grantTo, it then grants that role
// what a serving process needs (GrantsSQL), on the tables of now and of later migrations.
func Migrate(ctx context.Context, url, grantTo string, log *slog.Logger) (int, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return 0, fmt.Errorf("database url: %w", err)
	}
	cfg.MaxConns = 1
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, fmt.Errorf("connecting to the database: %w", err)
	}
	defer pool.Close()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	db := &DB{pool: pool, log: log}
	if err := db.migrate(ctx); err != nil {
		return 0, err
	}
	if grantTo != "" {
		if _, err := pool.Exec(ctx, GrantsSQL(grantTo)); err != nil {
			return 0, fmt.Errorf("granting %s: %w", grantTo, err)
		}
	}
	return SchemaVersion(), nil
}

// GrantsSQL is what the owner of the tables runs to let role serve: read and write the
// rows of every table, today's and those of later migrations (default privileges of the
// owner), and only read schema_version. Nothing else is needed: LISTEN, pg_notify and advisory locks take no grant, and
// PUBLIC may connect and use the schema public (revoke that from PUBLIC and grant CONNECT
// and USAGE to role instead if your installation does).
func GrantsSQL(role string) string {
	r := pgx.Identifier{role}.Sanitize()
	return "GRANT USAGE ON SCHEMA public TO " + r + ";\n" +
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO " + r + ";\n" +
		"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO " + r + ";\n" +
		"REVOKE INSERT, UPDATE, DELETE ON schema_version FROM " + r + ";\n"
}

// notOwner explains a permission error met while migrating: the role of the URL serves,
// it does not own the tables.
func notOwner(err error, current, want int) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42501" {
		return fmt.Errorf("the database's schema version %d is older than this binary's %d, and the role of the URL may not migrate it (%s): "+
			"run `fieldrelay migrate --database URL` as the role that owns the tables first", current, want, pe.Message)
	}
	return err
}
