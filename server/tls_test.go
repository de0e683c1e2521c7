package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
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
		if err != nil || again.Created || again.Fingerprint != s.Fingerprint {
			t.Fatalf("second call: %+v %v", again, err)
		}
	})
	t.Run("ExpiredReplaced", func(t *testing.T) {
		later, err := EnsureSelfSigned(dir, now.Add(selfSignedValidity+time.Hour))
		if err != nil || !later.Created || later.Fingerprint == s.Fingerprint {
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
	if err != nil || fp != s.Fingerprint || cfg.MinVersion != tls.VersionTLS12 {
		t.Fatalf("LoadTLSConfig: %v %q", err, fp)
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
