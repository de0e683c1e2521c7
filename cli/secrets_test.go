package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// TestSecretKeyFileRequired: serve and the admin commands with --database refuse to start
// without --secret-key-file, and say which flag; a bbolt node refuses the flag.
func TestSecretKeyFileRequired(t *testing.T) {
	a := newTestApp(nil)
	db := "postgres://fieldrelay@127.0.0.1:1/central?sslmode=disable"
	for _, args := range [][]string{
		{"serve", "--data", t.TempDir(), "--plain-http", "--addr", "127.0.0.1:0", "--database", db},
		{"tenant", "list", "--database", db},
	} {
		r := run(t, a, "", args...)
		if r.code != 1 || !strings.Contains(r.stderr, "--secret-key-file FILE is required with --database") ||
			!strings.Contains(r.stderr, "FIELDRELAY_SECRET_KEY_FILE") {
			t.Errorf("%v: %d %q %q", args, r.code, r.stdout, r.stderr)
		}
	}
	r := run(t, a, "", "serve", "--data", t.TempDir(), "--plain-http", "--addr", "127.0.0.1:0", "--secret-key-file", pgtest.SecretKeyFile(t))
	if r.code != 1 || !strings.Contains(r.stderr, "--secret-key-file goes with --database") {
		t.Errorf("serve on bbolt with a key file: %d %q %q", r.code, r.stdout, r.stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.key")
	_ = os.WriteFile(bad, []byte("not a key\n"), 0o600)
	r = run(t, a, "", "tenant", "list", "--database", db, "--secret-key-file", bad)
	if r.code != 1 || !strings.Contains(r.stderr, "--secret-key-file: "+bad+": a secret key file holds the base64 of 32 random bytes") {
		t.Errorf("a malformed key file: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestSecretsKeygenRotate: keygen writes a key file (0600, never over another); a database
// refuses a key that is not its own, naming the flag; rotate moves it to a new key file,
// after which the old one is refused and the new one serves, with the same secrets.
func TestSecretsKeygenRotate(t *testing.T) {
	a := newTestApp(nil)
	dir := t.TempDir()
	oldFile, newFile := filepath.Join(dir, "old.key"), filepath.Join(dir, "new.key")
	for _, f := range []string{oldFile, newFile} {
		if out := mustRun(t, a, "", "secrets", "keygen", f); !strings.HasPrefix(out, "wrote the key ") {
			t.Fatalf("keygen: %q", out)
		}
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, st.Mode(), err)
		}
	}
	if r := run(t, a, "", "secrets", "keygen", oldFile); r.code != 1 || !strings.Contains(r.stderr, "never overwritten") {
		t.Fatalf("keygen over a key file: %d %q", r.code, r.stderr)
	}
	oldKey, _ := postgres.ReadSecretKeyFile(oldFile)
	newKey, _ := postgres.ReadSecretKeyFile(newFile)

	db := pgtest.URL(t)
	create := mustRun(t, a, "", "tenant", "create", "--database", db, "--secret-key-file", oldFile, "--name", "Acme", "--slug", "acme",
		"--email", "ops@acme.example", "--country", "FR")
	if !strings.Contains(create, "acme") {
		t.Fatalf("tenant create: %s", create)
	}
	// A serve with another key ends at once (it does not wait) and names the flag.
	r := run(t, a, "", "serve", "--data", t.TempDir(), "--plain-http", "--addr", "127.0.0.1:0", "--database", db, "--secret-key-file", newFile)
	if r.code != 1 || !strings.Contains(r.stderr, "--secret-key-file: the database's secrets are encrypted under the key "+oldKey.ID()) ||
		!strings.Contains(r.stderr, newKey.ID()) {
		t.Fatalf("serve with another key: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := run(t, a, "", "secrets", "rotate", "--database", db, "--old-key-file", newFile, "--new-key-file", oldFile); r.code != 1 ||
		!strings.Contains(r.stderr, "--old-key-file: ") {
		t.Fatalf("rotate from the wrong key: %d %q", r.code, r.stderr)
	}
	out := mustRun(t, a, "", "secrets", "rotate", "--database", db, "--old-key-file", oldFile, "--new-key-file", newFile)
	if want := "the secrets are encrypted under the key " + newKey.ID() + " (was " + oldKey.ID() + ")\n"; out != want {
		t.Fatalf("rotate: %q, want %q", out, want)
	}
	if r := run(t, a, "", "tenant", "list", "--database", db, "--secret-key-file", oldFile); r.code != 1 || !strings.Contains(r.stderr, "--secret-key-file: ") {
		t.Fatalf("the old key after rotation: %d %q", r.code, r.stderr)
	}
	if list := mustRun(t, a, "", "tenant", "list", "--database", db, "--secret-key-file", newFile); !strings.Contains(list, "acme") {
		t.Fatalf("tenant list with the new key: %s", list)
	}
	n := startServe(t, a, "--data", t.TempDir(), "--database", db, "--plain-http", "--secret-key-file", newFile)
	if code := n.shutdown(t); code != 0 {
		t.Fatalf("serve with the new key exited %d\n%s", code, n.stderr)
	}
}
