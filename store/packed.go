package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Packed JSON: the records written once per event that are JSON the engine made (a sync
// batch's items, the stored reply of an event) hold mostly ids, timestamps and field
// names. packJSON writes them shorter, and unpackJSON gives back the same bytes
// (docs/decisions/0130-bbolt-footprint.md):
//
//   - a UUID in canonical form (36 lowercase characters) is 0xFF and its 16 bytes, or 0xFE
//     and one byte naming an earlier UUID of the record (the 0th, 1st, ...) when it repeats;
//   - a timestamp in model.TimeLayout is 0xFD and its Unix milliseconds (varint), when
//     writing them back gives the same text;
//   - a fragment of packedFragments is 0xC0 and its index.
//
// Those bytes never occur in UTF-8 text; a record that holds one is not packed
// (packJSON's ok is false) and is stored as it is.
const (
	packFragment = 0xC0
	packTime     = 0xFD
	packUUIDRef  = 0xFE
	packUUID     = 0xFF
)

// packedFragments are the field names and values that recur in packed records, longest
// first where one begins another. The list is part of the stored form: append to it,
// never change or reorder what is there.
var packedFragments = [...]string{
	`{"index":`,
	`,"idempotency_key":"`,
	`","status":"accepted","event_id":"`,
	`","status":"duplicate","event_id":"`,
	`","status":"rejected","event_id":null,"error":{"code":"`,
	`","error":null}`,
	`","error":null,"dispatch":{"mission_id":"`,
	`","team_id":"`,
	`","score":`,
	`},"requires_manual":true`,
	`,"requires_manual":true`,
	`,"payload_warnings":[`,
	`{"event_id":"`,
	`","status":"pending","channel_selected":"`,
	`","status":"`,
	`","channel_selected":"`,
	`","created_at":"`,
	`","request_id":"`,
	`,"dispatch":{"mission_id":"`,
	`"},{"index":`,
	`},{"index":`,
	`","message":"`,
	`","field":"`,
	`"batch_id":"`,
	`","device_id":"`,
	`","captured_at":"`,
	`","received_at":"`,
	`","accepted":`,
	`,"duplicates":`,
	`,"rejected":`,
	`,"items":[`,
	`rest_full`,
	`"field-`,
	`"}`,
	// Alerts (schema version 5, tx_alerts.go).
	`{"id":"`,
	`","kind":"event_undispatched","key":"event_undispatched:`,
	`","kind":"requires_manual","key":"requires_manual:`,
	`","kind":"mission_unacknowledged","key":"mission_unacknowledged:`,
	`","kind":"crew_message","key":"crew_message:`,
	`","kind":"`,
	`","key":"`,
	`","priority":"`,
	`","message":"`,
	` event not dispatched: `,
	`","event_id":"`,
	`","event_id":null`,
	`","mission_id":null,"team_id":null,"status":"open","raised_at":"`,
	`","mission_id":null`,
	`,"mission_id":null`,
	`","mission_id":"`,
	`,"mission_id":"`,
	`,"team_id":null`,
	`,"team_id":"`,
	`,"status":"`,
	`","raised_at":"`,
	`","acked_at":null,"acked_by":null,"closed_at":null,"escalated_at":null,"updated_at":"`,
	`","acked_at":null`,
	`","acked_at":"`,
	`,"acked_by":null`,
	`,"acked_by":"`,
	`","acked_by":"`,
	`,"closed_at":null`,
	`,"closed_at":"`,
	`","closed_at":"`,
	`,"escalated_at":null`,
	`,"escalated_at":"`,
	`","escalated_at":"`,
	`,"updated_at":"`,
	`","updated_at":"`,
}

// packJSON appends the packed form of src to dst; ok is false when src holds a byte of
// the packed form (it is not UTF-8 text) and cannot be packed.
func packJSON(dst, src []byte) (out []byte, ok bool) {
	var uuids [][]byte // the UUIDs written, for references
	for i := 0; i < len(src); {
		c := src[i]
		if c == packFragment || c == 0xC1 || c >= 0xF5 {
			return dst, false
		}
		if i+36 <= len(src) && isCanonicalUUID(src[i:i+36]) {
			u := src[i : i+36]
			ref := -1
			for j, seen := range uuids {
				if bytes.Equal(seen, u) {
					ref = j
					break
				}
			}
			switch {
			case ref >= 0:
				dst = append(dst, packUUIDRef, byte(ref))
			default:
				k, _ := idKey(string(u))
				dst = append(append(dst, packUUID), k...)
				if len(uuids) < 256 {
					uuids = append(uuids, u)
				}
			}
			i += 36
			continue
		}
		if n := len(model.TimeLayout); i+n <= len(src) && src[i+4] == '-' && src[i+n-1] == 'Z' {
			if t, err := time.Parse(model.TimeLayout, string(src[i:i+n])); err == nil &&
				string(t.AppendFormat(nil, model.TimeLayout)) == string(src[i:i+n]) {
				dst = binary.AppendVarint(append(dst, packTime), t.UnixMilli())
				i += n
				continue
			}
		}
		if f := fragmentAt(src[i:]); f >= 0 {
			dst = append(dst, packFragment, byte(f))
			i += len(packedFragments[f])
			continue
		}
		dst = append(dst, c)
		i++
	}
	return dst, true
}

// fragmentsByFirst lists the fragments by their first byte.
var fragmentsByFirst = func() (by [256][]int) {
	for f, s := range packedFragments {
		by[s[0]] = append(by[s[0]], f)
	}
	return by
}()

// fragmentAt returns the index of the longest fragment src begins with (-1: none).
func fragmentAt(src []byte) int {
	best := -1
	for _, f := range fragmentsByFirst[src[0]] {
		s := packedFragments[f]
		if len(s) <= len(src) && string(src[:len(s)]) == s && (best < 0 || len(s) > len(packedFragments[best])) {
			best = f
		}
	}
	return best
}

// isCanonicalUUID says whether u is 8-4-4-4-12 lowercase hexadecimal digits.
func isCanonicalUUID(u []byte) bool {
	for i, c := range u {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

var errPacked = errors.New("malformed packed record")

// unpackJSON appends the text packed in src to dst.
func unpackJSON(dst, src []byte) ([]byte, error) {
	var uuids []int // where each UUID written starts in dst
	for i := 0; i < len(src); {
		switch c := src[i]; c {
		case packUUID:
			if i+17 > len(src) {
				return nil, errPacked
			}
			uuids = append(uuids, len(dst))
			dst = append(dst, idString(src[i+1:i+17])...)
			i += 17
		case packUUIDRef:
			if i+2 > len(src) || int(src[i+1]) >= len(uuids) {
				return nil, errPacked
			}
			at := uuids[src[i+1]]
			dst = append(dst, dst[at:at+36]...)
			i += 2
		case packTime:
			ms, n := binary.Varint(src[i+1:])
			if n <= 0 {
				return nil, errPacked
			}
			dst = time.UnixMilli(ms).UTC().AppendFormat(dst, model.TimeLayout)
			i += 1 + n
		case packFragment:
			if i+2 > len(src) || int(src[i+1]) >= len(packedFragments) {
				return nil, errPacked
			}
			dst = append(dst, packedFragments[src[i+1]]...)
			i += 2
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst, nil
}
