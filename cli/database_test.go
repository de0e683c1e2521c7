package cli

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// The --database wiring is tested here with a bbolt store standing behind the URL, so that it
// runs without PostgreSQL; database_pg_test.go runs it on a real PostgreSQL.

// secretURL is a database URL whose password must never be printed.
const secretURL = "postgres://fieldrelay:hunter2-s3cret@db.invalid:5432/central?sslmode=disable"

// boltBehindURL is a storeOpener that opens, for any URL, the bbolt store of dir (for the
// time of the caller's use, as a database connection would be), and records the URLs.
type boltBehindURL struct {
	dir  string
	mu   sync.Mutex
	urls []string
}

func (b *boltBehindURL) open(_ context.Context, url string, _ *postgres.SecretKey, _ *slog.Logger) (model.Store, error) {
	b.mu.Lock()
	b.urls = append(b.urls, url)
	b.mu.Unlock()
	return store.Open(b.dir, store.Options{})
}

func newDatabaseTestApp(t *testing.T) (*app, *boltBehindURL) {
	a := newTestApp(secretKeyEnv(t))
	b := &boltBehindURL{dir: t.TempDir()}
	a.openStore = b.open
	return a, b
}

func TestDatabaseURL(t *testing.T) {
	for _, ok := range []string{"postgres://h/db", "postgresql://u:p@h:5432/db?sslmode=require", "POSTGRES:///db?host=/run/postgresql"} {
		if err := checkDatabaseURL(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"host=db password=hunter2-s3cret", "mysql://u:hunter2-s3cret@h/db", "db.example:5432", "", "postgres://u:hunter2-s3cret@h:99999999999/%zz"} {
		err := checkDatabaseURL(bad)
		if model.ErrorKind(err) != model.KindValidation || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	for in, want := range map[string]string{
		secretURL: "postgres://fieldrelay:xxxxx@db.invalid:5432/central?sslmode=disable",
		"postgresql://fieldrelay@db/central?password=hunter2-s3cret&sslmode=require": "postgresql://fieldrelay@db/central?password=xxxxx&sslmode=require",
		"postgres://db/central": "postgres://db/central",
		"postgres://%zz":        "(a database URL that does not parse)",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
	msg := scrubURL("dial "+secretURL+": auth failed for password hunter2-s3cret", secretURL)
	if strings.Contains(msg, "hunter2") || !strings.Contains(msg, "fieldrelay:xxxxx@db.invalid") {
		t.Errorf("scrubURL: %s", msg)
	}
}

func TestServeDatabase(t *testing.T) {
	a, b := newDatabaseTestApp(t)
	data := filepath.Join(t.TempDir(), "node-1") // serve creates it
	s := startServe(t, a, "--data", data, "--database", secretURL, "--plain-http")

	out := s.stdout.String()
	if !strings.Contains(out, "(data "+data+", database postgres://fieldrelay:xxxxx@db.invalid:5432/central?sslmode=disable)\n") {
		t.Fatalf("banner: %s", out)
	}
	if len(b.urls) != 1 || b.urls[0] != secretURL {
		t.Fatalf("the store was opened with %q, want the URL as given", b.urls)
	}
	res, err := http.Get(s.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %d", res.StatusCode)
	}
	// The records are in the database, not in --data, which holds the process's own files.
	if _, err := os.Stat(store.Path(data)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s: %v; want no bbolt file with --database", store.Path(data), err)
	}
	if _, err := os.Stat(adminSocket(data)); err != nil {
		t.Fatalf("admin socket: %v", err)
	}

	// A second process on the same --data is refused: each serve needs a directory of its own.
	r := run(t, a, "", "serve", "--data", data, "--database", secretURL, "--plain-http", "--addr", "127.0.0.1:0")
	if r.code != 1 || !strings.Contains(r.stderr, "each serve process needs a --data of its own") {
		t.Fatalf("second serve on %s: %d %q", data, r.code, r.stderr)
	}

	if code := s.shutdown(t); code != 0 {
		t.Fatalf("serve exited with %d", code)
	}
	all := s.stdout.String() + s.stderr.String() + r.stdout + r.stderr
	if strings.Contains(all, "hunter2") {
		t.Fatalf("the password is in the output:\n%s", all)
	}
	var logged bool
	for line := range strings.SplitSeq(s.stderr.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "serving" {
			logged = rec["database"] == redactURL(secretURL)
		}
	}
	if !logged {
		t.Fatalf("no serving line with the redacted database in the log:\n%s", s.stderr)
	}
}

func TestServeDatabaseErrors(t *testing.T) {
	a, _ := newDatabaseTestApp(t)
	data := t.TempDir()
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"NotAURL":     {[]string{"--database", "host=db password=hunter2-s3cret"}, "--database must be a postgres:// or postgresql:// URL"},
		"OtherScheme": {[]string{"--database", "mysql://u:hunter2-s3cret@db/x"}, "--database must be a postgres:// or postgresql:// URL"},
		"Backups":     {[]string{"--database", secretURL, "--backup-every", "6h"}, "pg_dump"},
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, a, "", append([]string{"serve", "--data", data, "--plain-http", "--addr", "127.0.0.1:0"}, tc.args...)...)
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr+r.stdout, "hunter2") {
				t.Fatalf("got %d %q %q", r.code, r.stdout, r.stderr)
			}
		})
	}
	t.Run("OpenFails", func(t *testing.T) {
		a := newTestApp(secretKeyEnv(t))
		a.openStore = func(context.Context, string, *postgres.SecretKey, *slog.Logger) (model.Store, error) {
			return nil, errors.New("failed to connect to " + secretURL + ": password authentication failed (hunter2-s3cret)")
		}
		r := run(t, a, "", "serve", "--data", data, "--plain-http", "--addr", "127.0.0.1:0", "--database", secretURL)
		if r.code != 1 || !strings.HasPrefix(r.stderr, "error: cannot open the database postgres://fieldrelay:xxxxx@db.invalid:5432/central") ||
			!strings.Contains(r.stderr, "password authentication failed") || strings.Contains(r.stderr+r.stdout, "hunter2") {
			t.Fatalf("got %d %q %q", r.code, r.stdout, r.stderr)
		}
	})
}

// TestAdminDatabase: the admin commands with --database work on the database directly,
// need no --data, and print what they print on bbolt.
func TestAdminDatabase(t *testing.T) {
	a, b := newDatabaseTestApp(t)
	t.Chdir(t.TempDir()) // the default --data, ./data, must stay untouched

	out := mustRun(t, a, "", "tenant", "create", "--database", secretURL, "--name", "Acme", "--slug", "acme",
		"--email", "ops@acme.example", "--country", "FR", "--json")
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil || len(raw) != 2 || raw["tenant"] == nil || raw["api_key"] == nil {
		t.Fatalf("want exactly {tenant, api_key}, got %v %s", err, out)
	}
	var created model.CreatedTenant
	_ = json.Unmarshal([]byte(out), &created)
	if created.Tenant.Slug != "acme" || !engine.LooksLikeAPIKey(created.APIKey) {
		t.Fatalf("created %+v", created)
	}
	if _, err := os.Stat("data"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("./data: %v; want it untouched with --database", err)
	}

	// The same text as on bbolt: a data directory given the same commands prints the same
	// (but for the ids and keys, which differ).
	onBolt := t.TempDir()
	mustRun(t, a, "", "tenant", "create", "--data", onBolt, "--name", "Acme", "--slug", "acme", "--email", "ops@acme.example", "--country", "FR")
	for _, args := range [][]string{{"tenant", "list"}, {"tenant", "show", "acme"}, {"apikey", "list", "--tenant", "acme"}} {
		got := mustRun(t, a, "", append(args, "--database", secretURL)...)
		want := mustRun(t, a, "", append(args, "--data", onBolt)...)
		if norm(got) != norm(want) || got == "" {
			t.Errorf("%s:\n--database: %s\n--data:     %s", args, got, want)
		}
	}

	key := runJSON[model.NewKey](t, a, "", "apikey", "create", "--database", secretURL, "--tenant", "acme")
	if !engine.LooksLikeAPIKey(key.APIKey) || key.Key == nil {
		t.Fatalf("apikey create: %+v", key)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"backup", "--out", "x.db"}, "pg_dump"},
		{[]string{"restore", "--in", "x.db"}, "pg_restore"},
		{[]string{"check"}, "pg_amcheck"},
	} {
		r := run(t, a, "", append(tc.args, "--database", secretURL)...)
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s --database: %d %q", tc.args, r.code, r.stderr)
		}
	}
	e := runJSONError(t, a, "", "tenant", "list", "--database", "host=db password=hunter2-s3cret")
	if e.Error != string(model.KindValidation) || e.Field != "database" || strings.Contains(e.Message, "hunter2") {
		t.Fatalf("a key=value string: %+v", e)
	}
	for _, u := range b.urls {
		if u != secretURL {
			t.Fatalf("opened %q", u)
		}
	}
}

// varying are what differs between two stores given the same commands: ids, times and keys.
var varying = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d{4}-\d\d-\d\dT[\d:.]+Z|fr_live_\w+`)

// norm blanks what varies.
func norm(s string) string { return varying.ReplaceAllString(s, "<x>") }
