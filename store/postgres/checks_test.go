package postgres_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// checkedColumns are the CHECK constraints of the schema on enumerated columns, each with
// the model's list of its values (docs/decisions/0230-postgres-check-constraints.md).
var checkedColumns = map[string][]string{
	"events_status_check":       model.EventStatuses,
	"events_priority_check":     model.Priorities,
	"missions_status_check":     model.MissionStates,
	"alerts_status_check":       model.AlertStatuses,
	"alerts_kind_check":         model.AlertKinds,
	"upstream_log_kind_check":   model.ChangeKinds,
	"downstream_log_kind_check": slices.Collect(maps.Keys(model.DownKinds)),
	"stream_changes_perm_check": model.Permissions,
}

// otherChecks are the CHECK constraints that hold no list of values.
var otherChecks = map[string]bool{"secret_key_one_check": true, "stream_changes_data_check": true}

var quoted = regexp.MustCompile(`'((?:[^']|'')*)'::text`)

// Every CHECK of the schema allows exactly the values the model lists: a value added in Go
// without a migration fails here.
func TestChecks_FollowModel(t *testing.T) {
	db := open(t, pgtest.URL(t))
	rows, err := db.Pool().Query(context.Background(), `SELECT conname, pg_get_constraintdef(c.oid)
		FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
		WHERE n.nspname = 'public' AND c.contype = 'c'`)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		defs[name] = def
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for name, def := range defs {
		if _, ok := checkedColumns[name]; !ok && !otherChecks[name] {
			t.Errorf("CHECK %s (%s) is not compared with the model", name, def)
		}
	}
	for name, want := range checkedColumns {
		def, ok := defs[name]
		if !ok {
			t.Errorf("no CHECK %s", name)
			continue
		}
		var got []string
		for _, m := range quoted.FindAllStringSubmatch(def, -1) {
			got = append(got, strings.ReplaceAll(m[1], "''", "'"))
		}
		slices.Sort(got)
		want = slices.Sorted(slices.Values(want))
		if !slices.Equal(got, want) {
			t.Errorf("CHECK %s allows %v, the model lists %v", name, got, want)
		}
	}
}

// A value outside a column's list, written straight in SQL, is refused; so is a tenant
// whose slug another tenant holds.
func TestChecks_RefuseBadValues(t *testing.T) {
	db := open(t, pgtest.URL(t))
	ctx := context.Background()
	tn, other := model.NewID(), model.NewID()
	seed := []string{
		`INSERT INTO tenant_slugs (slug, tenant_id) VALUES ('acme', '` + tn + `')`,
		`INSERT INTO tenants (tenant_id, slug, doc) VALUES ('` + tn + `', 'acme', '{}')`,
	}
	for _, q := range seed {
		if _, err := db.Pool().Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	id := func() string { return "'" + model.NewID() + "'" }
	ev := func(status, priority string) string {
		return `INSERT INTO events (tenant_id, id, created_at, vertical, status, priority, type, doc)
			VALUES ('` + tn + `', ` + id() + `, now(), 'gov', '` + status + `', '` + priority + `', 'fire', '{}')`
	}
	mission := func(status string) string {
		return `INSERT INTO missions (tenant_id, id, event_id, team_id, status, doc)
			VALUES ('` + tn + `', ` + id() + `, ` + id() + `, ` + id() + `, '` + status + `', '{}')`
	}
	alert := func(status, kind string) string {
		return `INSERT INTO alerts (tenant_id, id, key, status, kind, doc)
			VALUES ('` + tn + `', ` + id() + `, ` + id() + `, '` + status + `', '` + kind + `', '{}')`
	}
	upLog := func(kind string) string {
		return `INSERT INTO upstream_log (tenant_id, seq, kind, record_id, at)
			VALUES ('` + tn + `', (SELECT coalesce(max(seq), 0) + 1 FROM upstream_log), '` + kind + `', ` + id() + `, now())`
	}
	downLog := func(kind string) string {
		return `INSERT INTO downstream_log (tenant_id, seq, kind, record_key, at)
			VALUES ('` + tn + `', (SELECT coalesce(max(seq), 0) + 1 FROM downstream_log), '` + kind + `', 'k', now())`
	}
	change := func(perm string) string {
		return `INSERT INTO stream_changes (tenant_id, seq, name, perm, team_id, at, data)
			VALUES ('` + tn + `', (SELECT coalesce(max(seq), 0) + 1 FROM stream_changes), 'event.created', '` + perm + `', '', now(), '{}')`
	}
	cases := []struct{ name, good, bad, constraint string }{
		{"event status", ev(model.EventQueuedOffline, model.PriorityLow), ev("open", model.PriorityLow), "events_status_check"},
		{"event priority", ev(model.EventPending, model.PriorityCritical), ev(model.EventPending, "urgent"), "events_priority_check"},
		{"mission status", mission(model.MissionOnSite), mission("on_site"), "missions_status_check"},
		{"alert status", alert(model.AlertClosed, model.AlertCrewMessage), alert("all", model.AlertCrewMessage), "alerts_status_check"},
		{"alert kind", alert(model.AlertOpen, model.AlertUpstreamDown), alert(model.AlertOpen, "upstream_slow"), "alerts_kind_check"},
		{"upstream log kind", upLog(model.ChangeDispatchRequest), upLog("upstream_zone"), "upstream_log_kind_check"},
		{"downstream log kind", downLog(model.DownRequest), downLog("event"), "downstream_log_kind_check"},
		{"stream permission", change(model.PermMissionsView), change(""), "stream_changes_perm_check"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := db.Pool().Exec(ctx, c.good); err != nil {
				t.Fatalf("a value of the list was refused: %v", err)
			}
			_, err := db.Pool().Exec(ctx, c.bad)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "23514" || pe.ConstraintName != c.constraint {
				t.Fatalf("the bad value gave %v, want a violation of %s", err, c.constraint)
			}
		})
	}
	t.Run("slug taken", func(t *testing.T) {
		_, err := db.Pool().Exec(ctx, `INSERT INTO tenants (tenant_id, slug, doc) VALUES ('`+other+`', 'acme', '{}')`)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23503" || pe.ConstraintName != "tenants_slug_fkey" {
			t.Fatalf("a second tenant with the slug acme gave %v, want a violation of tenants_slug_fkey", err)
		}
	})
}

// migratedTo creates the schema of the database at url as it was at version n, straight
// from the migration files, and returns a connection to it.
func migratedTo(t *testing.T, url string, n int) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_version (
		version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) <= n {
		t.Fatalf("migrations: %v %v", files, err)
	}
	slices.Sort(files)
	for v, f := range files[:n] {
		sql, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, string(sql)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO schema_version (version) VALUES ($1)", v+1); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// upgradedWith writes rows through conn into the database at url, left at version from
// (migratedTo), opens it, which migrates it to the latest version, and holds that each of
// tables then holds exactly one row.
func upgradedWith(t *testing.T, url string, conn *pgx.Conn, from int, rows []string, tables ...string) *postgres.DB {
	t.Helper()
	ctx := context.Background()
	for _, q := range rows {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db := open(t, url)
	var version int
	if err := db.Pool().QueryRow(ctx, "SELECT max(version) FROM schema_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != postgres.SchemaVersion() || version <= from {
		t.Fatalf("schema at version %d, want %d", version, postgres.SchemaVersion())
	}
	for _, table := range tables {
		var n int
		if err := db.Pool().QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != 1 {
			t.Errorf("%s holds %d rows after the migration (%v), want 1", table, n, err)
		}
	}
	return db
}

// Migration 10 applies in place to a database at version 9 that holds rows: the rows stay
// and the constraints hold from then on.
func TestMigrateChecksInPlace(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	conn := migratedTo(t, url, 9)
	tn := model.NewID()
	rows := []string{
		`INSERT INTO tenant_slugs (slug, tenant_id) VALUES ('acme', '` + tn + `')`,
		`INSERT INTO tenants (tenant_id, slug, doc) VALUES ('` + tn + `', 'acme', '{}')`,
		`INSERT INTO events (tenant_id, id, created_at, vertical, status, priority, type, doc)
			VALUES ('` + tn + `', '` + model.NewID() + `', now(), 'gov', 'delivered', 'high', 'fire', '{}')`,
		`INSERT INTO missions (tenant_id, id, event_id, team_id, status, doc)
			VALUES ('` + tn + `', '` + model.NewID() + `', '` + model.NewID() + `', '` + model.NewID() + `', 'ACK', '{}')`,
		`INSERT INTO alerts (tenant_id, id, key, status, kind, doc)
			VALUES ('` + tn + `', '` + model.NewID() + `', 'k', 'open', 'requires_manual', '{}')`,
		`INSERT INTO upstream_log (tenant_id, seq, kind, record_id, at) VALUES ('` + tn + `', 1, 'upstream_event', '` + model.NewID() + `', now())`,
		`INSERT INTO downstream_log (tenant_id, seq, kind, record_key, at) VALUES ('` + tn + `', 1, 'zone', 'Z', now())`,
		`INSERT INTO stream_changes (tenant_id, seq, name, perm, team_id, at, data)
			VALUES ('` + tn + `', 1, 'event.created', 'events:read', '', now(), '{}')`,
	}
	db := upgradedWith(t, url, conn, 9, rows,
		"tenants", "events", "missions", "alerts", "upstream_log", "downstream_log", "stream_changes")
	_, err := db.Pool().Exec(ctx, "UPDATE missions SET status = 'LOST'")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.ConstraintName != "missions_status_check" {
		t.Fatalf("after the migration, a bad mission status gave %v", err)
	}
}
