package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
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
// the packed form (it is not UTF-8 text) and cannot be packed. It runs in the commit loop
// for every event's reply: it allocates nothing but dst's growth.
func packJSON(dst, src []byte) (out []byte, ok bool) {
	var seenArr [8][16]byte
	seen := seenArr[:0] // the UUIDs written, for references
	for i := 0; i < len(src); {
		c := src[i]
		if c == packFragment || c == 0xC1 || c >= 0xF5 {
			return dst, false
		}
		if i+36 <= len(src) && isCanonicalUUID(src[i:i+36]) {
			u := uuidBytes(src[i : i+36])
			ref := -1
			for j := range seen {
				if seen[j] == u {
					ref = j
					break
				}
			}
			switch {
			case ref >= 0:
				dst = append(dst, packUUIDRef, byte(ref))
			default:
				dst = append(append(dst, packUUID), u[:]...)
				if len(seen) < 256 {
					seen = append(seen, u)
				}
			}
			i += 36
			continue
		}
		if n := len(model.TimeLayout); i+n <= len(src) && src[i+4] == '-' && src[i+n-1] == 'Z' {
			if ms, ok := layoutMillis(src[i : i+n]); ok {
				dst = binary.AppendVarint(append(dst, packTime), ms)
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

// uuidBytes decodes a canonical UUID (isCanonicalUUID) into its 16 bytes.
func uuidBytes(u []byte) (b [16]byte) {
	j := 0
	for i := 0; i < 36; i += 2 {
		if u[i] == '-' {
			i--
			continue
		}
		b[j] = hexDigit(u[i])<<4 | hexDigit(u[i+1])
		j++
	}
	return b
}

func hexDigit(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// layoutMillis reads a timestamp in model.TimeLayout (24 bytes); ok only when writing its
// Unix milliseconds back in that layout gives the same text, as unpackJSON does.
func layoutMillis(s []byte) (ms int64, ok bool) {
	num := func(from, to int) int {
		v := 0
		for _, c := range s[from:to] {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	if s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' {
		return 0, false
	}
	year, month, day := num(0, 4), num(5, 7), num(8, 10)
	hour, minute, sec, milli := num(11, 13), num(14, 16), num(17, 19), num(20, 23)
	if year < 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 ||
		minute < 0 || minute > 59 || sec < 0 || sec > 59 || milli < 0 {
		return 0, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, milli*int(time.Millisecond), time.UTC)
	var back [64]byte // time's AppendFormat wants room for its longest layouts
	if !bytes.Equal(t.AppendFormat(back[:0], model.TimeLayout), s) {
		return 0, false // a day past the month's end, which time.Date moves on
	}
	return t.UnixMilli(), true
}

// fragmentsByFirst lists the fragments by their first byte, longest first (then in the
// list's order), so that the first one src begins with is the longest.
var fragmentsByFirst = func() (by [256][]int) {
	for f, s := range packedFragments {
		by[s[0]] = append(by[s[0]], f)
	}
	for _, fs := range by {
		slices.SortStableFunc(fs, func(a, b int) int { return len(packedFragments[b]) - len(packedFragments[a]) })
	}
	return by
}()

// fragmentAt returns the index of the longest fragment src begins with (-1: none).
func fragmentAt(src []byte) int {
	for _, f := range fragmentsByFirst[src[0]] {
		if s := packedFragments[f]; len(s) <= len(src) && string(src[:len(s)]) == s {
			return f
		}
	}
	return -1
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

// packRecord returns the record of a JSON document: marker then its packed form, or the
// JSON as it is when it cannot be packed (JSON begins with '{', never with a marker). A sync
// batch (batchPacked) and an alert (alertPacked) are stored so.
func packRecord(marker byte, text []byte) []byte {
	if raw, ok := packJSON(append(make([]byte, 0, len(text)/2), marker), text); ok {
		return raw
	}
	return text
}

// unpackRecord returns the JSON of a record packRecord wrote with marker, or of a record
// that is JSON.
func unpackRecord(marker byte, raw []byte) ([]byte, error) {
	if len(raw) > 0 && raw[0] == marker {
		return unpackJSON(make([]byte, 0, 2*len(raw)), raw[1:])
	}
	return raw, nil
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
