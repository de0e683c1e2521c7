package postgres

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
)

// SecretKey is the key of a central tier's key file: the key that wraps the database's
// data key, never stored in the database (docs/decisions/0224-secrets-encrypted-at-rest.md).
type SecretKey struct {
	id   string
	aead cipher.AEAD
}

// secretKeyLen is the length of a key: AES-256.
const secretKeyLen = 32

// ID names the key without revealing it: the first 8 bytes of a SHA-256 of the key, in
// hex. The database keeps the id of the key that wraps its data key.
func (k *SecretKey) ID() string { return k.id }

// ParseSecretKey reads a key file's content: the base64 of 32 random bytes, surrounding
// white space ignored.
func ParseSecretKey(content []byte) (*SecretKey, error) {
	raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(content)))
	if err != nil || len(raw) != secretKeyLen {
		return nil, fmt.Errorf("a secret key file holds the base64 of %d random bytes (fieldrelay secrets keygen FILE writes one)", secretKeyLen)
	}
	aead, err := newAEAD(raw)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append([]byte("fieldrelay secret key id\x00"), raw...))
	return &SecretKey{id: hex.EncodeToString(sum[:8]), aead: aead}, nil
}

// ReadSecretKeyFile reads the key of a key file.
func ReadSecretKeyFile(path string) (*SecretKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, err := ParseSecretKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// NewSecretKeyFile returns the content of a new key file.
func NewSecretKeyFile() []byte {
	raw := make([]byte, secretKeyLen)
	_, _ = rand.Read(raw) // never fails (crypto/rand since Go 1.24)
	return []byte(base64.StdEncoding.EncodeToString(raw) + "\n")
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts plain with aead, bound to aad: a random nonce, then the ciphertext.
func seal(aead cipher.AEAD, plain []byte, aad string) []byte {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(nonce)
	return aead.Seal(nonce, nonce, plain, []byte(aad))
}

// open decrypts what seal returned for the same aad.
func open(aead cipher.AEAD, sealed []byte, aad string) ([]byte, error) {
	n := aead.NonceSize()
	if len(sealed) < n+aead.Overhead() {
		return nil, fmt.Errorf("postgres: a sealed secret is too short")
	}
	return aead.Open(nil, sealed[:n], sealed[n:], []byte(aad))
}
