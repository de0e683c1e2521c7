package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// An event is stored in a compact binary form (docs/decisions/0130-bbolt-footprint.md):
// its JSON record spent half its bytes on field names and ids written as text. The
// form decodes to the same model.Event the JSON record did, so every answer is the same.
// A record that starts with '{' is the JSON of a file written before it, and still reads.
//
//	version (1) | presence bits (uvarint) | type | priority | vertical | idempotency_key |
//	payload | severity | required_equipment | status | channel_selected |
//	channels_attempted | source | delivery.plan | delivery.started | delivery.outstanding |
//	created_at | updated_at | then, each when its bit is set: zone_code, lat, lng, batch_id,
//	device_id, captured_at, device_captured_at, origin, delivered_at, closed_at, disposition
//	(its JSON, as a string).
//
// A string is uvarint length | bytes; a word (priority, vertical, severity, status, a
// channel, source) is a string, or one of eventWords: uvarint 2×length | bytes, or
// uvarint 2×index+1; idempotency_key is packJSON's form of it when evKeyPacked is set (a
// key made of a UUID); a list is uvarint count | words; a time is its
// Unix milliseconds as a varint (model.Time holds no more); a number is 8 bytes, IEEE 754;
// batch_id is its 16 bytes (unless it is not an id in canonical form); the event's own
// id is its key.
const eventV2 = 2

// Presence bits of an event record.
const (
	evZone = 1 << iota
	evLat
	evLng
	evBatch
	evDevice
	evCaptured
	evDeviceCaptured
	evOrigin
	evDelivered
	evClosed
	// evAttemptedSet and evPlanSet tell an empty list from none (null in JSON).
	evAttemptedSet
	evPlanSet
	// evPayload is set when the event has a payload (none is null in JSON).
	evPayload
	// evBatchText: the batch_id is not an id in canonical form (from another node), kept
	// as a string.
	evBatchText
	// evKeyPacked: the idempotency_key is stored packed (packJSON).
	evKeyPacked
	// evDisposition: the event was closed by hand; its disposition follows, as JSON.
	evDisposition
)

// eventWords are the values of an event's enumerated fields, written as one byte. The
// list is part of the stored form: append to it, never change or reorder what is there.
var eventWords = [...]string{
	"pending", "delivered", "failed", "queued_offline", "closed",
	"rest_full", "sms", "device", "webhook",
	"low", "normal", "high", "critical",
	"api", "sync_batch", "upstream",
	"healthcare", "banking", "logistics", "delivery", "telecom", "gov", "emergency",
	"medium",
}

// eventWordIndex is eventWords by value.
var eventWordIndex = func() map[string]int {
	m := make(map[string]int, len(eventWords))
	for i, w := range eventWords {
		m[w] = i
	}
	return m
}()

// encodeEvent appends ev's record to b.
func encodeEvent(b []byte, ev *model.Event) []byte {
	var bits uint64
	set := func(bit uint64, on bool) {
		if on {
			bits |= bit
		}
	}
	set(evZone, ev.ZoneCode != nil)
	set(evLat, ev.Lat != nil)
	set(evLng, ev.Lng != nil)
	set(evBatch, ev.BatchID != nil)
	if ev.BatchID != nil {
		_, ok := canonicalID(*ev.BatchID)
		set(evBatchText, !ok)
	}
	set(evDevice, ev.DeviceID != nil)
	set(evCaptured, ev.CapturedAt != nil)
	set(evDeviceCaptured, ev.DeviceCapturedAt != nil)
	set(evOrigin, ev.Origin != nil)
	set(evDelivered, ev.DeliveredAt != nil)
	set(evClosed, ev.ClosedAt != nil)
	set(evAttemptedSet, ev.ChannelsAttempted != nil)
	set(evPlanSet, ev.Delivery.Plan != nil)
	set(evPayload, len(ev.Payload) > 0)
	set(evDisposition, ev.Disposition != nil)
	key, packed := packJSON(nil, []byte(ev.IdempotencyKey))
	packed = packed && len(key) < len(ev.IdempotencyKey)
	set(evKeyPacked, packed)
	if !packed {
		key = []byte(ev.IdempotencyKey)
	}
	b = append(b, eventV2)
	b = binary.AppendUvarint(b, bits)
	b = appendBytes(b, ev.Type)
	b = appendWord(b, ev.Priority)
	b = appendWord(b, ev.Vertical)
	b = appendBytes(b, string(key))
	b = appendBytes(b, string(ev.Payload))
	b = appendWord(b, ev.Severity)
	b = appendList(b, ev.RequiredEquipment)
	b = appendWord(b, ev.Status)
	b = appendWord(b, ev.ChannelSelected)
	b = appendList(b, ev.ChannelsAttempted)
	b = appendWord(b, ev.Source)
	b = appendList(b, ev.Delivery.Plan)
	b = binary.AppendUvarint(b, uint64(ev.Delivery.Started))
	b = binary.AppendUvarint(b, uint64(ev.Delivery.Outstanding))
	b = binary.AppendVarint(b, ev.CreatedAt.UnixMilli())
	b = binary.AppendVarint(b, ev.UpdatedAt.UnixMilli())
	if ev.ZoneCode != nil {
		b = appendBytes(b, *ev.ZoneCode)
	}
	for _, f := range []*float64{ev.Lat, ev.Lng} {
		if f != nil {
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(*f))
		}
	}
	if ev.BatchID != nil {
		if k, ok := canonicalID(*ev.BatchID); ok {
			b = append(b, k...)
		} else {
			b = appendBytes(b, *ev.BatchID)
		}
	}
	if ev.DeviceID != nil {
		b = appendBytes(b, *ev.DeviceID)
	}
	for _, t := range []*model.Time{ev.CapturedAt, ev.DeviceCapturedAt} {
		if t != nil {
			b = binary.AppendVarint(b, t.UnixMilli())
		}
	}
	if ev.Origin != nil {
		b = appendBytes(b, *ev.Origin)
	}
	for _, t := range []*model.Time{ev.DeliveredAt, ev.ClosedAt} {
		if t != nil {
			b = binary.AppendVarint(b, t.UnixMilli())
		}
	}
	if ev.Disposition != nil {
		raw, _ := json.Marshal(ev.Disposition) // strings and a time: never fails
		b = appendBytes(b, string(raw))
	}
	return b
}

// decodeEvent reads the record stored under key k (either form) into ev.
func decodeEvent(k, raw []byte, ev *model.Event) error {
	if len(raw) > 0 && raw[0] == '{' {
		return json.Unmarshal(raw, ev)
	}
	if len(raw) == 0 || raw[0] != eventV2 {
		return fmt.Errorf("event %x: unknown record form", k)
	}
	if len(k) != 16 {
		return fmt.Errorf("event %x: the key is not an id", k)
	}
	d := &recordReader{b: raw[1:]}
	bits := d.uvarint()
	*ev = model.Event{ID: idString(k)}
	ev.Type, ev.Priority, ev.Vertical = d.str(), d.word(), d.word()
	if key := d.bytes(); bits&evKeyPacked != 0 {
		text, err := unpackJSON(nil, key)
		if err != nil && d.err == nil {
			d.err = err
		}
		ev.IdempotencyKey = string(text)
	} else {
		ev.IdempotencyKey = string(key)
	}
	if payload := d.bytes(); bits&evPayload != 0 {
		ev.Payload = json.RawMessage(payload)
	} else {
		ev.Payload = json.RawMessage("null") // what the JSON record read back
	}
	ev.Severity = d.word()
	ev.RequiredEquipment = d.list(false)
	ev.Status, ev.ChannelSelected = d.word(), d.word()
	ev.ChannelsAttempted = d.list(bits&evAttemptedSet != 0)
	ev.Source = d.word()
	ev.Delivery.Plan = d.list(bits&evPlanSet != 0)
	ev.Delivery.Started, ev.Delivery.Outstanding = int(d.uvarint()), int(d.uvarint())
	ev.CreatedAt, ev.UpdatedAt = d.time(), d.time()
	optStr := func(bit uint64) *string {
		if bits&bit == 0 {
			return nil
		}
		s := d.str()
		return &s
	}
	optTime := func(bit uint64) *model.Time {
		if bits&bit == 0 {
			return nil
		}
		t := d.time()
		return &t
	}
	// In the record's order (encodeEvent); calls on one line run left to right.
	ev.ZoneCode = optStr(evZone)
	if bits&evLat != 0 {
		ev.Lat = d.float()
	}
	if bits&evLng != 0 {
		ev.Lng = d.float()
	}
	if bits&evBatch != 0 {
		var s string
		if bits&evBatchText != 0 {
			s = d.str()
		} else {
			s = idString(d.next(16))
		}
		ev.BatchID = &s
	}
	ev.DeviceID = optStr(evDevice)
	ev.CapturedAt, ev.DeviceCapturedAt = optTime(evCaptured), optTime(evDeviceCaptured)
	ev.Origin = optStr(evOrigin)
	ev.DeliveredAt, ev.ClosedAt = optTime(evDelivered), optTime(evClosed)
	if bits&evDisposition != 0 {
		if raw := d.bytes(); d.err == nil {
			ev.Disposition = &model.Disposition{}
			d.err = json.Unmarshal(raw, ev.Disposition)
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = errors.New("bytes after the record")
	}
	if d.err != nil {
		return fmt.Errorf("event %x: %w", k, d.err)
	}
	return nil
}

// canonicalID returns the 16 bytes of id when idString gives id back from them.
func canonicalID(id string) ([]byte, bool) {
	k, err := idKey(id)
	if err != nil || idString(k) != id {
		return nil, false
	}
	return k, true
}

func appendBytes(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendWord(b []byte, s string) []byte {
	if i, ok := eventWordIndex[s]; ok {
		return binary.AppendUvarint(b, uint64(2*i+1))
	}
	b = binary.AppendUvarint(b, uint64(2*len(s)))
	return append(b, s...)
}

func appendList(b []byte, list []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(list)))
	for _, s := range list {
		b = appendWord(b, s)
	}
	return b
}

// recordReader reads the parts of a binary record; the first error sticks and every read
// after it returns zero values.
type recordReader struct {
	b   []byte
	err error
}

func (d *recordReader) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("truncated record (%s)", what)
	}
	d.b = nil
}

func (d *recordReader) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recordReader) next(n int) []byte {
	if n < 0 || n > len(d.b) {
		d.fail("bytes")
		return make([]byte, max(n, 0))
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

// bytes returns a copy: bbolt's memory is valid only inside the transaction.
func (d *recordReader) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("string")
		return nil
	}
	return append([]byte(nil), d.next(int(n))...)
}

func (d *recordReader) word() string {
	v := d.uvarint()
	if v%2 == 1 {
		if v/2 >= uint64(len(eventWords)) {
			d.fail("word")
			return ""
		}
		return eventWords[v/2]
	}
	if v/2 > uint64(len(d.b)) {
		d.fail("word")
		return ""
	}
	return string(d.next(int(v / 2)))
}

func (d *recordReader) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("string")
		return ""
	}
	return string(d.next(int(n)))
}

// list reads a list; an empty one is nil unless set says it was an empty list.
func (d *recordReader) list(set bool) []string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("list")
		return nil
	}
	if n == 0 {
		if set {
			return []string{}
		}
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.word()
	}
	return out
}

func (d *recordReader) time() model.Time {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("time")
		return model.Time{}
	}
	d.b = d.b[n:]
	return model.Time{Time: time.UnixMilli(v).UTC()}
}

func (d *recordReader) float() *float64 {
	f := math.Float64frombits(binary.BigEndian.Uint64(d.next(8)))
	return &f
}
