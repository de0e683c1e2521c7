package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"
)

// appendFill is the fill percent of buckets whose keys only grow (UUIDv7): full pages,
// fewer of them to write.
const appendFill = 0.9

// eventFill is the events bucket's: every page filled. A binary event record of a few
// hundred bytes leaves a page 5 to 10 % empty anyway (seven records of 550 bytes fill 3,870
// of 4,096 bytes), room for the updates that follow (delivered_at, channels_attempted)
// without a split; at 0.9 a page would hold six (docs/decisions/0130-bbolt-footprint.md).
const eventFill = 1.0

func (t *tx) Event(tenantID, id string) (*model.Event, error) {
	b, err := t.tbucket(tenantID, tbEvents)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("event")
	}
	raw := b.Get(k)
	if raw == nil {
		return nil, model.NotFound("event")
	}
	var ev model.Event
	if err := decodeEvent(k, raw, &ev); err != nil {
		return nil, err
	}
	return &ev, nil
}

func (t *tx) PutEvent(tenantID string, ev *model.Event) error {
	b, err := t.tbucket(tenantID, tbEvents)
	if err != nil {
		return err
	}
	k, err := idKey(ev.ID)
	if err != nil {
		return err
	}
	b.FillPercent = eventFill
	fresh := b.Get(k) == nil
	// bbolt keeps the value until commit: a fresh buffer, never a pooled one.
	if err := b.Put(k, encodeEvent(make([]byte, 0, 256+len(ev.Payload)), ev)); err != nil {
		return err
	}
	open, err := t.tbucket(tenantID, tbEventsOpen)
	if err != nil {
		return err
	}
	if fresh && ev.Status != model.EventClosed {
		// A new event has no key in the open index under any rank: one Put.
		return open.Put(openKey(model.OpenRank(ev.Priority), k), nil)
	}
	return indexOpen(open, k, ev)
}

// Events walks the events newest first from the cursor (or from until), decoding only what
// the filter needs to see, and stops at since: event keys are time-ordered. Open events
// come from the open index instead (openEvents).
func (t *tx) Events(tenantID string, f model.EventFilter, p model.Page) ([]model.Event, string, error) {
	if f.Open {
		return t.openEvents(tenantID, f, p)
	}
	b, err := t.tbucket(tenantID, tbEvents)
	if err != nil {
		return nil, "", err
	}
	c := b.Cursor()
	var k, v []byte
	switch {
	case p.Cursor != "":
		after, err := decodeCursor(p.Cursor, 16)
		if err != nil {
			return nil, "", err
		}
		k, v = seekBefore(c, after)
	case f.Until != nil:
		// The first key after until's millisecond, then one step back.
		k, v = seekBefore(c, millisKey(f.Until.UnixMilli()+1))
	default:
		k, v = c.Last()
	}
	pg := newEventPage(f, p)
	for ; k != nil; k, v = c.Prev() {
		if f.Since != nil && uuidMillis(k) < f.Since.UnixMilli() {
			break
		}
		var ev model.Event
		if err := decodeEvent(k, v, &ev); err != nil {
			return nil, "", err
		}
		if pg.take(k, &ev) {
			return pg.out, encodeCursor(pg.last), nil
		}
	}
	return pg.out, "", nil
}

// eventPage fills a page of a list of events, the one way both lists (newest first, and
// the open events) take an event: it joins when the filter matches, the page counts the
// bytes of its answer (Event.AppendJSON), and a full page ends at the key of its last event.
type eventPage struct {
	p      model.Page
	match  func(*model.Event) bool
	out    []model.Event
	last   []byte // the key of the last event taken: the next page's cursor
	answer []byte
	size   int // of the page's answer
}

func newEventPage(f model.EventFilter, p model.Page) *eventPage {
	return &eventPage{p: p, match: f.Matcher(), out: []model.Event{}}
}

// take offers ev, read at key k; it answers true when the page is full before it.
func (pg *eventPage) take(k []byte, ev *model.Event) bool {
	if !pg.match(ev) {
		return false
	}
	if pg.p.MaxBytes > 0 {
		pg.answer = ev.AppendJSON(pg.answer[:0])
	}
	if pg.p.Full(len(pg.out), pg.size, len(pg.answer)) {
		return true
	}
	pg.out = append(pg.out, *ev)
	pg.last = bytes.Clone(k)
	pg.size += len(pg.answer)
	return false
}

// seekBefore positions c on the last key strictly before bound.
func seekBefore(c *bolt.Cursor, bound []byte) ([]byte, []byte) {
	k, v := c.Seek(bound)
	if k == nil {
		return c.Last()
	}
	for k != nil && bytes.Compare(k, bound) >= 0 {
		k, v = c.Prev()
	}
	return k, v
}

func (t *tx) EventReply(tenantID, key string) (*model.IdempotencyRecord, error) {
	if key == "" {
		return nil, nil
	}
	b, err := t.tbucket(tenantID, tbEventsByIdem)
	if err != nil {
		return nil, err
	}
	raw := b.Get([]byte(key))
	if raw == nil {
		return nil, nil
	}
	return decodeEventReply(raw)
}

// EventReplies implements model.Tx: one read per key.
func (t *tx) EventReplies(tenantID string, keys []string) (map[string]*model.IdempotencyRecord, error) {
	b, err := t.tbucket(tenantID, tbEventsByIdem)
	if err != nil {
		return nil, err
	}
	out := map[string]*model.IdempotencyRecord{}
	for _, key := range keys {
		if key == "" {
			continue
		}
		if raw := b.Get([]byte(key)); raw != nil {
			r, err := decodeEventReply(raw)
			if err != nil {
				return nil, err
			}
			out[key] = r
		}
	}
	return out, nil
}

// An event reply is stored in a compact binary form, being written once per event:
// version (1) | status (2) | created_at Unix ms (8) | request id length (1) | request id |
// body. Version 2 (eventReplyV2) packs request id and body together (packJSON: the body
// repeats the request id, and holds the event's id and time); version 1 keeps them as
// they are, for a body that cannot be packed, and is what older files hold.
const (
	eventReplyV1 = 1
	eventReplyV2 = 2
)

func encodeEventReply(r *model.IdempotencyRecord) ([]byte, error) {
	if len(r.RequestID) > 255 {
		return nil, fmt.Errorf("request id too long")
	}
	out := make([]byte, 12, 12+len(r.RequestID)+len(r.Body))
	out[0] = eventReplyV2
	binary.BigEndian.PutUint16(out[1:3], uint16(r.Status))
	binary.BigEndian.PutUint64(out[3:11], uint64(r.CreatedAt.UnixMilli()))
	out[11] = byte(len(r.RequestID))
	text := append([]byte(r.RequestID), r.Body...)
	if packed, ok := packJSON(out, text); ok {
		return packed, nil
	}
	out[0] = eventReplyV1
	return append(out, text...), nil
}

func decodeEventReply(raw []byte) (*model.IdempotencyRecord, error) {
	if len(raw) < 12 || (raw[0] != eventReplyV1 && raw[0] != eventReplyV2) {
		return nil, fmt.Errorf("decoding an event reply: malformed record")
	}
	text := raw[12:]
	if raw[0] == eventReplyV2 {
		var err error
		if text, err = unpackJSON(nil, text); err != nil {
			return nil, fmt.Errorf("decoding an event reply: %w", err)
		}
	} else {
		text = bytes.Clone(text)
	}
	n := int(raw[11])
	if len(text) < n {
		return nil, fmt.Errorf("decoding an event reply: malformed record")
	}
	r := &model.IdempotencyRecord{CreatedAt: model.At(time.UnixMilli(int64(binary.BigEndian.Uint64(raw[3:11]))))}
	r.Status = int(binary.BigEndian.Uint16(raw[1:3]))
	r.RequestID = string(text[:n])
	r.Body = text[n:]
	return r, nil
}

func (t *tx) PutEventReply(tenantID, key string, r *model.IdempotencyRecord) error {
	b, err := t.tbucket(tenantID, tbEventsByIdem)
	if err != nil {
		return err
	}
	raw, err := encodeEventReply(r)
	if err != nil {
		return err
	}
	return b.Put([]byte(key), raw)
}

// parkedKey is zone code | 0 | event id.
func parkedKey(zoneCode, eventID string) ([]byte, error) {
	id, err := idKey(eventID)
	if err != nil {
		return nil, err
	}
	k := make([]byte, 0, len(zoneCode)+17)
	k = append(k, zoneCode...)
	k = append(k, 0)
	return append(k, id...), nil
}

func (t *tx) ParkEvent(tenantID, zoneCode, eventID string) error {
	b, err := t.tbucket(tenantID, tbEventsParked)
	if err != nil {
		return err
	}
	k, err := parkedKey(zoneCode, eventID)
	if err != nil {
		return err
	}
	b.FillPercent = appendFill
	return b.Put(k, nil)
}

func (t *tx) UnparkEvent(tenantID, zoneCode, eventID string) error {
	b, err := t.tbucket(tenantID, tbEventsParked)
	if err != nil {
		return err
	}
	k, err := parkedKey(zoneCode, eventID)
	if err != nil {
		return err
	}
	return b.Delete(k)
}

func (t *tx) ParkedEvents(tenantID string, zoneCode *string) ([]model.ParkedRef, error) {
	b, err := t.tbucket(tenantID, tbEventsParked)
	if err != nil {
		return nil, err
	}
	var prefix []byte
	if zoneCode != nil {
		prefix = append([]byte(*zoneCode), 0)
	}
	var out []model.ParkedRef
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) < 17 || k[len(k)-17] != 0 {
			continue
		}
		out = append(out, model.ParkedRef{ZoneCode: string(k[:len(k)-17]), EventID: idString(k[len(k)-16:])})
	}
	return out, nil
}

// dueKey is due time (Unix ms, 8 bytes) | tenant id | entry id: the scheduler's index.
func dueKey(o *model.OutboxEntry) ([]byte, error) {
	k := make([]byte, 8, 40)
	binary.BigEndian.PutUint64(k, uint64(o.DueAt.UnixMilli()))
	ids, err := pair(o.TenantID, o.ID)
	if err != nil {
		return nil, err
	}
	return append(k, ids...), nil
}

func (t *tx) OutboxEntry(tenantID, id string) (*model.OutboxEntry, error) {
	b, err := t.tbucket(tenantID, tbOutbox)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("outbox entry")
	}
	raw := b.Get(k)
	if raw == nil {
		return nil, model.NotFound("outbox entry")
	}
	var o model.OutboxEntry
	if err := decodeOutbox(k, raw, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// outboxDueKey returns the outbox_due key of the stored entry id of tenantID (nil when
// there is none), reading only the record's due time.
func (t *tx) outboxDueKey(b *bolt.Bucket, tenantID, id string, k []byte) ([]byte, error) {
	raw := b.Get(k)
	if raw == nil {
		return nil, nil
	}
	due, err := outboxDueAt(k, raw)
	if err != nil {
		return nil, err
	}
	return dueKey(&model.OutboxEntry{TenantID: tenantID, ID: id, DueAt: model.Time{Time: due}})
}

func (t *tx) PutOutboxEntry(o *model.OutboxEntry) error {
	b, err := t.tbucket(o.TenantID, tbOutbox)
	if err != nil {
		return err
	}
	k, err := idKey(o.ID)
	if err != nil {
		return err
	}
	due := t.btx.Bucket(bucketOutboxDue)
	oldKey, err := t.outboxDueKey(b, o.TenantID, o.ID, k)
	if err != nil {
		return err
	}
	if oldKey != nil {
		if err := due.Delete(oldKey); err != nil {
			return err
		}
	}
	newKey, err := dueKey(o)
	if err != nil {
		return err
	}
	var leased []byte
	if o.LeasedBy != "" {
		leased = []byte{1}
	}
	if err := due.Put(newKey, leased); err != nil {
		return err
	}
	return b.Put(k, encodeOutbox(make([]byte, 0, 160+len(o.Body)), o))
}

func (t *tx) DeleteOutboxEntry(tenantID, id string) error {
	b, err := t.tbucket(tenantID, tbOutbox)
	if model.IsKind(err, model.KindNotFound) {
		return nil // no tenant, no entry
	}
	if err != nil {
		return err
	}
	k, err := idKey(id)
	if err != nil {
		return nil // no entry has such an id
	}
	dk, err := t.outboxDueKey(b, tenantID, id, k)
	if dk == nil || err != nil {
		return err
	}
	if err := t.btx.Bucket(bucketOutboxDue).Delete(dk); err != nil {
		return err
	}
	return b.Delete(k)
}

func (t *tx) DueOutbox() ([]model.OutboxRef, error) {
	var out []model.OutboxRef
	err := t.btx.Bucket(bucketOutboxDue).ForEach(func(k, v []byte) error {
		if len(k) != 40 {
			return nil
		}
		out = append(out, model.OutboxRef{
			DueAt:    time.UnixMilli(int64(binary.BigEndian.Uint64(k[:8]))).UTC(),
			TenantID: idString(k[8:24]), ID: idString(k[24:40]), Leased: len(v) == 1 && v[0] == 1})
		return nil
	})
	return out, err
}

func (t *tx) DueOutboxBefore(until time.Time, limit int) ([]model.OutboxRef, error) {
	var out []model.OutboxRef
	end := until.UnixMilli()
	c := t.btx.Bucket(bucketOutboxDue).Cursor()
	for k, v := c.First(); k != nil && len(out) < limit; k, v = c.Next() {
		if len(k) != 40 {
			continue
		}
		ms := int64(binary.BigEndian.Uint64(k[:8]))
		if ms > end {
			break
		}
		out = append(out, model.OutboxRef{DueAt: time.UnixMilli(ms).UTC(),
			TenantID: idString(k[8:24]), ID: idString(k[24:40]), Leased: len(v) == 1 && v[0] == 1})
	}
	return out, nil
}

// ExpireIdempotency deletes, in every tenant, the stored replies of non-event writes made
// before the given time.
func (t *tx) ExpireIdempotency(before time.Time) (int, error) {
	n := 0
	root := t.btx.Bucket(bucketTenantRoot)
	err := root.ForEachBucket(func(tk []byte) error {
		b := root.Bucket(tk).Bucket(tbIdempotency)
		if b == nil {
			return nil
		}
		var old [][]byte
		err := b.ForEach(func(k, v []byte) error {
			var r struct {
				CreatedAt model.Time `json:"created_at"`
			}
			if err := json.Unmarshal(v, &r); err != nil || r.CreatedAt.Before(before) {
				old = append(old, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range old { // collected first: never delete while a cursor walks
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n += len(old)
		return nil
	})
	return n, err
}
