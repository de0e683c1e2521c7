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
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Files of the self-signed certificate inside its directory (DATA/tls).
const (
	CertFileName = "cert.pem"
	KeyFileName  = "key.pem"
)

// The self-signed certificate's life (docs/decisions/0010-self-signed-certificate.md): it
// is valid for selfSignedValidity (397 days, the longest a public CA may issue), and a
// start that finds it within selfSignedRenewBefore of its end, or past it, renews it with
// the same key.
const (
	selfSignedValidity    = 397 * 24 * time.Hour
	selfSignedRenewBefore = 30 * 24 * time.Hour
)

// selfSignedSubject names the certificates EnsureSelfSigned makes: only a certificate of
// this name, signed by its own key, is ever renewed.
var selfSignedSubject = pkix.Name{CommonName: "fieldrelay self-signed", Organization: []string{"fieldrelay"}}

// SelfSigned describes the node's self-signed certificate.
type SelfSigned struct {
	CertFile string
	KeyFile  string
	// Fingerprint is the SHA-256 of the certificate (DER), as colon-separated hex.
	Fingerprint string
	// KeyPin is the SHA-256 of the public key (SPKI), which a renewal keeps: see KeyPin.
	KeyPin string
	// NotAfter is the end of the certificate's validity.
	NotAfter time.Time
	// Created is true when this call generated the certificate and its key.
	Created bool
	// Renewed is true when this call replaced a certificate near or past its end by a new
	// one for the same key; PreviousFingerprint is then the old one's fingerprint.
	Renewed             bool
	PreviousFingerprint string
}

// EnsureSelfSigned returns the self-signed certificate in dir as of now, generating an
// ECDSA P-256 key and a certificate for 127.0.0.1, ::1, localhost and the host's name when
// there is none. A certificate of its own within selfSignedRenewBefore of its end (or past
// it) is renewed: a new certificate for the same key, so that a client pinning the key
// (KeyPin) goes on trusting the node. A certificate in dir that it did not make is never
// replaced; past its end it is an error. The key file has mode 0600.
func EnsureSelfSigned(dir string, now time.Time) (*SelfSigned, error) {
	s := &SelfSigned{CertFile: filepath.Join(dir, CertFileName), KeyFile: filepath.Join(dir, KeyFileName)}
	_, certErr := os.Stat(s.CertFile)
	_, keyErr := os.Stat(s.KeyFile)
	var key *ecdsa.PrivateKey
	switch {
	case certErr == nil && keyErr == nil:
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading the certificate in %s: %w", dir, err)
		}
		leaf := cert.Leaf
		k, ours := cert.PrivateKey.(*ecdsa.PrivateKey)
		ours = ours && isSelfSigned(leaf)
		if now.Before(leaf.NotAfter.Add(-selfSignedRenewBefore)) || (!ours && now.Before(leaf.NotAfter)) {
			s.Fingerprint, s.KeyPin, s.NotAfter = CertFingerprint(leaf.Raw), KeyPin(leaf), leaf.NotAfter
			return s, nil
		}
		if !ours {
			// Someone's own certificate: renewing it is their business, not ours.
			return nil, fmt.Errorf("%s in %s expired on %s and is not a certificate this node made: renew it, "+
				"or remove both files for a new self-signed one", CertFileName, dir, leaf.NotAfter.UTC().Format(time.DateOnly))
		}
		key, s.PreviousFingerprint = k, CertFingerprint(leaf.Raw)
	case errors.Is(certErr, os.ErrNotExist) && errors.Is(keyErr, os.ErrNotExist):
	case certErr == nil || keyErr == nil:
		// Half a pair may be someone's real certificate or key: never overwrite it.
		return nil, fmt.Errorf("%s holds only one of %s and %s; remove it or complete the pair", dir, CertFileName, KeyFileName)
	default:
		return nil, fmt.Errorf("reading %s: %w", dir, errors.Join(certErr, keyErr))
	}
	if key == nil {
		var err error
		if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating %s: %w", dir, err)
		}
		pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, err
		}
		if err := writeTLSFile(s.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), 0o600); err != nil {
			return nil, err
		}
		s.Created = true
	}
	// A renewal writes the certificate only: the key file is left as it is.
	certPEM, leaf, err := selfSignedCert(key, now)
	if err != nil {
		return nil, err
	}
	if err := writeTLSFile(s.CertFile, certPEM, 0o644); err != nil {
		return nil, err
	}
	s.Fingerprint, s.KeyPin, s.NotAfter, s.Renewed = CertFingerprint(leaf.Raw), KeyPin(leaf), leaf.NotAfter, !s.Created
	return s, nil
}

// isSelfSigned reports whether c is a certificate EnsureSelfSigned made: its name, and
// signed by its own key.
func isSelfSigned(c *x509.Certificate) bool {
	return c.Subject.String() == selfSignedSubject.String() && bytes.Equal(c.RawIssuer, c.RawSubject) &&
		c.CheckSignatureFrom(c) == nil
}

// selfSignedCert makes a self-signed certificate for key, valid from an hour before now
// (for clocks a little behind) for selfSignedValidity.
func selfSignedCert(key *ecdsa.PrivateKey, now time.Time) (certPEM []byte, leaf *x509.Certificate, err error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	dns := []string{"localhost"}
	if h, err := os.Hostname(); err == nil && h != "" && !strings.EqualFold(h, "localhost") {
		dns = append(dns, h)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      selfSignedSubject,
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	if leaf, err = x509.ParseCertificate(der); err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), leaf, nil
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

// KeyPin returns the SHA-256 of a certificate's public key (its DER SubjectPublicKeyInfo)
// in the form curl's --pinnedpubkey takes: "sha256//" and the standard base64. It stays
// the same across renewals of the self-signed certificate, which keep the key.
func KeyPin(c *x509.Certificate) string {
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return "sha256//" + base64.StdEncoding.EncodeToString(sum[:])
}

// tls12CipherSuites are the only TLS 1.2 suites the node offers: ECDHE key exchange
// (forward secrecy) and an AEAD cipher, for an ECDSA certificate (the self-signed one) and
// for an RSA one (a certificate of the operator's). No CBC suite (Lucky13 and its kin), no
// RSA key exchange, no 3DES. TLS 1.3 takes its own suites, all AEAD with forward secrecy:
// Go does not let them be chosen. docs/decisions/0134-tls-versions-ciphers.md.
var tls12CipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// LoadTLSConfig loads a PEM certificate and key into a server TLS configuration (TLS 1.2
// with tls12CipherSuites only, or TLS 1.3) and returns the certificate's fingerprint.
func LoadTLSConfig(certFile, keyFile string) (*tls.Config, string, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, "", fmt.Errorf("loading the TLS certificate: %w", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: slices.Clone(tls12CipherSuites),
		Certificates: []tls.Certificate{cert}}, CertFingerprint(cert.Leaf.Raw), nil
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
