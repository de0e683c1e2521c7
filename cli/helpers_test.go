package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/fieldrelay/fieldrelay/server/servertest"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/password"
	"github.com/fieldrelay/fieldrelay/store"
)

// cheapPasswords keeps argon2 fast in tests.
var cheapPasswords = password.Params{Time: 1, Memory: 64, Threads: 1}

// newTestApp returns an app that reads its environment from env and hashes cheaply.
func newTestApp(env map[string]string) *app {
	return &app{
		getenv:        func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		engineOptions: engine.Options{Password: cheapPasswords},
	}
}

// result is what one command line did.
type result struct {
	code           int
	stdout, stderr string
}

// run runs a command line in-process with buffers.
func run(t testing.TB, a *app, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := a.execute(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

// mustRun runs a command line that must succeed and returns its stdout.
func mustRun(t testing.TB, a *app, stdin string, args ...string) string {
	t.Helper()
	r := run(t, a, stdin, args...)
	if r.code != 0 {
		t.Fatalf("fieldrelay %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// runJSON runs a command line with --json that must succeed and decodes its output.
func runJSON[T any](t testing.TB, a *app, stdin string, args ...string) T {
	t.Helper()
	out := mustRun(t, a, stdin, append(args, "--json")...)
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("fieldrelay %s: output is not the expected JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v
}

// jsonError is the --json form of a failed command.
type jsonError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Field   string `json:"field"`
}

// runJSONError runs a command line with --json that must fail and decodes its error.
func runJSONError(t testing.TB, a *app, stdin string, args ...string) jsonError {
	t.Helper()
	r := run(t, a, stdin, append(args, "--json")...)
	if r.code != 1 {
		t.Fatalf("fieldrelay %s: exit %d, want 1\nstdout: %s", strings.Join(args, " "), r.code, r.stdout)
	}
	var e jsonError
	if err := json.Unmarshal([]byte(r.stdout), &e); err != nil || e.Error == "" || e.Message == "" {
		t.Fatalf("fieldrelay %s: error output is not {error, message}: %v\n%s", strings.Join(args, " "), err, r.stdout)
	}
	return e
}

// createTenant creates the tenant `slug` in data and returns its first key.
func createTenant(t testing.TB, a *app, data, slug string) model.CreatedTenant {
	t.Helper()
	return runJSON[model.CreatedTenant](t, a, "", "tenant", "create", "--data", data, "--name", "Tenant "+slug,
		"--slug", slug, "--email", "ops@"+slug+".example", "--country", "FR")
}

// openEngine opens the store of data (holding its lock until cleanup) with an engine.
func openEngine(t testing.TB, data string) (*store.DB, *engine.Engine) {
	t.Helper()
	db, err := store.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, engine.New(db, engine.Options{Password: cheapPasswords})
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in different goroutines.
type syncBuffer = servertest.SyncBuffer

// tenantAdmin is a company administrator of the tenant, for seeding it through the use
// cases that take a principal.
func tenantAdmin(tenantID string) model.Principal {
	return model.Principal{TenantID: tenantID, TenantActive: true, Role: model.RoleCompanyAdmin}
}

// secretKeyEnv is an environment that gives the tests' key file to --secret-key-file.
func secretKeyEnv(t testing.TB) map[string]string {
	return map[string]string{envName(secretKeyFlag): pgtest.SecretKeyFile(t)}
}
