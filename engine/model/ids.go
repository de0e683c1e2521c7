package model

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"time"

	"github.com/google/uuid"
)

// NilID is the actor of work the system does by itself (auto-dispatch, reinforcement).
const NilID = "00000000-0000-0000-0000-000000000000"

// NewID returns a new UUIDv7 string: time-ordered, so newer records sort after older ones.
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// NewIDAt returns a new UUIDv7 string whose time is t's millisecond: the id of a record
// listed by time, so that its key and its created_at agree under any Clock.
func NewIDAt(t time.Time) string {
	u := uuid.Must(uuid.NewV7())
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return u.String()
}

// ValidID reports whether s is a UUID in its canonical string form.
func ValidID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

// RandomToken returns n random bytes encoded as unpadded base64url.
func RandomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// HashToken returns the hex SHA-256 of a secret token: what is stored instead of it.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewIDSeq returns a new UUIDv7 string of the millisecond ms whose 12 bits after the
// version (rand_a) are seq: ids of one millisecond with increasing seq sort in that order.
func NewIDSeq(ms uint64, seq uint16) string {
	u := uuid.Must(uuid.NewV7())
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = 0x70 | byte(seq>>8)&0x0f
	u[7] = byte(seq)
	return u.String()
}
