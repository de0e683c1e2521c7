package server_test

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// toolsModule is the module that pins the tests' tools (testdata/tools/go.mod): oapi-codegen
// and the runtime package of the code it generates, kept out of the main module so that
// neither reaches its go.mod or the binary.
const toolsModule = "../testdata/tools"

// TestOpenAPI_GeneratedClient generates a Go client from the document the node serves with
// oapi-codegen (the version testdata/tools/go.mod pins, run by `go tool`), as a client of the
// API would, and holds it to two things: no float32 anywhere (a number documented without
// `format: double` becomes one, and a latitude of 52.5200066 goes out as 52.520008), and code
// that compiles (go vet, in a module with the tools module's pinned dependencies).
//
// The tool is built from the Go module proxy the first time (then from the module and build
// caches): without a network the test is skipped, saying so, except under CI=true, where it
// fails.
func TestOpenAPI_GeneratedClient(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		skipOrFail(t, "the go command is not on PATH: %v", err)
	}
	tools, err := filepath.Abs(toolsModule)
	if err != nil {
		t.Fatal(err)
	}
	run := func(dir string, args ...string) ([]byte, error) {
		cmd := exec.Command(goCmd, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
		return cmd.CombinedOutput()
	}
	if out, err := run(tools, "tool", "oapi-codegen", "-version"); err != nil {
		goFailed(t, "go tool oapi-codegen -version in testdata/tools", out, err)
	}

	n := newNode(t)
	doc := callRaw(t, n, "GET", "/v1/openapi.json", nil)
	if doc.status != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d", doc.status)
	}
	dir := t.TempDir()
	client := filepath.Join(dir, "client")
	gen := filepath.Join(client, "client.gen.go")
	config := "package: apiclient\ngenerate:\n  models: true\n  client: true\noutput: " + gen + "\n"
	for name, data := range map[string][]byte{"openapi.json": doc.raw, "oapi-codegen.yaml": []byte(config)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(client, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := run(tools, "tool", "oapi-codegen", "-config", filepath.Join(dir, "oapi-codegen.yaml"), filepath.Join(dir, "openapi.json"))
	if err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, out)
	}
	if len(bytes.TrimSpace(out)) > 0 {
		t.Logf("oapi-codegen says:\n%s", out)
	}
	code, err := os.ReadFile(gen)
	if err != nil {
		t.Fatal(err)
	}
	if lines := float32Lines(code); len(lines) > 0 {
		t.Errorf("the generated client has %d float32 (a number of docs/openapi.yaml without format: double):\n%s",
			len(lines), strings.Join(lines, "\n"))
	}
	// A sanity check of the reading: the coordinates are there, as float64.
	if !bytes.Contains(code, []byte("type Latitude = float64")) {
		t.Errorf("the generated client has no `type Latitude = float64`: was the document read?")
	}

	// The generated code compiles against the pinned runtime package.
	mod, err := os.ReadFile(filepath.Join(tools, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod = regexp.MustCompile(`(?m)^module .*$`).ReplaceAll(mod, []byte("module apiclient"))
	sum, err := os.ReadFile(filepath.Join(tools, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": mod, "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(client, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := run(client, "vet", "."); err != nil {
		goFailed(t, "go vet of the generated client", out, err)
	}
}

// float32Lines returns the lines of code that name float32, numbered.
func float32Lines(code []byte) []string {
	var out []string
	for i, l := range strings.Split(string(code), "\n") {
		if strings.Contains(l, "float32") {
			out = append(out, strings.TrimSpace(l)+"  (line "+strconv.Itoa(i+1)+")")
		}
	}
	return out
}

// offline reports whether the go command's output says that a module could not be
// fetched: no network, no proxy.
func offline(out []byte) bool {
	for _, s := range []string{"dial tcp", "no such host", "connection refused", "network is unreachable",
		"i/o timeout", "TLS handshake timeout", "module lookup disabled", "GOPROXY=off", "proxyconnect", "server misbehaving", "temporary failure in name resolution"} {
		if bytes.Contains(bytes.ToLower(out), bytes.ToLower([]byte(s))) {
			return true
		}
	}
	return false
}

// goFailed ends the test after a go command failed: a skip when it could not fetch a
// module (but under CI=true), else a failure.
func goFailed(t *testing.T, what string, out []byte, err error) {
	t.Helper()
	if offline(out) {
		skipOrFail(t, "%s: a module cannot be fetched here (no Go module proxy?): %v\n%s", what, err, out)
	}
	t.Fatalf("%s: %v\n%s", what, err, out)
}

// skipOrFail skips the test, saying why, or fails it under CI=true.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format+" (CI=true fails instead)", args...)
}
