package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// A webhook subscription is stored in a binary form (docs/decisions/0245-cpu-per-event.md):
// every attempt of a message reads its subscription before the call and again to write
// its outcome, and the JSON decode of the record (three timestamps parsed from text)
// was the largest part of the delivery loop's own work after the outbox entry. A record
// that starts with '{' is the JSON of a file written before it, and still reads.
//
//	version (1) | presence bits (uvarint) | failed_messages | created_at | updated_at |
//	id | url | secret | status | disabled_reason | events (count | strings) | then, each
//	when its bit is set: last_success_at, reenabled_at.
//
// Numbers are uvarints, times their Unix milliseconds as varints, strings uvarint
// length | bytes.
const webhookV1 = 1

// Presence bits of a webhook record.
const (
	whLastSuccess = 1 << iota
	whReenabled
	// whEventsSet tells an empty list of events from none (null in JSON).
	whEventsSet
)

// encodeWebhook appends w's record to b.
func encodeWebhook(b []byte, w *model.Webhook) []byte {
	var bits uint64
	if w.LastSuccessAt != nil {
		bits |= whLastSuccess
	}
	if w.ReenabledAt != nil {
		bits |= whReenabled
	}
	if w.Events != nil {
		bits |= whEventsSet
	}
	b = append(b, webhookV1)
	b = binary.AppendUvarint(b, bits)
	b = binary.AppendUvarint(b, uint64(max(w.FailedMessages, 0)))
	b = binary.AppendVarint(b, w.CreatedAt.UnixMilli())
	b = binary.AppendVarint(b, w.UpdatedAt.UnixMilli())
	for _, s := range [...]string{w.ID, w.URL, w.Secret, w.Status, w.DisabledReason} {
		b = appendBytes(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(w.Events)))
	for _, e := range w.Events {
		b = appendBytes(b, e)
	}
	for _, t := range [...]*model.Time{w.LastSuccessAt, w.ReenabledAt} {
		if t != nil {
			b = binary.AppendVarint(b, t.UnixMilli())
		}
	}
	return b
}

// decodeWebhook reads the record stored under key k (either form) into w.
func decodeWebhook(k, raw []byte, w *model.Webhook) error {
	if len(raw) > 0 && raw[0] == '{' {
		return json.Unmarshal(raw, w)
	}
	if len(raw) == 0 || raw[0] != webhookV1 {
		return fmt.Errorf("webhook %x: unknown record form", k)
	}
	d := &recordReader{b: raw[1:]}
	bits := d.uvarint()
	*w = model.Webhook{FailedMessages: int(d.uvarint())}
	w.CreatedAt, w.UpdatedAt = d.time(), d.time()
	// In the record's order (encodeWebhook); calls on one line run left to right.
	w.ID, w.URL, w.Secret, w.Status, w.DisabledReason = d.str(), d.str(), d.str(), d.str(), d.str()
	if n := d.uvarint(); n > uint64(len(d.b)) {
		d.fail("list")
	} else if n > 0 || bits&whEventsSet != 0 {
		w.Events = make([]string, n)
		for i := range w.Events {
			w.Events[i] = d.str()
		}
	}
	optTime := func(bit uint64) *model.Time {
		if bits&bit == 0 {
			return nil
		}
		t := d.time()
		return &t
	}
	w.LastSuccessAt = optTime(whLastSuccess)
	w.ReenabledAt = optTime(whReenabled)
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("bytes after the record")
	}
	if d.err != nil {
		return fmt.Errorf("webhook %x: %w", k, d.err)
	}
	return nil
}
