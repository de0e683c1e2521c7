package store

import (
	"bytes"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"
)

// The index of open events (tbEventsOpen; docs/decisions/0170-open-events.md): one key per
// event that is not closed, kept by PutEvent in the transaction that writes the event, so
// that the events of a dispatch queue are found whatever their age without a scan.

// openKeyLen is an open key's length: rank (1 byte) | event id (16 bytes).
const openKeyLen = 17

func openKey(rank byte, id []byte) []byte {
	k := make([]byte, 0, openKeyLen)
	return append(append(k, rank), id...)
}

// indexOpen files or removes the event of key id in the open index. The write of an event
// that stays open is one read (the key is there already); an event closed drops its key
// under every rank, in case its priority changed while it was open.
func indexOpen(b *bolt.Bucket, id []byte, ev *model.Event) error {
	if ev.Status == model.EventClosed {
		return unindexOpen(b, id)
	}
	rank := model.OpenRank(ev.Priority)
	k := openKey(rank, id)
	if b.Get(k) != nil {
		return nil
	}
	for r := range model.OpenRank("") + 1 {
		if r != rank {
			if err := b.Delete(openKey(r, id)); err != nil {
				return err
			}
		}
	}
	return b.Put(k, nil)
}

// unindexOpen removes an event's keys from the open index (none when it had none).
func unindexOpen(b *bolt.Bucket, id []byte) error {
	for r := range model.OpenRank("") + 1 {
		if err := b.Delete(openKey(r, id)); err != nil {
			return err
		}
	}
	return nil
}

// buildOpenIndex creates a tenant's open index from its events: a file written before the
// index existed gets it at open, once.
func buildOpenIndex(tb *bolt.Bucket) error {
	open, err := tb.CreateBucket(tbEventsOpen)
	if err != nil {
		return err
	}
	events := tb.Bucket(tbEvents)
	if events == nil {
		return nil
	}
	return events.ForEach(func(k, v []byte) error {
		var ev model.Event
		if err := decodeEvent(k, v, &ev); err != nil {
			return err
		}
		if ev.Status == model.EventClosed {
			return nil
		}
		return open.Put(openKey(model.OpenRank(ev.Priority), bytes.Clone(k)), nil)
	})
}

// openEvents lists the open events matching f in dispatcher order (priority, then oldest
// first) from the open index; the cursor is the last open key of the page.
func (t *tx) openEvents(tenantID string, f model.EventFilter, p model.Page) ([]model.Event, string, error) {
	tb, err := t.tenant(tenantID)
	if err != nil {
		return nil, "", err
	}
	events := tb.Bucket(tbEvents)
	c := tb.Bucket(tbEventsOpen).Cursor()
	var k []byte
	if p.Cursor != "" {
		after, err := decodeCursor(p.Cursor, openKeyLen)
		if err != nil {
			return nil, "", err
		}
		if k, _ = c.Seek(after); k != nil && bytes.Equal(k, after) {
			k, _ = c.Next()
		}
	} else {
		k, _ = c.First()
	}
	if f.Priority != "" { // one rank: start there
		rank := []byte{model.OpenRank(f.Priority)}
		if bytes.Compare(k, rank) < 0 {
			k, _ = c.Seek(rank)
		}
	}
	pg := newEventPage(f, p)
	for ; k != nil && k[0] != openAlertMark; k, _ = c.Next() { // the open alerts' keys follow
		if len(k) != openKeyLen {
			continue
		}
		if f.Priority != "" && k[0] > model.OpenRank(f.Priority) {
			break
		}
		id := k[1:]
		if f.Since != nil && uuidMillis(id) < f.Since.UnixMilli() || f.Until != nil && uuidMillis(id) > f.Until.UnixMilli() {
			continue
		}
		v := events.Get(id)
		if v == nil {
			continue
		}
		var ev model.Event
		if err := decodeEvent(id, v, &ev); err != nil {
			return nil, "", err
		}
		if pg.take(k, &ev) {
			return pg.out, encodeCursor(pg.last), nil
		}
	}
	return pg.out, "", nil
}
