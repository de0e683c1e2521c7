package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Files of the self-signed certificate inside its directory (DATA/tls).
const (
	CertFileName = "cert.pem"
	KeyFileName  = "key.pem"
)

// selfSignedValidity is how long a generated certificate lasts; an expired one is
// replaced at the next start.
const selfSignedValidity = 5 * 365 * 24 * time.Hour

// SelfSigned describes the node's self-signed certificate.
type SelfSigned struct {
	CertFile string
	KeyFile  string
	// Fingerprint is the SHA-256 of the certificate (DER), as colon-separated hex.
	Fingerprint string
	// Created is true when this call generated the certificate.
	Created bool
}

// EnsureSelfSigned returns the self-signed certificate in dir, generating an ECDSA P-256
// certificate for 127.0.0.1, ::1, localhost and the host's name when there is none (or
// when the one there has expired). The key file has mode 0600.
func EnsureSelfSigned(dir string, now time.Time) (*SelfSigned, error) {
	s := &SelfSigned{CertFile: filepath.Join(dir, CertFileName), KeyFile: filepath.Join(dir, KeyFileName)}
	_, certErr := os.Stat(s.CertFile)
	_, keyErr := os.Stat(s.KeyFile)
	switch {
	case certErr == nil && keyErr == nil:
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading the certificate in %s: %w", dir, err)
		}
		if now.Before(cert.Leaf.NotAfter) {
			s.Fingerprint = CertFingerprint(cert.Leaf.Raw)
			return s, nil
		}
	case errors.Is(certErr, os.ErrNotExist) && errors.Is(keyErr, os.ErrNotExist):
	case certErr == nil || keyErr == nil:
		// Half a pair may be someone's real certificate or key: never overwrite it.
		return nil, fmt.Errorf("%s holds only one of %s and %s; remove it or complete the pair", dir, CertFileName, KeyFileName)
	default:
		return nil, fmt.Errorf("reading %s: %w", dir, errors.Join(certErr, keyErr))
	}
	certPEM, keyPEM, der, err := generateSelfSigned(now)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := writeTLSFile(s.KeyFile, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeTLSFile(s.CertFile, certPEM, 0o644); err != nil {
		return nil, err
	}
	s.Fingerprint, s.Created = CertFingerprint(der), true
	return s, nil
}

// generateSelfSigned makes a self-signed ECDSA P-256 certificate and its PKCS #8 key.
func generateSelfSigned(now time.Time) (certPEM, keyPEM, der []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, nil, err
	}
	dns := []string{"localhost"}
	if h, err := os.Hostname(); err == nil && h != "" && !strings.EqualFold(h, "localhost") {
		dns = append(dns, h)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "fieldrelay self-signed", Organization: []string{"fieldrelay"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(selfSignedValidity),
		DNSNames:     dns,
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// A CA that signs only itself, so clients can trust it with --cacert.
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
	}
	der, err = x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	return certPEM, keyPEM, der, nil
}

// CertFingerprint returns the SHA-256 of a DER certificate as colon-separated upper-case
// hex, the form `openssl x509 -fingerprint -sha256` prints.
func CertFingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

// LoadTLSConfig loads a PEM certificate and key into a server TLS configuration (TLS 1.2
// or later) and returns the certificate's fingerprint.
func LoadTLSConfig(certFile, keyFile string) (*tls.Config, string, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, "", fmt.Errorf("loading the TLS certificate: %w", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}},
		CertFingerprint(cert.Leaf.Raw), nil
}

// writeTLSFile writes data to path through a synced temporary file and a rename, so
// that a crash leaves either the old file or the new one.
func writeTLSFile(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // fails harmlessly after the rename
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
