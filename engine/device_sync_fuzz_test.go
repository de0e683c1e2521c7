package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// FuzzReadDeviceItem fuzzes the decoder of one item of POST /v1/devices/sync.
func FuzzReadDeviceItem(f *testing.F) {
	for _, s := range []string{
		`{"sequence_number": 1, "kind": "event", "payload": {"type": "fire"}, "captured_at": "2026-06-09T10:11:12.345Z"}`,
		`{"sequence_number": 9007199254740991, "kind": "location", "payload": {}, "captured_at": "2026-06-09T10:11:12Z"}`,
		`{"sequence_number": 9007199254740992, "kind": "event"}`, `{"sequence_number": 1.5}`, `{"sequence_number": "3"}`,
		`{"sequence_number": -0, "kind": "event"}`, `{"sequence_number": 1e3}`, `{"sequence_number": 3.0}`, `{"sequence_number": 1e-400}`, `{"sequence_number": 2, "kind": 3}`,
		`{"sequence_number": 2, "kind": "mission_status", "payload": [], "captured_at": "x"}`,
		`{"sequence_number": 2, "kind": "connectivity", "payload": {}, "captured_at": "0000-01-01T00:00:00+01:00"}`,
		`{"sequence_number": 2, "kind": "event", "payload": {}, "captured_at": "\u0032026-06-09T10:11:12Z"}`,
		`[]`, `null`, ``, `{`,
		`{"sequence_number": 1, "sequence_number": 2, "kind": "event"}`, `{"sequence_number": 1, "kind": "event", "payload": {"a": 1, "a": 2}}`,
		"{\"sequence_number\": 1, \"kind\": \"ev\xffent\"}", `{"sequence_number": 1, "kind": "event", "payload": {"type": "\udc00"}}`,
	} {
		f.Add([]byte(s))
	}
	now := model.At(time.Date(2026, 6, 9, 10, 11, 12, 0, time.UTC))
	f.Fuzz(func(t *testing.T, raw []byte) {
		seq, it, err := readItem(raw, now, 0)
		if seq < 0 || seq > model.MaxSequence {
			t.Fatalf("readItem(%q): sequence %d", raw, seq)
		}
		if err != nil {
			var e *model.Error
			if !errors.As(err, &e) || e.Kind != model.KindValidation || e.Field == "" {
				t.Fatalf("readItem(%q): %#v, want a validation_error naming a field", raw, err)
			}
			if it == nil && seq != 0 {
				t.Fatalf("readItem(%q): sequence %d without an item", raw, seq)
			}
			return
		}
		if seq < 1 || it == nil || it.CapturedAt == nil || len(it.Payload) == 0 || it.Payload[0] != '{' {
			t.Fatalf("readItem(%q) = %d, %+v", raw, seq, it)
		}
		switch it.Kind {
		case ItemMissionStatus, ItemEvent, ItemLocation, ItemConnectivity:
		default:
			t.Fatalf("readItem(%q): kind %q", raw, it.Kind)
		}
		if it.CapturedAt.Sub(now.Time) > MaxCaptureSkew {
			t.Fatalf("readItem(%q): captured_at %v is ahead of %v", raw, it.CapturedAt, now)
		}
		// The item is stored as JSON: it must read back as it was.
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatalf("readItem(%q) = %+v, which does not marshal: %v", raw, it, err)
		}
		var back model.DeviceItem
		if err := json.Unmarshal(b, &back); err != nil || back.Kind != it.Kind || !back.CapturedAt.Equal(it.CapturedAt.Time) {
			t.Fatalf("stored item %s reads back %+v, %v", b, back, err)
		}
		// The sequence number is the item's own integer, as written.
		var f struct {
			Seq json.RawMessage `json:"sequence_number"`
		}
		_ = json.Unmarshal(raw, &f)
		if string(bytes.TrimSpace(f.Seq)) != strconv.FormatInt(seq, 10) {
			t.Fatalf("readItem(%q): sequence %d from %s", raw, seq, f.Seq)
		}
	})
}
