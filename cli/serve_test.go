package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/netguard"
	"github.com/fieldrelay/fieldrelay/server"
	"github.com/fieldrelay/fieldrelay/store"
)

// runningServe is `fieldrelay serve` running in-process.
type runningServe struct {
	base   string
	stdout *syncBuffer
	stderr *syncBuffer
	stop   context.CancelFunc
	exit   chan int
}

var listeningRE = regexp.MustCompile(`listening on (https?://\S+)`)

// startServe runs serve with args until the test stops it; it waits for the address line.
func startServe(t *testing.T, a *app, args ...string) *runningServe {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &runningServe{stdout: &syncBuffer{}, stderr: &syncBuffer{}, stop: cancel, exit: make(chan int, 1)}
	go func() {
		s.exit <- a.execute(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), strings.NewReader(""), s.stdout, s.stderr)
	}()
	t.Cleanup(func() { s.shutdown(t) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := listeningRE.FindStringSubmatch(s.stdout.String()); m != nil {
			s.base = m[1]
			return s
		}
		select {
		case code := <-s.exit:
			s.exit <- code
			t.Fatalf("serve exited with %d\n%s\n%s", code, s.stdout, s.stderr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start\n%s\n%s", s.stdout, s.stderr)
		}
	}
}

// shutdown stops serve as SIGINT would and returns its exit code.
func (s *runningServe) shutdown(t *testing.T) int {
	t.Helper()
	s.stop()
	select {
	case code := <-s.exit:
		s.exit <- code
		return code
	case <-time.After(35 * time.Second):
		t.Fatal("serve did not stop")
		return -1
	}
}

func TestServeDemo(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	s := startServe(t, a, "--data", data, "--plain-http", "--demo")
	out := s.stdout.String()

	// The credentials are saved with mode 0600 and printed.
	credPath := filepath.Join(data, DemoCredentialsFile)
	fi, err := os.Stat(credPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file: %v %v", fi, err)
	}
	var creds demoCredentials
	raw, _ := os.ReadFile(credPath)
	if err := json.Unmarshal(raw, &creds); err != nil || !engine.LooksLikeAPIKey(creds.APIKey) || len(creds.Users) != len(model.Roles) {
		t.Fatalf("credentials: %v %s", err, raw)
	}
	for _, u := range creds.Users {
		if len(u.Password) < 12 || !strings.HasSuffix(u.Email, "@demo.fieldrelay.local") || !strings.Contains(out, u.Password) {
			t.Fatalf("demo user %+v (printed: %t)", u, strings.Contains(out, u.Password))
		}
	}
	if !strings.Contains(out, "admin@demo.fieldrelay.local") || !strings.Contains(out, "operator@demo.fieldrelay.local") {
		t.Fatalf("emails not printed:\n%s", out)
	}

	// The console's address is printed and serves the console.
	if !strings.Contains(out, "Console: "+s.base+"/console/") {
		t.Fatalf("no console address in\n%s", out)
	}
	if res, err := http.Get(s.base + "/console/"); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /console/: %v %v", res, err)
	} else {
		res.Body.Close()
	}

	// The printed curl works as printed.
	curl := "curl " + s.base + "/v1/tenant/me -H \"x-svc-api-key: " + creds.APIKey + "\""
	if !strings.Contains(out, curl) {
		t.Fatalf("no %q in\n%s", curl, out)
	}
	req, _ := http.NewRequest("GET", s.base+"/v1/tenant/me", nil)
	req.Header.Set("x-svc-api-key", creds.APIKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var me model.Tenant
	_ = json.NewDecoder(res.Body).Decode(&me)
	res.Body.Close()
	if res.StatusCode != 200 || me.Slug != "demo" || me.LicenseType != engine.PlanCore || me.Country != "FR" {
		t.Fatalf("GET /v1/tenant/me: %d %+v", res.StatusCode, me)
	}

	// The printed /metrics curl names the secret that opens /metrics.
	m := regexp.MustCompile(`curl \S+/metrics -H "x-svc-internal: (\S+)"`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no /metrics curl in\n%s", out)
	}
	req, _ = http.NewRequest("GET", s.base+"/metrics", nil)
	req.Header.Set("x-svc-internal", m[1])
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(metrics), "fieldrelay_") {
		t.Fatalf("GET /metrics with the printed secret: %d %.200s", res.StatusCode, metrics)
	}

	// The printed event curl works as printed too, and its event lands in the lyon zone.
	if !strings.Contains(out, shellQuote(demoEventBody)) {
		t.Fatalf("no event curl in\n%s", out)
	}
	req, _ = http.NewRequest("POST", s.base+"/v1/events", strings.NewReader(demoEventBody))
	req.Header.Set("x-svc-api-key", creds.APIKey)
	req.Header.Set("Content-Type", "application/json")
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	var accepted model.EventAccepted
	_ = json.NewDecoder(res.Body).Decode(&accepted)
	res.Body.Close()
	if res.StatusCode != 201 || accepted.EventID == "" {
		t.Fatalf("POST /v1/events: %d %+v", res.StatusCode, accepted)
	}
	req, _ = http.NewRequest("GET", s.base+"/v1/events/"+accepted.EventID, nil)
	req.Header.Set("x-svc-api-key", creds.APIKey)
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	var ev model.Event
	_ = json.NewDecoder(res.Body).Decode(&ev)
	res.Body.Close()
	if ev.ZoneCode == nil || *ev.ZoneCode != "lyon" || ev.Severity != "critical" {
		t.Fatalf("demo event: %+v", ev)
	}

	// Admin commands reach the running server through its socket.
	if fi, err := os.Stat(adminSocket(data)); err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("admin socket: %v %v", fi, err)
	}
	list := runJSON[admin.TenantListResult](t, a, "", "tenant", "list", "--data", data)
	if list.Count != 1 || list.Data[0].Slug != "demo" {
		t.Fatalf("tenant list while serving: %+v", list)
	}
	// No secret reaches the log.
	if logs := s.stderr.String(); strings.Contains(logs, creds.APIKey) || strings.Contains(logs, creds.Users[0].Password) {
		t.Fatalf("a secret is in the log:\n%s", logs)
	}

	if code := s.shutdown(t); code != 0 {
		t.Fatalf("serve exited with %d after the signal\n%s", code, s.stderr)
	}
	if _, err := os.Stat(adminSocket(data)); !os.IsNotExist(err) {
		t.Fatalf("the admin socket outlived the server: %v", err)
	}

	// The demo data: two zones, three teams, a member linked to the field operator.
	db, _ := openEngine(t, data)
	err = db.View(context.Background(), func(tx model.Tx) error {
		tn, err := tx.TenantBySlug("demo")
		if err != nil {
			return err
		}
		zones, _ := tx.Zones(tn.ID)
		teams, _ := tx.Teams(tn.ID)
		op, err := tx.UserAccountByEmail("operator@demo.fieldrelay.local")
		if err != nil {
			return err
		}
		linked := false
		for _, tm := range teams {
			for _, m := range tm.Members {
				linked = linked || m.UserID == op.ID
				if m.Lat == nil || m.Lng == nil {
					t.Errorf("member %s has no position", m.Name)
				}
			}
		}
		if len(zones) != 2 || len(teams) != 3 || !linked || op.RBACLevel != model.RoleFieldOperator {
			t.Fatalf("demo data: %d zones, %d teams, operator linked %t", len(zones), len(teams), linked)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	// Again on the same data: nothing new, the same credentials printed.
	s = startServe(t, a, "--data", data, "--plain-http", "--demo")
	if !strings.Contains(s.stdout.String(), creds.APIKey) {
		t.Fatalf("the second --demo run does not print the saved credentials:\n%s", s.stdout)
	}
	if list := runJSON[admin.TenantListResult](t, a, "", "tenant", "list", "--data", data); list.Count != 1 {
		t.Fatalf("the second --demo run created data: %+v", list)
	}
}

func TestServeTLS(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	s := startServe(t, a, "--data", data)
	certFile := filepath.Join(data, "tls", server.CertFileName)
	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(certFile, filepath.Join(data, "tls", server.KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	fp := server.CertFingerprint(cert.Leaf.Raw)
	if !strings.HasPrefix(s.base, "https://127.0.0.1:") || !strings.Contains(s.stdout.String(), "fingerprint: "+fp) {
		t.Fatalf("base %s, output:\n%s", s.base, s.stdout)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 5 * time.Second}
	res, err := client.Get(s.base + "/healthz")
	if err != nil {
		t.Fatalf("HTTPS with the self-signed certificate as the root: %v", err)
	}
	res.Body.Close()
	if code := s.shutdown(t); code != 0 {
		t.Fatalf("exit %d", code)
	}

	// The certificate is reused.
	s = startServe(t, a, "--data", data)
	if !strings.Contains(s.stdout.String(), "fingerprint: "+fp) {
		t.Fatalf("the certificate changed on restart:\n%s", s.stdout)
	}
}

func TestServeErrors(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	for name, args := range map[string][]string{
		"RetrySchedule":  {"--webhook-retry-schedule", "5s,-1m"},
		"SMSGateway":     {"--sms-gateway", "smtp://x"},
		"CertWithoutKey": {"--tls-cert", "cert.pem"},
		"PlainAndCert":   {"--plain-http", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
		"ShortSecret":    {"--internal-secret", "short"},
		"Addr":           {"--addr", "nowhere"},
		"MaxConns":       {"--max-conns=-1"},
		"MaxConnsPerIP":  {"--max-conns-per-ip=-1"},
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, a, "", append([]string{"serve", "--data", data}, args...)...)
			if r.code != 1 || !strings.HasPrefix(r.stderr, "error: --") {
				t.Fatalf("got %d %q", r.code, r.stderr)
			}
		})
	}
	t.Run("Locked", func(t *testing.T) {
		held := t.TempDir()
		db, err := store.Open(held, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		r := run(t, a, "", "serve", "--data", held, "--plain-http", "--addr", "127.0.0.1:0")
		if r.code != 1 || !strings.Contains(r.stderr, "in use by another process") {
			t.Fatalf("got %d %q", r.code, r.stderr)
		}
	})
}

func TestServeConfig(t *testing.T) {
	f := serveFlags{ServeConfig: ServeConfig{DataDir: "d", Addr: "127.0.0.1:1"},
		retrySchedule: DefaultWebhookRetrySchedule, smsGateway: "https://sms.example/send"}
	c, err := f.config()
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	if len(c.WebhookRetrySchedule) != len(want) || c.SMSGateway == nil || c.SMSGateway.Base.Host != "sms.example" {
		t.Fatalf("config: %+v", c)
	}
	for i := range want {
		if c.WebhookRetrySchedule[i] != want[i] {
			t.Fatalf("schedule %v", c.WebhookRetrySchedule)
		}
	}
	if c.OutboxLease != engine.DefaultAttemptLease {
		t.Fatalf("outbox lease %s, want the default", c.OutboxLease)
	}
	f.OutboxLease = time.Second
	if _, err := f.config(); !model.IsKind(err, model.KindValidation) {
		t.Fatalf("--outbox-lease 1s: %v, want invalid", err)
	}
	f.OutboxLease = 0
	f.smsGateway = "none"
	if c, err = f.config(); err != nil || c.SMSGateway != nil {
		t.Fatalf("none: %+v %v", c, err)
	}
	if p := c.WebhookPolicy(); p != (netguard.AddressPolicy{}) {
		t.Fatalf("default policy %+v, want only public addresses", p)
	}
	f.AllowLoopbackWebhooks, f.AllowLinkLocalWebhooks = true, true
	if c, err = f.config(); err != nil || c.WebhookPolicy() != (netguard.AddressPolicy{AllowLoopback: true, AllowLinkLocal: true}) {
		t.Fatalf("policy %+v %v", c.WebhookPolicy(), err)
	}
}

// TestServeLinkLocalWebhooks: FIELDRELAY_ALLOW_LINK_LOCAL_WEBHOOKS (the environment form of
// --allow-link-local-webhooks) opens link-local webhook destinations and nothing more;
// --allow-loopback-webhooks alone opens none of them.
func TestServeLinkLocalWebhooks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		args      []string
		linkLocal int
	}{
		{"LoopbackFlagOnly", nil, []string{"--allow-loopback-webhooks"}, http.StatusBadRequest},
		{"LinkLocalEnv", map[string]string{"FIELDRELAY_ALLOW_LINK_LOCAL_WEBHOOKS": "true"}, nil, http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			s := startServe(t, newTestApp(tc.env), append([]string{"--data", data, "--plain-http", "--demo"}, tc.args...)...)
			var creds demoCredentials
			raw, _ := os.ReadFile(filepath.Join(data, DemoCredentialsFile))
			if err := json.Unmarshal(raw, &creds); err != nil {
				t.Fatal(err)
			}
			create := func(url string) int {
				t.Helper()
				req, _ := http.NewRequest("POST", s.base+"/v1/webhooks", strings.NewReader(`{"url":"`+url+`"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("x-svc-api-key", creds.APIKey)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				return res.StatusCode
			}
			if got := create("https://169.254.10.20/hook"); got != tc.linkLocal {
				t.Errorf("a link-local webhook: %d, want %d", got, tc.linkLocal)
			}
			if got := create("https://[fe80::1]/hook"); got != tc.linkLocal {
				t.Errorf("an IPv6 link-local webhook: %d, want %d", got, tc.linkLocal)
			}
			if got := create("https://169.254.169.254/latest/meta-data/"); got != http.StatusBadRequest {
				t.Errorf("the metadata address: %d, want 400", got)
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"data/tls/cert.pem": "data/tls/cert.pem", "my data/c.pem": "'my data/c.pem'",
		`{"a":"b"}`: `'{"a":"b"}'`, "it's": `'it'\''s'`} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
