package server

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEnsureSelfSigned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	now := time.Now()
	s, err := EnsureSelfSigned(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Created || s.CertFile != filepath.Join(dir, CertFileName) || s.KeyFile != filepath.Join(dir, KeyFileName) {
		t.Fatalf("first call: %+v", s)
	}
	if fi, err := os.Stat(s.KeyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf := cert.Leaf
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Fatalf("key type %T", leaf.PublicKey)
	}
	ips := map[string]bool{}
	for _, ip := range leaf.IPAddresses {
		ips[ip.String()] = true
	}
	host, _ := os.Hostname()
	if !ips["127.0.0.1"] || !ips["::1"] || !strings.Contains(strings.Join(leaf.DNSNames, ","), "localhost") ||
		(host != "" && leaf.VerifyHostname(host) != nil) {
		t.Fatalf("SANs: %v %v (hostname %q)", leaf.IPAddresses, leaf.DNSNames, host)
	}
	sum := sha256.Sum256(leaf.Raw)
	if strings.ReplaceAll(s.Fingerprint, ":", "") != strings.ToUpper(hex.EncodeToString(sum[:])) || len(s.Fingerprint) != 95 {
		t.Fatalf("fingerprint %q", s.Fingerprint)
	}

	t.Run("Reused", func(t *testing.T) {
		again, err := EnsureSelfSigned(dir, now.Add(time.Hour))
		if err != nil || again.Created || again.Renewed || again.Fingerprint != s.Fingerprint {
			t.Fatalf("second call: %+v %v", again, err)
		}
	})
	t.Run("ExpiredRenewed", func(t *testing.T) {
		later, err := EnsureSelfSigned(dir, now.Add(selfSignedValidity+time.Hour))
		if err != nil || later.Created || !later.Renewed || later.Fingerprint == s.Fingerprint || later.KeyPin != s.KeyPin {
			t.Fatalf("expired: %+v %v", later, err)
		}
	})
	t.Run("ErrHalfPair", func(t *testing.T) {
		half := t.TempDir()
		if err := os.WriteFile(filepath.Join(half, KeyFileName), []byte("a key"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := EnsureSelfSigned(half, now); err == nil {
			t.Fatal("a lone key.pem was overwritten")
		}
		if b, _ := os.ReadFile(filepath.Join(half, KeyFileName)); string(b) != "a key" {
			t.Fatal("the lone key changed")
		}
	})
}

func TestSelfSignedHandshake(t *testing.T) {
	s, err := EnsureSelfSigned(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cfg, fp, err := LoadTLSConfig(s.CertFile, s.KeyFile)
	if err != nil || fp != s.Fingerprint || cfg.MinVersion != tls.VersionTLS12 || !slices.Equal(cfg.CipherSuites, tls12CipherSuites) {
		t.Fatalf("LoadTLSConfig: %v %q %v", err, fp, cfg.CipherSuites)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	pemBytes, _ := os.ReadFile(s.CertFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	// A client that trusts the certificate file (curl --cacert) verifies every SAN.
	for _, name := range []string{"127.0.0.1", "localhost"} {
		c, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", port), &tls.Config{RootCAs: pool, ServerName: name})
		if err != nil {
			t.Fatalf("handshake as %s: %v", name, err)
		}
		c.Close()
	}
	if _, _, err := LoadTLSConfig(s.CertFile, filepath.Join(t.TempDir(), "missing.pem")); err == nil {
		t.Fatal("LoadTLSConfig accepted a missing key")
	}
}

func TestCertFingerprint(t *testing.T) {
	// sha256("") = e3b0c442…b855
	if got := CertFingerprint(nil); !strings.HasPrefix(got, "E3:B0:C4:42:") || !strings.HasSuffix(got, ":B8:55") {
		t.Fatalf("CertFingerprint(nil) = %s", got)
	}
}

// TestSelfSignedValidity: a new certificate is valid for 397 days from its start (an hour
// before now, for clocks a little behind), and its key pin is the SHA-256 of its public key.
func TestSelfSignedValidity(t *testing.T) {
	now := time.Date(2026, 6, 9, 10, 11, 12, 0, time.UTC)
	s, err := EnsureSelfSigned(t.TempDir(), now)
	if err != nil {
		t.Fatal(err)
	}
	leaf := loadLeaf(t, s)
	if !leaf.NotBefore.Equal(now.Add(-time.Hour)) || !leaf.NotAfter.Equal(now.Add(397*24*time.Hour)) || !s.NotAfter.Equal(leaf.NotAfter) {
		t.Fatalf("valid %s to %s (reported %s), want 397 days from %s", leaf.NotBefore, leaf.NotAfter, s.NotAfter, now)
	}
	if days := leaf.NotAfter.Sub(leaf.NotBefore).Hours() / 24; days > 398 {
		t.Fatalf("valid %.1f days", days)
	}
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	if s.KeyPin != "sha256//"+base64.StdEncoding.EncodeToString(sum[:]) {
		t.Fatalf("key pin %q", s.KeyPin)
	}
}

// TestSelfSignedRenewal: with a fake clock, a start more than 30 days before the end keeps
// the certificate; a start within 30 days of it (or past it) writes a new one for the same
// key, valid 397 days from then, and reports the fingerprints.
func TestSelfSignedRenewal(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 6, 9, 10, 11, 12, 0, time.UTC)
	first, err := EnsureSelfSigned(dir, start)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := os.ReadFile(first.KeyFile)
	end := first.NotAfter

	kept, err := EnsureSelfSigned(dir, end.Add(-31*24*time.Hour))
	if err != nil || kept.Renewed || kept.Created || kept.Fingerprint != first.Fingerprint || !kept.NotAfter.Equal(end) {
		t.Fatalf("31 days before the end: %+v %v", kept, err)
	}

	at := end.Add(-29 * 24 * time.Hour)
	renewed, err := EnsureSelfSigned(dir, at)
	if err != nil {
		t.Fatal(err)
	}
	if !renewed.Renewed || renewed.Created || renewed.PreviousFingerprint != first.Fingerprint ||
		renewed.Fingerprint == first.Fingerprint || renewed.KeyPin != first.KeyPin {
		t.Fatalf("29 days before the end: %+v, first %+v", renewed, first)
	}
	leaf := loadLeaf(t, renewed)
	if !leaf.NotAfter.Equal(at.Add(selfSignedValidity)) || !leaf.NotBefore.Equal(at.Add(-time.Hour)) ||
		CertFingerprint(leaf.Raw) != renewed.Fingerprint || !isSelfSigned(leaf) {
		t.Fatalf("renewed: valid %s to %s", leaf.NotBefore, leaf.NotAfter)
	}
	if now, _ := os.ReadFile(first.KeyFile); !bytes.Equal(now, keyPEM) {
		t.Fatal("the renewal rewrote the key file")
	}
	// The next start keeps the renewed one.
	again, err := EnsureSelfSigned(dir, at.Add(24*time.Hour))
	if err != nil || again.Renewed || again.Fingerprint != renewed.Fingerprint {
		t.Fatalf("the day after the renewal: %+v %v", again, err)
	}
	// A client pinning the key (curl --pinnedpubkey) trusts the renewed certificate.
	handshake(t, renewed, &tls.Config{InsecureSkipVerify: true, Time: func() time.Time { return at },
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			c, err := x509.ParseCertificate(raw[0])
			if err != nil || KeyPin(c) != first.KeyPin {
				return fmt.Errorf("the key changed: %v", err)
			}
			return nil
		}})
}

// TestSelfSignedNotOurs: a certificate in DATA/tls that the node did not make (another
// name) is never renewed nor replaced; past its end, the start fails and leaves it.
func TestSelfSignedNotOurs(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 6, 9, 10, 11, 12, 0, time.UTC)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "node.example"},
		NotBefore: start, NotAfter: start.Add(90 * 24 * time.Hour), DNSNames: []string{"node.example"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	if err := os.WriteFile(filepath.Join(dir, CertFileName), certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFileName), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := EnsureSelfSigned(dir, tmpl.NotAfter.Add(-time.Hour))
	if err != nil || s.Renewed || s.Created || s.Fingerprint != CertFingerprint(der) {
		t.Fatalf("an hour before its end: %+v %v", s, err)
	}
	if _, err := EnsureSelfSigned(dir, tmpl.NotAfter.Add(time.Hour)); err == nil || !strings.Contains(err.Error(), "not a certificate this node made") {
		t.Fatalf("past its end: %v", err)
	}
	for name, want := range map[string][]byte{CertFileName: certPEM, KeyFileName: keyPEM} {
		if got, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(got, want) {
			t.Fatalf("%s changed", name)
		}
	}
}

// loadLeaf reads the certificate of s.
func loadLeaf(t *testing.T, s *SelfSigned) *x509.Certificate {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return cert.Leaf
}

// handshake serves the certificate of s on a TLS listener of LoadTLSConfig and completes
// one handshake with client.
func handshake(t *testing.T, s *SelfSigned, client *tls.Config) {
	t.Helper()
	cfg, _, err := LoadTLSConfig(s.CertFile, s.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = c.(*tls.Conn).Handshake()
		c.Close()
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), client)
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	c.Close()
}
