package store

import (
	"encoding/base64"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/google/uuid"
)

// idKey encodes a UUID string as its 16 bytes: UUIDv7 keys sort by time.
func idKey(id string) ([]byte, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return nil, model.NotFound("record")
	}
	return u[:], nil
}

// idString decodes a 16-byte key.
func idString(k []byte) string {
	var u uuid.UUID
	copy(u[:], k)
	return u.String()
}

// pair joins two ids into a 32-byte composite key.
func pair(a, b string) ([]byte, error) {
	ka, err := idKey(a)
	if err != nil {
		return nil, err
	}
	kb, err := idKey(b)
	if err != nil {
		return nil, err
	}
	return append(ka, kb...), nil
}

// encodeCursor makes the opaque cursor that resumes a list after key k.
func encodeCursor(k []byte) string { return base64.RawURLEncoding.EncodeToString(k) }

// decodeCursor reads a cursor; a malformed one is a validation_error on `cursor`.
func decodeCursor(c string, keyLen int) ([]byte, error) {
	k, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(k) != keyLen {
		return nil, model.Invalid("cursor", "cursor is not valid")
	}
	return k, nil
}

// maxUUIDMillis is the largest Unix millisecond a UUIDv7's 48-bit time holds.
const maxUUIDMillis = 1<<48 - 1

// millisKey returns the smallest 16-byte UUIDv7 key of Unix millisecond ms. A time before
// 1970 or past a UUIDv7's range (year 10889) is clamped to it, so that keys keep the order
// of the times they bound (a negative ms would otherwise wrap to the largest key).
func millisKey(ms int64) []byte {
	ms = min(max(ms, 0), maxUUIDMillis)
	k := make([]byte, 16)
	for i := range 6 {
		k[i] = byte(ms >> (40 - 8*i))
	}
	return k
}

// msKey is the smallest 16-byte UUIDv7 key of t's millisecond.
func msKey(t time.Time) []byte { return millisKey(t.UnixMilli()) }

// uuidMillis returns the Unix milliseconds of a UUIDv7 key.
func uuidMillis(k []byte) int64 {
	var ms int64
	for _, b := range k[:6] {
		ms = ms<<8 | int64(b)
	}
	return ms
}
