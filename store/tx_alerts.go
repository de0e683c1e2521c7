package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"
)

// Alerts (docs/decisions/0172-shared-alerts.md): by id in tbAlerts; the index of the open
// ones shares the bucket of the open events' index (tbEventsOpen), after its keys:
// 0xff | alert key → the id of its open alert. Two small indexes in one tree rather than
// two, so that a commit that raises alerts for new events writes one branch page for both
// (docs/decisions/0247-open-alerts-beside-open-events.md). An open event's key starts
// with its rank (under 0xff).

// openAlertMark starts the keys of the open alerts' index in tbEventsOpen.
const openAlertMark = 0xff

// openAlertKey is the index key of an alert key.
func openAlertKey(key string) []byte {
	k := make([]byte, 0, 1+len(key))
	return append(append(k, openAlertMark), key...)
}

func (t *tx) Alert(tenantID, id string) (*model.Alert, error) {
	b, err := t.tbucket(tenantID, tbAlerts)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("alert")
	}
	raw := b.Get(k)
	if raw == nil {
		return nil, model.NotFound("alert")
	}
	var a model.Alert
	if err := decodeAlert(k, raw, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// alertPacked is the first byte of a packed alert record: its JSON packed (packJSON: a
// quarter of its size, ids, times and field names being most of an alert), or JSON as files
// before schema version 5 hold it (JSON starts with '{').
const alertPacked = 3

// encodeAlert returns the record of a: packed, or its JSON when it cannot be packed.
func encodeAlert(a *model.Alert) []byte {
	return packRecord(alertPacked, a.AppendJSON(make([]byte, 0, 512)))
}

// decodeAlert reads an alert record, packed or JSON.
func decodeAlert(k, raw []byte, a *model.Alert) error {
	text, err := unpackRecord(alertPacked, raw)
	if err == nil {
		err = json.Unmarshal(text, a)
	}
	if err != nil {
		return fmt.Errorf("decoding alert %x: %w", k, err)
	}
	return nil
}

func (t *tx) OpenAlert(tenantID, key string) (*model.Alert, error) {
	open, err := t.tbucket(tenantID, tbEventsOpen)
	if err != nil {
		return nil, err
	}
	id := open.Get(openAlertKey(key))
	if id == nil {
		return nil, nil
	}
	return t.Alert(tenantID, idString(id))
}

func (t *tx) PutAlert(tenantID string, a *model.Alert) error {
	tb, err := t.tenant(tenantID)
	if err != nil {
		return err
	}
	k, err := idKey(a.ID)
	if err != nil {
		return err
	}
	open := tb.Bucket(tbEventsOpen)
	ok := openAlertKey(a.Key)
	if a.Status == model.AlertOpen {
		if err := open.Put(ok, k); err != nil {
			return err
		}
	} else if held := open.Get(ok); held != nil && bytes.Equal(held, k) {
		if err := open.Delete(ok); err != nil {
			return err
		}
	}
	b := tb.Bucket(tbAlerts)
	b.FillPercent = appendFill
	// bbolt keeps the value until commit: a fresh buffer.
	return b.Put(k, encodeAlert(a))
}

// Alerts lists the open alerts from the index of open keys (a handful), the others by a
// walk of the alerts newest first.
func (t *tx) Alerts(tenantID string, f model.AlertFilter, p model.Page) ([]model.Alert, string, error) {
	tb, err := t.tenant(tenantID)
	if err != nil {
		return nil, "", err
	}
	var after []byte
	if p.Cursor != "" {
		if after, err = decodeCursor(p.Cursor, 16); err != nil {
			return nil, "", err
		}
	}
	b := tb.Bucket(tbAlerts)
	// next answers the key of the next alert to look at, nil at the end.
	var next func() []byte
	if f.Status == "" || f.Status == model.AlertOpen {
		var keys [][]byte
		c := tb.Bucket(tbEventsOpen).Cursor()
		for k, id := c.Seek([]byte{openAlertMark}); k != nil && k[0] == openAlertMark; k, id = c.Next() {
			if after == nil || bytes.Compare(id, after) < 0 {
				keys = append(keys, bytes.Clone(id))
			}
		}
		slices.SortFunc(keys, func(x, y []byte) int { return bytes.Compare(y, x) })
		next = func() []byte {
			if len(keys) == 0 {
				return nil
			}
			k := keys[0]
			keys = keys[1:]
			return k
		}
	} else {
		c := b.Cursor()
		started := false
		next = func() []byte {
			var k []byte
			switch {
			case started:
				k, _ = c.Prev()
			case after != nil:
				k, _ = seekBefore(c, after)
			default:
				k, _ = c.Last()
			}
			started = true
			return bytes.Clone(k)
		}
	}
	out := []model.Alert{}
	var last []byte
	size := 0
	for k := next(); k != nil; k = next() {
		raw := b.Get(k)
		if raw == nil {
			continue
		}
		var a model.Alert
		if err := decodeAlert(k, raw, &a); err != nil {
			return nil, "", err
		}
		if !f.Match(&a) {
			continue
		}
		if p.Full(len(out), size, len(raw)) {
			return out, encodeCursor(last), nil
		}
		out = append(out, a)
		last, size = k, size+len(raw)
	}
	return out, "", nil
}

// moveOpenAlerts moves a tenant's index of open alerts from its own bucket (schema
// version 3 and before: alert key → id in alerts_open) into tbEventsOpen, and drops the
// bucket.
func moveOpenAlerts(tb *bolt.Bucket) error {
	old := tb.Bucket(tbAlertsOpenOld)
	if old == nil {
		return nil
	}
	b := tb.Bucket(tbEventsOpen)
	if err := old.ForEach(func(k, id []byte) error { return b.Put(openAlertKey(string(k)), bytes.Clone(id)) }); err != nil {
		return err
	}
	return tb.DeleteBucket(tbAlertsOpenOld)
}
