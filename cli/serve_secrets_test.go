package cli

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
)

const internalSecretWarning = "--internal-secret on the command line shows in ps"

// TestServeInternalSecretInArgs: --internal-secret given on the command line works and
// makes serve warn that ps shows it; FIELDRELAY_INTERNAL_SECRET does the same without the
// warning; --help says so.
func TestServeInternalSecretInArgs(t *testing.T) {
	const secret = "0123456789abcdef-metrics"
	metrics := func(t *testing.T, s *runningServe) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.base+"/metrics", nil)
		req.Header.Set("x-svc-internal", secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics with the secret: %d", res.StatusCode)
		}
	}
	t.Run("Flag", func(t *testing.T) {
		s := startServe(t, newTestApp(nil), "--data", t.TempDir(), "--plain-http", "--internal-secret", secret)
		metrics(t, s)
		if code := s.shutdown(t); code != 0 {
			t.Fatalf("exit %d", code)
		}
		log := s.stderr.String()
		if !strings.Contains(log, internalSecretWarning) || !strings.Contains(log, `"level":"WARN"`) ||
			!strings.Contains(log, "FIELDRELAY_INTERNAL_SECRET") || strings.Contains(log, secret) {
			t.Fatalf("no warning, or the secret in the log:\n%s", log)
		}
	})
	t.Run("Env", func(t *testing.T) {
		a := newTestApp(map[string]string{"FIELDRELAY_INTERNAL_SECRET": secret})
		s := startServe(t, a, "--data", t.TempDir(), "--plain-http")
		metrics(t, s)
		if code := s.shutdown(t); code != 0 {
			t.Fatalf("exit %d", code)
		}
		if log := s.stderr.String(); strings.Contains(log, internalSecretWarning) {
			t.Fatalf("a warning for the environment variable:\n%s", log)
		}
	})
	t.Run("Help", func(t *testing.T) {
		out := mustRun(t, newTestApp(nil), "", "serve", "--help")
		if !strings.Contains(out, "shows in ps") || !strings.Contains(out, "$FIELDRELAY_INTERNAL_SECRET") {
			t.Fatalf("serve --help:\n%s", out)
		}
	})
}

// TestServeCertificateRenewal: on the node's (fake) clock, the first start makes a
// certificate valid 397 days; a start 20 days before its end renews it with the same key
// and prints the new fingerprint, the old one and the key pin; the node serves the new one.
func TestServeCertificateRenewal(t *testing.T) {
	data := t.TempDir()
	clock := model.NewFakeClock(time.Date(2026, 6, 9, 10, 0, 0, 0, time.UTC))
	start := func() (*Main, *syncBuffer, *syncBuffer) {
		t.Helper()
		out, errOut := &syncBuffer{}, &syncBuffer{}
		m := &Main{Config: ServeConfig{DataDir: data, Addr: "127.0.0.1:0"},
			EngineOptions: engine.Options{Password: cheapPasswords, Clock: clock}, Stdout: out, Stderr: errOut}
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m, out, errOut
	}
	leaf := func() *tls.Certificate {
		t.Helper()
		c, err := tls.LoadX509KeyPair(filepath.Join(data, "tls", server.CertFileName), filepath.Join(data, "tls", server.KeyFileName))
		if err != nil {
			t.Fatal(err)
		}
		return &c
	}

	m, out, _ := start()
	first := leaf()
	if want := clock.Now().Add(397 * 24 * time.Hour); !first.Leaf.NotAfter.Equal(want) {
		t.Fatalf("valid until %s, want %s", first.Leaf.NotAfter, want)
	}
	oldFP, pin := server.CertFingerprint(first.Leaf.Raw), server.KeyPin(first.Leaf)
	if !strings.Contains(out.String(), "fingerprint: "+oldFP+"\n") || !strings.Contains(out.String(), pin) ||
		strings.Contains(out.String(), "renewed") {
		t.Fatalf("first banner:\n%s", out)
	}
	keyPEM, _ := os.ReadFile(filepath.Join(data, "tls", server.KeyFileName))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	clock.Set(first.Leaf.NotAfter.Add(-20 * 24 * time.Hour))
	m, out, errOut := start()
	renewed := leaf()
	newFP := server.CertFingerprint(renewed.Leaf.Raw)
	if newFP == oldFP || server.KeyPin(renewed.Leaf) != pin || !renewed.Leaf.NotAfter.Equal(clock.Now().Add(397*24*time.Hour)) {
		t.Fatalf("renewed: %s until %s", newFP, renewed.Leaf.NotAfter)
	}
	if key, _ := os.ReadFile(filepath.Join(data, "tls", server.KeyFileName)); string(key) != string(keyPEM) {
		t.Fatal("the renewal changed the key")
	}
	banner := out.String()
	if !strings.Contains(banner, "TLS certificate renewed with the same key") || !strings.Contains(banner, "(it was "+oldFP+")") ||
		!strings.Contains(banner, "fingerprint: "+newFP+"\n") || !strings.Contains(banner, pin) {
		t.Fatalf("renewal banner:\n%s", banner)
	}
	if !strings.Contains(errOut.String(), `"msg":"renewed the self-signed TLS certificate with the same key"`) {
		t.Fatalf("no renewal in the log:\n%s", errOut)
	}
	// The node serves the renewed certificate.
	conn, err := tls.Dial("tcp", strings.TrimPrefix(m.URL, "https://"), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := server.CertFingerprint(conn.ConnectionState().PeerCertificates[0].Raw); got != newFP {
		t.Fatalf("served %s, want %s", got, newFP)
	}
}

// TestServeOperatorCertificateEndsSoon: a --tls-cert within 30 days of its end is served as
// it is, never renewed nor rewritten, and every start warns.
func TestServeOperatorCertificateEndsSoon(t *testing.T) {
	clock := model.NewFakeClock(time.Date(2026, 6, 9, 10, 0, 0, 0, time.UTC))
	// A certificate made 380 days ago: 17 days left.
	own, err := server.EnsureSelfSigned(t.TempDir(), clock.Now().Add(-380*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(own.CertFile)
	errOut := &syncBuffer{}
	m := &Main{Config: ServeConfig{DataDir: t.TempDir(), Addr: "127.0.0.1:0", TLSCert: own.CertFile, TLSKey: own.KeyFile},
		EngineOptions: engine.Options{Password: cheapPasswords, Clock: clock}, Stderr: errOut}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if after, _ := os.ReadFile(own.CertFile); string(after) != string(before) {
		t.Fatal("the operator's certificate was rewritten")
	}
	if log := errOut.String(); !strings.Contains(log, "the TLS certificate ends soon") || strings.Contains(log, "renewed") {
		t.Fatalf("log:\n%s", log)
	}
}
