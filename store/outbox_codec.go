package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// An outbox entry is stored in a binary form (docs/decisions/0245-cpu-per-event.md):
// every attempt of a message reads its entry, and settling it reads it again, so the JSON
// record (its body, the webhook envelope, validated and copied by each decode) cost the
// delivery loop more than the call did. A record that starts with '{' is the JSON of a
// file written before it, and still reads.
//
//	version (1) | due_at | attempts | last_status | created_at | id | tenant_id | kind |
//	webhook_id | name | to | text | user_id | token_kind | event_id | channel | mission_id |
//	last_error | leased_by | body (the rest of the record)
//
// A time is its Unix milliseconds as a varint (model.Time holds no more), a number a
// varint, a string uvarint length | bytes. due_at comes first: moving or deleting an
// entry reads only it, to find the entry's key in outbox_due.
const outboxV1 = 1

// encodeOutbox appends o's record to b.
func encodeOutbox(b []byte, o *model.OutboxEntry) []byte {
	b = append(b, outboxV1)
	b = binary.AppendVarint(b, o.DueAt.UnixMilli())
	b = binary.AppendVarint(b, int64(o.Attempts))
	b = binary.AppendVarint(b, int64(o.LastStatus))
	b = binary.AppendVarint(b, o.CreatedAt.UnixMilli())
	for _, s := range [...]string{o.ID, o.TenantID, o.Kind, o.WebhookID, o.Name, o.To, o.Text, o.UserID,
		o.TokenKind, o.EventID, o.Channel, o.MissionID, o.LastError, o.LeasedBy} {
		b = appendBytes(b, s)
	}
	return append(b, o.Body...)
}

// decodeOutbox reads the record stored under key k (either form) into o.
func decodeOutbox(k, raw []byte, o *model.OutboxEntry) error {
	if len(raw) > 0 && raw[0] == '{' {
		return json.Unmarshal(raw, o)
	}
	if len(raw) == 0 || raw[0] != outboxV1 {
		return fmt.Errorf("outbox entry %x: unknown record form", k)
	}
	d := &recordReader{b: raw[1:]}
	*o = model.OutboxEntry{DueAt: d.time()}
	o.Attempts, o.LastStatus = int(d.varint()), int(d.varint())
	o.CreatedAt = d.time()
	// In the record's order (encodeOutbox); calls on one line run left to right.
	o.ID, o.TenantID, o.Kind, o.WebhookID, o.Name = d.str(), d.str(), d.str(), d.str(), d.str()
	o.To, o.Text, o.UserID, o.TokenKind = d.str(), d.str(), d.str(), d.str()
	o.EventID, o.Channel, o.MissionID, o.LastError, o.LeasedBy = d.str(), d.str(), d.str(), d.str(), d.str()
	if d.err != nil {
		return fmt.Errorf("outbox entry %x: %w", k, d.err)
	}
	if len(d.b) > 0 {
		// A copy: bbolt's memory is valid only inside the transaction.
		o.Body = json.RawMessage(append([]byte(nil), d.b...))
	}
	return nil
}

// outboxDueAt reads the due time of an entry's record (either form), and only it when
// the record is binary.
func outboxDueAt(k, raw []byte) (time.Time, error) {
	if len(raw) > 0 && raw[0] == outboxV1 {
		d := &recordReader{b: raw[1:]}
		t := d.time()
		if d.err != nil {
			return time.Time{}, fmt.Errorf("outbox entry %x: %w", k, d.err)
		}
		return t.Time, nil
	}
	var o model.OutboxEntry
	if err := decodeOutbox(k, raw, &o); err != nil {
		return time.Time{}, err
	}
	return o.DueAt.Time, nil
}

func (d *recordReader) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return v
}
