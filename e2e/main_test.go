package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// moduleRoot is the repository's root, seen from this package's directory, where go test
// runs its tests.
const moduleRoot = ".."

// fromRoot resolves a relative path from an environment variable against the repository's
// root, where make runs, not e2e/, where go test runs the tests.
func fromRoot(path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(moduleRoot, path)
}

// binDir holds the binary the tests drive: TestMain makes it and removes it at the end.
var binDir string

// secretKeyFile is the key file of the secrets of the tests' databases (pgtest's key),
// also in $FIELDRELAY_SECRET_KEY_FILE for every process the tests start.
var secretKeyFile string

// built is the binary, built by the first test that asks for it and shared by all.
var built = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "fieldrelay")
	return bin, goBuild(bin)
})

// TestMain gives the tests one binary for the whole run, built on first use (so a run of
// tests that all skip builds nothing), and removes it when they end. It also stops the
// central tier's PostgreSQL cluster at the end if a test started one (pgtest skips those
// tests without PostgreSQL, and fails them under CI=true).
func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "fieldrelay-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	binDir = dir
	// Every process the tests start on a --database, and every admin command with one, opens
	// its secrets with the tests' key file (the bbolt nodes ignore the variable).
	secretKeyFile = filepath.Join(dir, "secret.key")
	err = pgtest.WriteSecretKeyFile(secretKeyFile)
	if err == nil {
		err = os.Setenv("FIELDRELAY_SECRET_KEY_FILE", secretKeyFile)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	code := pgtest.Run(m)
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// binary answers the path of fieldrelay, built once per test run; under -short the test
// skips.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// goBuild builds the module's command into out as make build does (CGO_ENABLED=0,
// -trimpath; without its version stamps), with flags added to go build's (an -ldflags).
func goBuild(out string, flags ...string) error {
	args := append([]string{"build", "-trimpath", "-o", out}, flags...)
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v: %v\n%s", flags, err, b)
	}
	return nil
}
