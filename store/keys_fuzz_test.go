package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Fuzz targets of the key codecs: every encoder has its decoder, and keys keep the order
// of what they encode.

func FuzzIDKey(f *testing.F) {
	for _, s := range []string{model.NewID(), model.NilID, "01890A5D-AC96-774B-BCCE-B302099A8057",
		"urn:uuid:01890a5d-ac96-774b-bcce-b302099a8057", "{01890a5d-ac96-774b-bcce-b302099a8057}",
		"01890a5dac96774bbccebb302099a8057", "01890a5dac96774bbcceb302099a8057", "", "x", "01890a5d-ac96-774b-bcce-b302099a805g"} {
		f.Add(s, model.NewID())
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		k, err := idKey(a)
		if err != nil {
			if !model.IsKind(err, model.KindNotFound) {
				t.Fatalf("idKey(%q): %v, want not_found", a, err)
			}
			return
		}
		// A key decodes to the canonical form of the id, which encodes to the same key.
		s := idString(k)
		if len(k) != 16 || !model.ValidID(s) || s != strings.ToLower(s) {
			t.Fatalf("idKey(%q) = %x, decodes to %q", a, k, s)
		}
		if model.ValidID(a) && s != strings.ToLower(a) {
			t.Fatalf("idKey(%q) decodes to %q", a, s)
		}
		if k2, err := idKey(s); err != nil || !bytes.Equal(k, k2) {
			t.Fatalf("idKey(idString(%x)) = %x, %v", k, k2, err)
		}
		// A pair is both keys, in order.
		if kb, err := idKey(b); err == nil {
			p, err := pair(a, b)
			if err != nil || len(p) != 32 || !bytes.Equal(p[:16], k) || !bytes.Equal(p[16:], kb) {
				t.Fatalf("pair(%q, %q) = %x, %v", a, b, p, err)
			}
		} else if _, err := pair(a, b); err == nil {
			t.Fatalf("pair(%q, %q) accepted the second id", a, b)
		}
	})
}

func FuzzCursor(f *testing.F) {
	f.Add([]byte{}, "", uint8(16))
	f.Add(bytes.Repeat([]byte{0xff}, 16), "AZ_-", uint8(16))
	f.Add(bytes.Repeat([]byte{1}, 32), "AAAAAAAAAAAAAAAAAAAAAB", uint8(16))
	f.Add([]byte{1, 2, 3}, "AAAAAAAAAAAAAAAAAAAAAA==", uint8(16))
	f.Fuzz(func(t *testing.T, key []byte, cursor string, keyLen uint8) {
		// Every key encodes to a cursor that decodes back to it, for its own length only.
		c := encodeCursor(key)
		if got, err := decodeCursor(c, len(key)); err != nil || !bytes.Equal(got, key) {
			t.Fatalf("decodeCursor(encodeCursor(%x)) = %x, %v", key, got, err)
		}
		if _, err := decodeCursor(c, len(key)+1); err == nil {
			t.Fatalf("cursor %q of %d bytes decodes for %d", c, len(key), len(key)+1)
		}
		// Any cursor decodes to a key of the length asked for, or is a validation error
		// on cursor; what decodes encodes to a cursor that decodes to the same key.
		k, err := decodeCursor(cursor, int(keyLen))
		if err != nil {
			var e *model.Error
			if !errors.As(err, &e) || e.Kind != model.KindValidation || e.Field != "cursor" {
				t.Fatalf("decodeCursor(%q): %v", cursor, err)
			}
			return
		}
		if len(k) != int(keyLen) {
			t.Fatalf("decodeCursor(%q, %d) = %x", cursor, keyLen, k)
		}
		if k2, err := decodeCursor(encodeCursor(k), int(keyLen)); err != nil || !bytes.Equal(k, k2) {
			t.Fatalf("cursor %q: %x, then %x, %v", cursor, k, k2, err)
		}
	})
}

func FuzzMillisKey(f *testing.F) {
	f.Add(int64(0), int64(1))
	f.Add(int64(-1), int64(0))
	f.Add(int64(-62167219200000), int64(1781000000000)) // year 0 and 2026
	f.Add(int64(1<<48-1), int64(1<<48))
	f.Add(int64(-1<<63), int64(1<<63-1))
	f.Fuzz(func(t *testing.T, a, b int64) {
		if a > b {
			a, b = b, a
		}
		ka, kb := millisKey(a), millisKey(b)
		// Keys keep the order of their times: a bound never wraps around.
		if bytes.Compare(ka, kb) > 0 {
			t.Fatalf("millisKey(%d) = %x > millisKey(%d) = %x", a, ka, b, kb)
		}
		// In a UUIDv7's range, the key's time is the millisecond, and every id of that
		// millisecond sorts at or after it and before the next millisecond's key.
		if a >= 0 && a <= maxUUIDMillis {
			if got := uuidMillis(ka); got != a {
				t.Fatalf("uuidMillis(millisKey(%d)) = %d", a, got)
			}
			id, _ := idKey(model.NewIDAt(time.UnixMilli(a)))
			if uuidMillis(id) == a && (bytes.Compare(id, ka) < 0 || a < maxUUIDMillis && bytes.Compare(id, millisKey(a+1)) >= 0) {
				t.Fatalf("id %x of millisecond %d is outside [%x, %x)", id, a, ka, millisKey(a+1))
			}
		}
	})
}

func FuzzEventReply(f *testing.F) {
	f.Add(201, int64(1781000000000), "0190b6e2-0000-7000-8000-000000000000", []byte(`{"event_id":"x"}`), []byte{1, 0, 201})
	f.Add(200, int64(-1), "", []byte{}, []byte{1, 0, 200, 0, 0, 0, 0, 0, 0, 0, 0, 5, 'a'})
	f.Add(0, int64(0), strings.Repeat("r", 255), []byte(nil), []byte{2})
	f.Fuzz(func(t *testing.T, status int, ms int64, reqID string, body, raw []byte) {
		// Arbitrary bytes decode or fail, never panic; what decodes encodes to the same bytes.
		if r, err := decodeEventReply(raw); err == nil {
			again, err := encodeEventReply(r)
			if err != nil || !bytes.Equal(again, raw) {
				t.Fatalf("decodeEventReply(%x) = %+v, encodes to %x, %v", raw, r, again, err)
			}
		}
		// A record of an HTTP status, a millisecond time and a request id of at most 255
		// bytes round-trips.
		status = 100 + (status%500+500)%500
		rec := &model.IdempotencyRecord{Reply: model.Reply{Status: status, Body: body, RequestID: reqID},
			CreatedAt: model.At(time.UnixMilli(ms))}
		enc, err := encodeEventReply(rec)
		if len(reqID) > 255 {
			if err == nil {
				t.Fatalf("encodeEventReply accepted a request id of %d bytes", len(reqID))
			}
			return
		}
		if err != nil {
			t.Fatalf("encodeEventReply(%+v): %v", rec, err)
		}
		got, err := decodeEventReply(enc)
		if err != nil || got.Status != rec.Status || got.RequestID != rec.RequestID || !bytes.Equal(got.Body, rec.Body) ||
			!got.CreatedAt.Equal(rec.CreatedAt.Time) {
			t.Fatalf("event reply %+v encodes to %x, decodes to %+v, %v", rec, enc, got, err)
		}
	})
}

func FuzzSeqKey(f *testing.F) {
	f.Add(model.NewID(), int64(1), int64(2))
	f.Add(model.NilID, int64(0), int64(1<<53-1))
	f.Add("x", int64(5), int64(-1))
	f.Fuzz(func(t *testing.T, deviceID string, a, b int64) {
		if a < 0 || b < 0 {
			return // sequence numbers are 1 to MaxSequence; the engine never asks for more
		}
		if a > b {
			a, b = b, a
		}
		ka, err := seqKey(deviceID, a)
		if err != nil {
			if model.ValidID(deviceID) {
				t.Fatalf("seqKey(%q, %d): %v", deviceID, a, err)
			}
			return
		}
		kb, _ := seqKey(deviceID, b)
		id, _ := idKey(deviceID)
		// device id | sequence: the prefix is the device, the tail the sequence, in order.
		if len(ka) != 24 || !bytes.Equal(ka[:16], id) || int64(binary.BigEndian.Uint64(ka[16:])) != a ||
			bytes.Compare(ka, kb) > 0 {
			t.Fatalf("seqKey(%q, %d) = %x, seqKey(…, %d) = %x", deviceID, a, ka, b, kb)
		}
	})
}
