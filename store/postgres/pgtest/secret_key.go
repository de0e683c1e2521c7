package pgtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fieldrelay/fieldrelay/store/postgres"
)

// secretKeyFile is the content of the key file of the tests' databases: a fixed key, so
// that every Open of a test's database opens its data key.
const secretKeyFile = "ZmllbGRyZWxheSB0ZXN0IHNlY3JldCBrZXkgMDEyMzQ=\n"

// SecretKey is the key of the tests' key file (postgres.Options.SecretKey).
func SecretKey() *postgres.SecretKey {
	k, err := postgres.ParseSecretKey([]byte(secretKeyFile))
	if err != nil {
		panic(err)
	}
	return k
}

// SecretKeyFile writes the tests' key file in a temporary directory of t and returns its
// path (serve --secret-key-file).
func SecretKeyFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret.key")
	if err := WriteSecretKeyFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// WriteSecretKeyFile writes the tests' key file at path.
func WriteSecretKeyFile(path string) error {
	return os.WriteFile(path, []byte(secretKeyFile), 0o600)
}
