package server_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
	"github.com/fieldrelay/fieldrelay/server"
	"github.com/fieldrelay/fieldrelay/store/storetest"
)

// TLS as a client meets it on the node's real listener (srv.Serve with LoadTLSConfig's
// configuration): docs/decisions/0134-tls-versions-ciphers.md.

// cbcSuites are the TLS 1.2 CBC suites Go still implements (SHA-1 and SHA-256 MACs).
var cbcSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
	tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_RSA_WITH_AES_256_CBC_SHA, tls.TLS_RSA_WITH_AES_128_CBC_SHA256,
	tls.TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA, tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA,
}

// tlsCase is a client's offer and whether the node takes it.
type tlsCase struct {
	name     string
	min, max uint16
	suites   []uint16
	ok       bool
	version  uint16 // the version agreed when ok
	suite    uint16 // the suite agreed when ok and TLS 1.2
}

func TestTLS_VersionsAndSuites(t *testing.T) {
	t.Run("ECDSA", func(t *testing.T) {
		e := newEdgeNode(t, true) // the self-signed ECDSA certificate
		checkTLSCases(t, e.addr, e.tls, []tlsCase{
			{name: "TLS13", min: tls.VersionTLS13, max: tls.VersionTLS13, ok: true, version: tls.VersionTLS13},
			{name: "Default", ok: true, version: tls.VersionTLS13},
			{name: "TLS12_ECDHE_ECDSA_AES128GCM", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
				ok: true, version: tls.VersionTLS12, suite: tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
			{name: "TLS12_ECDHE_ECDSA_AES256GCM", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384},
				ok: true, version: tls.VersionTLS12, suite: tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384},
			{name: "TLS12_ECDHE_ECDSA_CHACHA20", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
				ok: true, version: tls.VersionTLS12, suite: tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
			{name: "TLS12_CBC", max: tls.VersionTLS12, suites: cbcSuites},
			{name: "TLS11", max: tls.VersionTLS11},
		})
	})
	t.Run("RSA", func(t *testing.T) {
		// An operator's RSA certificate (--tls-cert) gets the ECDHE_RSA AEAD suites, and
		// neither CBC nor RSA key exchange (no forward secrecy).
		certFile, keyFile, pool := rsaCertificate(t)
		cfg, _, err := server.LoadTLSConfig(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		addr := serveTLS(t, cfg)
		checkTLSCases(t, addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}, []tlsCase{
			{name: "TLS13", min: tls.VersionTLS13, ok: true, version: tls.VersionTLS13},
			{name: "TLS12_ECDHE_RSA_AES128GCM", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
				ok: true, version: tls.VersionTLS12, suite: tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
			{name: "TLS12_ECDHE_RSA_AES256GCM", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384},
				ok: true, version: tls.VersionTLS12, suite: tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384},
			{name: "TLS12_ECDHE_RSA_CHACHA20", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256},
				ok: true, version: tls.VersionTLS12, suite: tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256},
			{name: "TLS12_CBC", max: tls.VersionTLS12, suites: cbcSuites},
			{name: "TLS12_RSA_KEX_GCM", max: tls.VersionTLS12, suites: []uint16{tls.TLS_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_256_GCM_SHA384}},
		})
	})
}

// checkTLSCases runs one handshake per case against addr with the base client config.
func checkTLSCases(t *testing.T, addr string, base *tls.Config, cases []tlsCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base.Clone()
			cfg.MinVersion, cfg.MaxVersion, cfg.CipherSuites = c.min, c.max, c.suites
			if c.max != 0 && c.max < tls.VersionTLS12 {
				cfg.MinVersion = c.max
			}
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
			if !c.ok {
				if err == nil {
					st := conn.ConnectionState()
					conn.Close()
					t.Fatalf("accepted: %s %s", tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite))
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			defer conn.Close()
			st := conn.ConnectionState()
			if st.Version != c.version || (c.suite != 0 && st.CipherSuite != c.suite) {
				t.Fatalf("agreed %s %s", tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite))
			}
		})
	}
}

// TestTLS_Headers: over TLS every answer carries Strict-Transport-Security and nosniff, an
// answer below the router nosniff too; over plain HTTP there is no Strict-Transport-Security.
func TestTLS_Headers(t *testing.T) {
	for _, withTLS := range []bool{true, false} {
		e := newEdgeNode(t, withTLS)
		for _, path := range []string{"/healthz", "/v1/events", "/v1/nothing-here", "/console/"} {
			res, err := e.client.Get(e.url + path)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			wantHSTS := ""
			if withTLS {
				wantHSTS = "max-age=31536000"
			}
			if res.Header.Get("Strict-Transport-Security") != wantHSTS || res.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("TLS %v, GET %s: %d, Strict-Transport-Security %q, X-Content-Type-Options %q", withTLS, path,
					res.StatusCode, res.Header.Get("Strict-Transport-Security"), res.Header.Get("X-Content-Type-Options"))
			}
		}
		answers := exchange(t, e.dial(t), "GET /v1/events/%zz HTTP/1.1\r\nHost: node\r\n\r\n")
		if len(answers) != 1 || answers[0].header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("TLS %v, below the router: %+v", withTLS, answers)
		}
	}
}

// serveTLS serves a node on 127.0.0.1 with cfg through srv.Serve, as serve does, and
// returns its address.
func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	eng := engine.New(storetest.MustOpenDB(t), engine.Options{Clock: model.NewFakeClock(modeltest.Epoch),
		Password: cheapPasswords, Logger: log})
	srv, err := server.New(context.Background(), eng, server.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer(ln.Addr().String())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(hs, ln, cfg) }()
	t.Cleanup(func() {
		_ = hs.Close()
		if err := <-done; err != http.ErrServerClosed {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// rsaCertificate writes a self-signed RSA certificate for 127.0.0.1, as an operator's
// --tls-cert would be, and returns its files and a pool that trusts it.
func rsaCertificate(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "operator"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "node.crt"), filepath.Join(dir, "node.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(leaf)
	return certFile, keyFile, pool
}
