package pgtest

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// AppRole is the role, neither superuser nor owner of any table, as which the tests of the
// central tier run its processes (docs/decisions/0223-least-privilege.md). The tables are
// created by the URL's own role (postgres, the owner), with `fieldrelay migrate --grant
// AppRole` or postgres.Migrate.
const AppRole = "fieldrelay_app"

// AppURL returns url (one of URL's or Cluster.URL's) as AppRole, which it creates in the
// cluster when missing (LOGIN, nothing else).
func AppURL(tb testing.TB, raw string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DO $$ BEGIN CREATE ROLE `+AppRole+` LOGIN;
		EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`); err != nil {
		tb.Fatalf("pgtest: creating the role %s: %v", AppRole, err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	u.User = url.User(AppRole)
	return u.String()
}
