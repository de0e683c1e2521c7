package cli

import (
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

func TestEnvName(t *testing.T) {
	for flag, want := range map[string]string{"data": "FIELDRELAY_DATA", "plain-http": "FIELDRELAY_PLAIN_HTTP",
		"tls-cert": "FIELDRELAY_TLS_CERT", "webhook-retry-schedule": "FIELDRELAY_WEBHOOK_RETRY_SCHEDULE"} {
		if got := envName(flag); got != want {
			t.Errorf("envName(%q) = %q, want %q", flag, got, want)
		}
	}
}

func TestEnvFallback(t *testing.T) {
	fromEnv, fromFlag := t.TempDir(), t.TempDir()
	a := newTestApp(map[string]string{
		"FIELDRELAY_DATA":      fromEnv,
		"FIELDRELAY_JSON":      "true",
		"FIELDRELAY_VERTICALS": "emergency,logistics",
		"FIELDRELAY_EMAIL":     "", // empty counts as unset
	})

	t.Run("OK", func(t *testing.T) {
		out := mustRun(t, a, "", "tenant", "create", "--name", "Env", "--slug", "env", "--email", "ops@env.example", "--country", "FR")
		if !strings.HasPrefix(out, "{") || !strings.Contains(out, `"emergency",`) {
			t.Fatalf("FIELDRELAY_JSON and FIELDRELAY_VERTICALS were not read: %s", out)
		}
		if _, err := os.Stat(store.Path(fromEnv)); err != nil {
			t.Fatalf("FIELDRELAY_DATA was not read: %v", err)
		}
	})
	t.Run("FlagWins", func(t *testing.T) {
		mustRun(t, a, "", "tenant", "create", "--data", fromFlag, "--name", "Flag", "--slug", "flag",
			"--email", "ops@flag.example", "--country", "FR", "--json=false")
		list := runJSON[admin.TenantListResult](t, a, "", "tenant", "list", "--data", fromFlag)
		if list.Count != 1 || list.Data[0].Slug != "flag" {
			t.Fatalf("--data lost to FIELDRELAY_DATA: %+v", list)
		}
		if list = runJSON[admin.TenantListResult](t, a, "", "tenant", "list"); list.Count != 1 || list.Data[0].Slug != "env" {
			t.Fatalf("env dir: %+v", list)
		}
	})
	t.Run("ErrBadValue", func(t *testing.T) {
		b := newTestApp(map[string]string{"FIELDRELAY_JSON": "maybe", "FIELDRELAY_DATA": filepath.Join(fromEnv)})
		r := run(t, b, "", "tenant", "list")
		if r.code != 1 || !strings.Contains(r.stderr, "FIELDRELAY_JSON") {
			t.Fatalf("got %d %q %q", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("Serve", func(t *testing.T) {
		b := newTestApp(map[string]string{"FIELDRELAY_WEBHOOK_RETRY_SCHEDULE": "1s,bad"})
		r := run(t, b, "", "serve", "--data", t.TempDir())
		if r.code != 1 || !strings.Contains(r.stderr, "--webhook-retry-schedule") {
			t.Fatalf("got %d %q", r.code, r.stderr)
		}
	})
}

func TestHelpNamesEnv(t *testing.T) {
	out := mustRun(t, newTestApp(nil), "", "serve", "--help")
	for _, v := range []string{"$FIELDRELAY_DATA", "$FIELDRELAY_PLAIN_HTTP", "$FIELDRELAY_INTERNAL_SECRET"} {
		if !strings.Contains(out, v) {
			t.Errorf("serve --help does not name %s", v)
		}
	}
}

func TestVersion(t *testing.T) {
	v := runJSON[versionInfo](t, newTestApp(nil), "", "version")
	if v.Version == "" || v.Commit == "" || v.BuildDate == "" || !strings.HasPrefix(v.GoVersion, "go") {
		t.Fatalf("version: %+v", v)
	}
	if out := mustRun(t, newTestApp(nil), "", "version"); !strings.HasPrefix(out, "fieldrelay ") {
		t.Fatalf("version text: %s", out)
	}
}

func TestUsageErrors(t *testing.T) {
	a := newTestApp(nil)
	for _, args := range [][]string{{"tenant", "list", "--bogus"}, {"tenant", "list", "extra"}} {
		r := run(t, a, "", args...)
		if r.code != 1 || !strings.HasPrefix(r.stderr, "error: ") {
			t.Fatalf("%v: %d %q", args, r.code, r.stderr)
		}
	}
	e := runJSONError(t, a, "", "tenant", "list", "extra")
	if e.Error != string(model.KindValidation) || !strings.Contains(e.Message, `"extra"`) {
		t.Fatalf("error: %+v", e)
	}
}
