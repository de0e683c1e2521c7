package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"
)

// Retention deletes walk the time-ordered keys from the oldest and stop at the first one
// that is recent enough, so a call costs what it deletes, not what the tenant holds.
// Keys are collected first and deleted after the cursor is done (never delete while a
// cursor walks).

func (t *tx) PruneSyncBatches(tenantID string, before time.Time, limit int) (int, error) {
	b, err := t.tbucket(tenantID, tbBatches)
	if err != nil {
		return 0, err
	}
	floor := model.IDFloor(before)
	var old [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && len(old) < limit && bytes.Compare(k, floor[:]) < 0; k, _ = c.Next() {
		old = append(old, bytes.Clone(k))
	}
	return deleteKeys(b, old)
}

func (t *tx) PruneDeliveryAttempts(tenantID string, before time.Time, limit int) (int, error) {
	b, err := t.tbucket(tenantID, tbWebhookDeliveries)
	if err != nil {
		return 0, err
	}
	// Keys are webhook id | attempt id: each webhook's attempts in time order, one range
	// after the other. Each range is read from its start up to the first recent attempt,
	// then the cursor jumps to the next webhook.
	floor := model.IDFloor(before)
	var old [][]byte
	c := b.Cursor()
	k, _ := c.First()
	for k != nil && len(old) < limit {
		if len(k) == 32 && bytes.Compare(k[16:], floor[:]) < 0 {
			old = append(old, bytes.Clone(k))
			k, _ = c.Next()
			continue
		}
		if len(k) < 16 {
			k, _ = c.Next()
			continue
		}
		next := append(bytes.Clone(k[:16]), bytes.Repeat([]byte{0xff}, 16)...)
		if k, _ = c.Seek(next); k != nil && bytes.Equal(k, next) {
			k, _ = c.Next()
		}
	}
	return deleteKeys(b, old)
}

// deleteKeys deletes keys from b and returns how many.
func deleteKeys(b *bolt.Bucket, keys [][]byte) (int, error) {
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

func (t *tx) PruneEvents(tenantID, after string, before time.Time, limit int, keep func(*model.Event) (bool, error)) (int, string, error) {
	b, err := t.tbucket(tenantID, tbEvents)
	if err != nil {
		return 0, "", err
	}
	replies, err := t.tbucket(tenantID, tbEventsByIdem)
	if err != nil {
		return 0, "", err
	}
	var old, idem [][]byte
	next, err := walkOld(b, "event", after, before, limit, decodeEvent, keep, func(k []byte, ev *model.Event) error {
		old = append(old, k)
		if ev.IdempotencyKey != "" {
			idem = append(idem, []byte(ev.IdempotencyKey))
		}
		return nil
	})
	if err != nil {
		return 0, "", err
	}
	if _, err := deleteKeys(replies, idem); err != nil {
		return 0, "", err
	}
	open, err := t.tbucket(tenantID, tbEventsOpen)
	if err != nil {
		return 0, "", err
	}
	for _, k := range old { // an event retention's keep let go leaves no open key behind
		if err := unindexOpen(open, k); err != nil {
			return 0, "", err
		}
	}
	n, err := deleteKeys(b, old)
	return n, next, err
}

func (t *tx) PruneMissions(tenantID, after string, before time.Time, limit int, keep func(*model.Mission) (bool, error)) (int, string, error) {
	tb, err := t.tenant(tenantID)
	if err != nil {
		return 0, "", err
	}
	b := tb.Bucket(tbMissions)
	var old, byEvent, byTeam [][]byte
	next, err := walkOld(b, "mission", after, before, limit, decodeJSON[model.Mission], keep, func(k []byte, m *model.Mission) error {
		ek, err := pair(m.EventID, m.ID)
		if err != nil {
			return err
		}
		tk, err := pair(m.TeamID, m.ID)
		if err != nil {
			return err
		}
		old, byEvent, byTeam = append(old, k), append(byEvent, ek), append(byTeam, tk)
		return nil
	})
	if err != nil {
		return 0, "", err
	}
	if _, err := deleteKeys(tb.Bucket(tbMissionsByEvent), byEvent); err != nil {
		return 0, "", err
	}
	if _, err := deleteKeys(tb.Bucket(tbMissionsByTeam), byTeam); err != nil {
		return 0, "", err
	}
	n, err := deleteKeys(b, old)
	return n, next, err
}

// decodeJSON reads a JSON record (walkOld's decode of a record stored as JSON).
func decodeJSON[T any](_, v []byte, rec *T) error { return json.Unmarshal(v, rec) }

// walkOld walks the records of b (keyed by time-ordered id) after the id after ("": from
// the first) and older than before, at most limit of them, decodes each with decode, and passes each that keep
// does not keep to drop with a copy of its key. next is the id of the last record walked when limit stopped the walk ("" when the walk reached the
// end of what is old), where the next call starts.
func walkOld[T any](b *bolt.Bucket, what, after string, before time.Time, limit int, decode func(k, v []byte, rec *T) error,
	keep func(*T) (bool, error), drop func(k []byte, rec *T) error) (next string, err error) {
	floor := model.IDFloor(before)
	c := b.Cursor()
	var k, v []byte
	if after == "" {
		k, v = c.First()
	} else {
		ak, err := idKey(after)
		if err != nil {
			return "", model.Invalid("after", "not a %s id", what)
		}
		if k, v = c.Seek(ak); k != nil && bytes.Equal(k, ak) {
			k, v = c.Next()
		}
	}
	walked := 0
	for ; k != nil && walked < limit && bytes.Compare(k, floor[:]) < 0; k, v = c.Next() {
		walked++
		var rec T
		if err := decode(k, v, &rec); err != nil {
			return "", fmt.Errorf("decoding %s %x: %w", what, k, err)
		}
		next = idString(k)
		kept, err := keep(&rec)
		if err != nil {
			return "", err
		}
		if !kept {
			if err := drop(bytes.Clone(k), &rec); err != nil {
				return "", err
			}
		}
	}
	if walked < limit {
		next = ""
	}
	return next, nil
}
