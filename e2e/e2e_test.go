package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"github.com/fieldrelay/fieldrelay/server/servertest"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The end-to-end test takes the real binary (binary, main_test.go), bootstraps a tenant with
// the CLI, serves on 127.0.0.1 over a temp data dir and drives the API, the admin socket and
// a shutdown.

// cli runs a command of the binary and returns its stdout; it fails the test on a
// non-zero exit.
func mustRun(t *testing.T, bin, stdin string, args ...string) []byte {
	t.Helper()
	out, stderr, err := runCLI(bin, stdin, args...)
	if err != nil {
		t.Fatalf("fieldrelay %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr)
	}
	return out
}

func runCLI(bin, stdin string, args ...string) ([]byte, []byte, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	return out.Bytes(), stderr.Bytes(), err
}

// syncBuffer is an output sink that is safe to read while a process writes to it.
type syncBuffer = servertest.SyncBuffer

// freeAddr returns a loopback address with a free port.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// served is a running `fieldrelay serve`.
type served struct {
	cmd    *exec.Cmd
	base   string
	client *http.Client
	logs   *syncBuffer
	done   chan error
}

// serve starts the node and waits until /readyz answers (at most 20 s).
func serve(t *testing.T, bin, data string, tlsOn bool, extra ...string) *served {
	t.Helper()
	return serveAt(t, bin, data, freeAddr(t), tlsOn, extra...)
}

// serveAt is serve on a given address (a node restarted where its peers expect it).
func serveAt(t *testing.T, bin, data, addr string, tlsOn bool, extra ...string) *served {
	t.Helper()
	s := startAt(t, bin, data, addr, tlsOn, extra...)
	s.waitReady(t, data, tlsOn)
	return s
}

// startAt starts the node on addr without waiting for it; the test's cleanup kills it.
func startAt(t *testing.T, bin, data, addr string, tlsOn bool, extra ...string) *served {
	t.Helper()
	args := append([]string{"serve", "--data", data, "--addr", addr}, extra...)
	if !tlsOn {
		args = append(args, "--plain-http")
	}
	s := &served{cmd: exec.Command(bin, args...), logs: &syncBuffer{}, done: make(chan error, 1),
		client: &http.Client{Timeout: 10 * time.Second}}
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	s.base = "http://" + addr
	if tlsOn {
		s.base = "https://" + addr
	}
	return s
}

// waitReady waits until the node's /readyz answers 200 (at most 20 s; 60 s on Citus, make
// citus-test, where the demo tenant's first writes are two-phase commits on every node).
func (s *served) waitReady(t *testing.T, data string, tlsOn bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	if pgtest.Citus() {
		deadline = time.Now().Add(60 * time.Second)
	}
	for {
		if tlsOn && s.client.Transport == nil {
			if pem, err := os.ReadFile(filepath.Join(data, "tls", "cert.pem")); err == nil {
				pool := x509.NewCertPool()
				pool.AppendCertsFromPEM(pem)
				s.client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
			}
		}
		if !tlsOn || s.client.Transport != nil {
			if res, err := s.client.Get(s.base + "/readyz"); err == nil {
				res.Body.Close()
				if res.StatusCode == 200 {
					return
				}
			}
		}
		select {
		case err := <-s.done:
			t.Fatalf("serve exited: %v\n%s", err, s.logs)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not become ready\n%s", s.logs)
		}
	}
}

// call sends a JSON request and decodes the JSON answer.
func (s *served) call(t *testing.T, method, path string, body any, headers ...string) (int, http.Header, map[string]any) {
	t.Helper()
	req := servertest.NewRequest(t, context.Background(), method, s.base+path, body, headers...)
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: the body is not JSON: %v", method, path, err)
	}
	if out["request_id"] == nil || out["request_id"] != res.Header.Get("X-Request-Id") {
		t.Fatalf("%s %s: request_id %v vs header %q", method, path, out["request_id"], res.Header.Get("X-Request-Id"))
	}
	return res.StatusCode, res.Header, out
}

// stop sends SIGTERM and returns the exit error (nil for exit 0), waiting at most 40 s.
func (s *served) stop(t *testing.T) error {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		return err
	case <-time.After(40 * time.Second):
		t.Fatalf("serve did not stop after SIGTERM\n%s", s.logs)
		return nil
	}
}

func expect(t *testing.T, what string, status, want int, body map[string]any) {
	t.Helper()
	if status != want {
		t.Fatalf("%s: status %d, want %d: %v", what, status, want, body)
	}
}

// TestEndToEnd runs on both stores (eachStore).
func TestEndToEnd(t *testing.T) {
	bin := binary(t)
	eachStore(t, func(t *testing.T, st nodeStore) { endToEnd(t, bin, st) })
}

func endToEnd(t *testing.T, bin string, st nodeStore) {

	// Bootstrap with the CLI, no server running.
	var created struct {
		Tenant map[string]any `json:"tenant"`
		APIKey string         `json:"api_key"`
	}
	out := st.cli(t, bin, "", "tenant", "create", "--name", "Acme Rescue", "--slug", "acme",
		"--email", "ops@acme.example", "--country", "fr", "--json")
	if err := json.Unmarshal(out, &created); err != nil || created.Tenant["slug"] != "acme" ||
		!strings.HasPrefix(created.APIKey, "fr_live_") || len(created.APIKey) != 40 {
		t.Fatalf("tenant create --json: %v %s", err, out)
	}
	if created.Tenant["license_type"] != "starter" || created.Tenant["dispatch_threshold"] != 0.2 {
		t.Fatalf("tenant defaults: %v", created.Tenant)
	}
	const pw = "e2e password 123"
	for _, u := range [][2]string{{"admin@acme.example", "company_admin"}, {"sup@acme.example", "operational_supervisor"}} {
		out = st.cli(t, bin, pw+"\n", "user", "create", "--tenant", "acme", "--email", u[0],
			"--name", u[1], "--role", u[1], "--password-stdin", "--json")
		var uc struct {
			User map[string]any `json:"user"`
		}
		if err := json.Unmarshal(out, &uc); err != nil || uc.User["email"] != u[0] || uc.User["rbac_level"] != u[1] {
			t.Fatalf("user create --json: %v %s", err, out)
		}
	}

	s := st.serve(t, bin, false)
	key := []string{"x-svc-api-key", created.APIKey}

	// Login and tenant/me with both methods.
	status, _, body := s.call(t, "POST", "/v1/auth/login", map[string]string{"email": "admin@acme.example", "password": pw})
	expect(t, "login", status, 200, body)
	if body["expires_in"] != 28800.0 {
		t.Fatalf("expires_in %v", body["expires_in"])
	}
	admin := []string{"Authorization", "Bearer " + body["token"].(string)}
	status, _, body = s.call(t, "GET", "/v1/tenant/me", nil, admin...)
	expect(t, "tenant/me by JWT", status, 200, body)
	status, hdr, body := s.call(t, "GET", "/v1/tenant/me", nil, key...)
	expect(t, "tenant/me by key", status, 200, body)
	if body["slug"] != "acme" || hdr.Get("x-ratelimit-limit") != "500" {
		t.Fatalf("tenant/me: %v %v", body, hdr)
	}

	// Dispatch settings, with an idempotent replay.
	settings := map[string]any{"dispatch_mode": true, "dispatch_threshold": 0.4, "reinforcement_timeout_min": 5}
	status, _, first := s.call(t, "PATCH", "/v1/tenant/dispatch-settings", settings, append(admin, "Idempotency-Key", "e2e-1")...)
	expect(t, "dispatch-settings", status, 200, first)
	status, hdr, again := s.call(t, "PATCH", "/v1/tenant/dispatch-settings", settings, append(admin, "Idempotency-Key", "e2e-1")...)
	expect(t, "dispatch-settings replay", status, 200, again)
	if hdr.Get("Idempotent-Replayed") != "true" || again["request_id"] != first["request_id"] {
		t.Fatalf("replay: %v %v", hdr, again)
	}
	status, _, body = s.call(t, "PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_threshold": 7}, admin...)
	expect(t, "bad threshold", status, 400, body)
	if body["error"] != "validation_error" || body["field"] != "dispatch_threshold" {
		t.Fatalf("bad threshold: %v", body)
	}

	// Users through the API.
	status, _, body = s.call(t, "POST", "/v1/tenant/users", map[string]any{"email": "op@acme.example", "name": "Op",
		"role": "field_operator", "password": pw}, admin...)
	expect(t, "create user", status, 201, body)
	status, _, body = s.call(t, "GET", "/v1/tenant/users", nil, admin...)
	expect(t, "list users", status, 200, body)
	if body["count"] != 3.0 {
		t.Fatalf("users: %v", body)
	}

	// A suspended user's token dies at once. On bbolt it is suspended with the CLI, through
	// the socket. On PostgreSQL the CLI would write the database from another process, whose
	// changes reach a serving process's caches by the central tier's own means (tested by the
	// multi-process tests of central_*_test.go); here it is suspended through the API of
	// the process that serves, where it must be in force at once.
	status, _, body = s.call(t, "POST", "/v1/auth/login", map[string]string{"email": "sup@acme.example", "password": pw})
	expect(t, "supervisor login", status, 200, body)
	sup := []string{"Authorization", "Bearer " + body["token"].(string)}
	status, _, body = s.call(t, "GET", "/v1/tenant/me", nil, sup...)
	expect(t, "supervisor tenant/me", status, 200, body)
	if st.postgres() {
		var supID string
		status, _, body = s.call(t, "GET", "/v1/tenant/users", nil, admin...)
		expect(t, "list users", status, 200, body)
		for _, it := range body["data"].([]any) {
			if u := it.(map[string]any); u["email"] == "sup@acme.example" {
				supID, _ = u["id"].(string)
			}
		}
		status, _, body = s.call(t, "PATCH", "/v1/tenant/users/"+supID, map[string]any{"status": "suspended"}, admin...)
		expect(t, "suspend the supervisor", status, 200, body)
	} else {
		st.cli(t, bin, "", "user", "suspend", "sup@acme.example", "--json")
	}
	status, _, body = s.call(t, "GET", "/v1/tenant/me", nil, sup...)
	expect(t, "suspended user's token", status, 401, body)
	var tenants []map[string]any
	out = st.cli(t, bin, "", "tenant", "list", "--json")
	if err := json.Unmarshal(out, &tenants); err != nil {
		var wrapped struct {
			Tenants []map[string]any `json:"tenants"`
			Data    []map[string]any `json:"data"`
		}
		if err2 := json.Unmarshal(out, &wrapped); err2 != nil {
			t.Fatalf("tenant list --json through the socket: %v %s", err, out)
		}
		tenants = append(wrapped.Tenants, wrapped.Data...)
	}
	if len(tenants) != 1 || tenants[0]["slug"] != "acme" {
		t.Fatalf("tenant list through the socket: %s", out)
	}

	// The starter plan's 500 requests a minute, then a 429. Windows are fixed per minute
	// (docs/rules.md, HTTP), so a minute may turn during the loop: the count follows x-ratelimit-reset
	// and the 429 must come on the request after the one that left 0 remaining.
	limited, window, exhausted := false, "", false
	for i := 0; i < 1600 && !limited; i++ {
		status, hdr, body = s.call(t, "GET", "/v1/tenant/me", nil, key...)
		if reset := hdr.Get("x-ratelimit-reset"); reset != window {
			window, exhausted = reset, false
		}
		switch {
		case status == 429:
			limited = true
			if body["error"] != "rate_limited" || hdr.Get("Retry-After") == "" || !exhausted {
				t.Fatalf("429 (after exhausting the window: %t): %v %v", exhausted, body, hdr)
			}
		case exhausted:
			t.Fatalf("request %d answered %d after the window's last request", i, status)
		case hdr.Get("x-ratelimit-limit") != "500":
			t.Fatalf("starter plan limit header: %v", hdr)
		default:
			exhausted = hdr.Get("x-ratelimit-remaining") == "0"
		}
	}
	if !limited {
		t.Fatal("no 429 in three minutes' worth of windows on the starter plan")
	}

	// SIGTERM: exit 0.
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM\n%s", err, s.logs)
	}

	// HTTPS by default: a self-signed certificate in the data dir, its fingerprint printed.
	s = st.serve(t, bin, true)
	if !strings.Contains(strings.ToLower(s.logs.String()), "fingerprint") {
		t.Fatalf("no certificate fingerprint printed:\n%s", s.logs)
	}
	status, _, body = s.call(t, "GET", "/healthz", nil)
	expect(t, "healthz over TLS", status, 200, body)
	if err := s.stop(t); err != nil {
		t.Fatalf("TLS serve exited with %v\n%s", err, s.logs)
	}
}

func TestCorruptDataDir(t *testing.T) {
	bin := binary(t)
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "fieldrelay.db"), bytes.Repeat([]byte("not bolt "), 2000), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"tenant", "list", "--data", data},
		{"serve", "--data", data, "--plain-http", "--addr", freeAddr(t)},
	} {
		out, stderr, err := runCLI(bin, "", args...)
		msg := string(out) + string(stderr)
		if err == nil {
			t.Fatalf("%v: exit 0 on a corrupt data dir", args)
		}
		if strings.Contains(msg, "panic") || strings.Contains(msg, "goroutine ") {
			t.Fatalf("%v: panicked:\n%s", args, msg)
		}
		if !strings.Contains(msg, "fieldrelay") {
			t.Fatalf("%v: unclear error:\n%s", args, msg)
		}
	}
}

// demoNode is a node started with --demo and the credentials it saved.
type demoNode struct {
	*served
	APIKey string `json:"api_key"`
	Users  []struct{ Email, Password, Role string }
}

// serveDemo starts a node with --demo (and extra flags) on data and reads its saved
// credentials.
func serveDemo(t *testing.T, bin, data string, extra ...string) *demoNode {
	t.Helper()
	d := &demoNode{served: serve(t, bin, data, false, append([]string{"--demo"}, extra...)...)}
	d.readCredentials(t, data)
	return d
}

// readCredentials reads the demo credentials that serve --demo wrote into data.
func (d *demoNode) readCredentials(t *testing.T, data string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(data, "demo-credentials.json"))
	if err != nil || json.Unmarshal(raw, d) != nil || d.APIKey == "" {
		t.Fatalf("demo credentials: %v %s\n%s", err, raw, d.logs)
	}
}

// key returns the header of the demo tenant's API key.
func (d *demoNode) key() []string { return []string{"x-svc-api-key", d.APIKey} }

// login logs the demo user of role in and returns its Authorization header.
func (d *demoNode) login(t *testing.T, role string) []string {
	t.Helper()
	for _, u := range d.Users {
		if u.Role == role {
			status, _, body := d.call(t, "POST", "/v1/auth/login", map[string]any{"email": u.Email, "password": u.Password})
			expect(t, "login "+role, status, 200, body)
			return []string{"Authorization", "Bearer " + body["token"].(string)}
		}
	}
	t.Fatalf("no demo %s", role)
	return nil
}
