package store

import (
	"encoding/base64"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/google/uuid"
)

// idKey encodes a UUID string as its 16 bytes: UUIDv7 keys sort by time.
func idKey(id string) ([]byte, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return nil, engine.NotFound("record")
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
		return nil, engine.Invalid("cursor", "cursor is not valid")
	}
	return k, nil
}
