package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// The --database wiring on a real PostgreSQL (pgtest starts one for this test binary and
// skips these tests where PostgreSQL is not installed, failing them under CI=true).

func TestMain(m *testing.M) { pgtest.Main(m) }

// withPassword is u with a password in its user information: the test cluster trusts
// loopback connections, so the password is sent where asked and never needed, and the
// tests can look for it in what is printed.
func withPassword(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "hunter2-s3cret")
	return u.String()
}

// TestServeDatabasePostgres: two serve processes on one PostgreSQL database; a tenant made
// by `tenant create --database` while they serve; an event posted to one is read through
// the other; the password of the URL is printed nowhere.
func TestServeDatabasePostgres(t *testing.T) {
	db := withPassword(t, pgtest.URL(t))
	a := newTestApp(secretKeyEnv(t))
	dir := t.TempDir()
	n1 := startServe(t, a, "--data", filepath.Join(dir, "node-1"), "--database", db, "--plain-http")
	n2 := startServe(t, a, "--data", filepath.Join(dir, "node-2"), "--database", db, "--plain-http")
	for _, n := range []*runningServe{n1, n2} {
		res, err := http.Get(n.base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s/healthz: %d", n.base, res.StatusCode)
		}
		if !strings.Contains(n.stdout.String(), ", database "+redactURL(db)+")\n") {
			t.Fatalf("banner: %s", n.stdout)
		}
	}

	r := run(t, a, "", "tenant", "create", "--database", db, "--name", "Acme", "--slug", "acme",
		"--email", "ops@acme.example", "--country", "FR", "--json")
	var raw map[string]json.RawMessage
	if r.code != 0 || r.stderr != "" || json.Unmarshal([]byte(r.stdout), &raw) != nil || len(raw) != 2 ||
		raw["tenant"] == nil || raw["api_key"] == nil {
		t.Fatalf("tenant create --database --json: %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	var created model.CreatedTenant
	_ = json.Unmarshal([]byte(r.stdout), &created)

	body := `{"type":"CARDIAC_ARREST","priority":"critical","vertical":"healthcare","idempotency_key":"pg-1","payload":{"lat":45.764,"lng":4.8357}}`
	var ev model.Event
	if st := call(t, http.MethodPost, n1.base+"/v1/events", created.APIKey, body, &ev); st != http.StatusCreated || ev.ID == "" {
		t.Fatalf("POST /v1/events on node-1: %d %+v", st, ev)
	}
	var got model.Event
	if st := call(t, http.MethodGet, n2.base+"/v1/events/"+ev.ID, created.APIKey, "", &got); st != http.StatusOK || got.ID != ev.ID {
		t.Fatalf("GET /v1/events/%s on node-2: %d %+v", ev.ID, st, got)
	}
	list := mustRun(t, a, "", "tenant", "list", "--database", db)
	if !strings.Contains(list, "acme") {
		t.Fatalf("tenant list --database: %s", list)
	}

	for _, n := range []*runningServe{n1, n2} {
		if code := n.shutdown(t); code != 0 {
			t.Fatalf("serve exited with %d\n%s", code, n.stderr)
		}
	}
	all := n1.stdout.String() + n1.stderr.String() + n2.stdout.String() + n2.stderr.String() + r.stdout + list
	if strings.Contains(all, "hunter2") {
		t.Fatalf("the password is in the output:\n%s", all)
	}
}

// TestDatabaseUnreachable: a URL where no PostgreSQL answers fails an admin command at once,
// saying which database (without its password) and why; serve waits for it instead
// (docs/decisions/0221-serve-before-database.md): /healthz 200, /readyz and the rest 503
// with Retry-After and the reason, never the password, until it is stopped.
func TestDatabaseUnreachable(t *testing.T) {
	a := newTestApp(secretKeyEnv(t))
	db := "postgres://fieldrelay:hunter2-s3cret@127.0.0.1:1/central?sslmode=disable&connect_timeout=5"
	r := run(t, a, "", "tenant", "list", "--database", db)
	if r.code != 1 || !strings.HasPrefix(r.stderr, "error: cannot open the database postgres://fieldrelay:xxxxx@127.0.0.1:1/central") ||
		strings.Contains(r.stderr+r.stdout, "hunter2") {
		t.Fatalf("tenant list on a closed port: %d %q %q", r.code, r.stdout, r.stderr)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	ctx, stop := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- a.execute(ctx, []string{"serve", "--data", t.TempDir(), "--plain-http", "--addr", addr, "--database", db},
			strings.NewReader(""), &stdout, &stderr)
	}()
	var health, ready *http.Response
	deadline := time.Now().Add(10 * time.Second)
	for health == nil {
		if time.Now().After(deadline) {
			t.Fatalf("serve does not answer /healthz while it waits for its database\n%s", stderr.String())
		}
		health, _ = http.Get("http://" + addr + "/healthz")
		time.Sleep(20 * time.Millisecond)
	}
	_ = health.Body.Close()
	if ready, err = http.Get("http://" + addr + "/readyz"); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(ready.Body)
	_ = ready.Body.Close()
	if health.StatusCode != 200 || ready.StatusCode != 503 || ready.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(body), `"error":"unavailable"`) ||
		!strings.Contains(string(body), "cannot open the database postgres://fieldrelay:xxxxx@127.0.0.1:1/central") {
		t.Fatalf("while waiting for the database: /healthz %d, /readyz %d %v %s", health.StatusCode, ready.StatusCode, ready.Header, body)
	}
	stop()
	select {
	case code := <-exit:
		if code != 1 || !strings.Contains(stderr.String(), "stopped while waiting for the database") {
			t.Fatalf("serve stopped while waiting: %d %q", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop while waiting for its database")
	}
	if all := stdout.String() + stderr.String() + string(body); strings.Contains(all, "hunter2") {
		t.Fatalf("the password is in the output:\n%s", all)
	}
}

// call sends one API request with an API key and decodes a JSON answer into out.
func call(t *testing.T, method, u, key, body string, out any) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-svc-api-key", key)
	req.Header.Set("content-type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, u, res.StatusCode, b)
		}
	}
	return res.StatusCode
}
