package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"
)

// maxProblems bounds the problems a check lists (ProblemCount has them all).
const maxProblems = 100

// CheckReport is what Check found: the errors of bbolt's own page check and the
// problems of fieldrelay's indexes, with what was counted.
type CheckReport struct {
	// OK is true when neither bbolt nor fieldrelay found anything wrong.
	OK bool `json:"ok"`
	// Bolt lists bbolt's Tx.Check errors (pages, freelist, key order).
	Bolt []string `json:"bolt"`
	// Problems lists the first inconsistencies between fieldrelay's records and indexes;
	// ProblemCount counts them all.
	Problems     []string `json:"problems"`
	ProblemCount int      `json:"problem_count"`
	// Counts are the records checked, by kind.
	Counts CheckCounts `json:"counts"`
	// Footprint is where the file's bytes go (check --stats; nil otherwise).
	Footprint *FootprintReport `json:"footprint,omitempty"`
}

// CheckCounts are the records a check read.
type CheckCounts struct {
	Tenants        int `json:"tenants"`
	Events         int `json:"events"`
	EventKeys      int `json:"event_keys"`
	OutboxEntries  int `json:"outbox_entries"`
	OutboxDue      int `json:"outbox_due"`
	Devices        int `json:"devices"`
	DeviceItems    int `json:"device_items"`
	DeviceQueue    int `json:"device_queue"`
	PendingEvents  int `json:"pending_events"`
	OutstandingMsg int `json:"outstanding_messages"`
}

func (r *CheckReport) problem(format string, args ...any) {
	r.ProblemCount++
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// Check reads the whole database in one read transaction: bbolt's Tx.Check (every page
// reachable once, the freelist, key order), then fieldrelay's own invariants:
//   - outbox_due ↔ outbox: every index key names an existing entry whose due time and
//     lease it reflects, and every entry has its index key;
//   - events ↔ events_by_idem: every event's idempotency_key names it, every stored
//     reply names an existing event of that key, and no key names two events;
//   - the outbox is complete: each event's outstanding delivery count equals its
//     delivering outbox entries plus the device queue items that carry it, and a pending
//     event with a started plan has something outstanding;
//   - device_seq: every device item belongs to a device; nothing up to a device's
//     applied_through is pending; the items above it number its waiting count; none is
//     above highest_received; an applied event item names an existing event.
//
// The error is an error reading the file, not a problem found.
func (db *DB) Check() (*CheckReport, error) {
	r := &CheckReport{Bolt: []string{}, Problems: []string{}}
	err := db.bolt.View(func(btx *bolt.Tx) error {
		for cerr := range btx.Check() {
			r.Bolt = append(r.Bolt, cerr.Error())
		}
		return checkRecords(btx, r)
	})
	if err != nil {
		return nil, err
	}
	r.OK = len(r.Bolt) == 0 && r.ProblemCount == 0
	return r, nil
}

// checkRecords runs fieldrelay's own checks.
func checkRecords(btx *bolt.Tx, r *CheckReport) error {
	root := btx.Bucket(bucketTenantRoot)
	due := btx.Bucket(bucketOutboxDue)
	if root == nil || due == nil {
		r.problem("root bucket t or outbox_due is missing")
		return nil
	}
	// outbox_due → outbox.
	err := due.ForEach(func(k, v []byte) error {
		r.Counts.OutboxDue++
		if len(k) != 40 {
			r.problem("outbox_due: key %x is not due|tenant|entry", k)
			return nil
		}
		tenant, id := idString(k[8:24]), idString(k[24:40])
		tb := root.Bucket(k[8:24])
		if tb == nil {
			r.problem("outbox_due: entry %s names tenant %s, which does not exist", id, tenant)
			return nil
		}
		raw := tb.Bucket(tbOutbox).Get(k[24:40])
		if raw == nil {
			r.problem("outbox_due: entry %s of tenant %s has no outbox record", id, tenant)
			return nil
		}
		var o model.OutboxEntry
		if err := decodeOutbox(k[24:40], raw, &o); err != nil {
			r.problem("outbox: entry %s of tenant %s does not decode: %v", id, tenant, err)
			return nil
		}
		if want := uint64(o.DueAt.UnixMilli()); binary.BigEndian.Uint64(k[:8]) != want {
			r.problem("outbox_due: entry %s of tenant %s indexed at %d ms, due at %d ms", id, tenant,
				binary.BigEndian.Uint64(k[:8]), want)
		}
		if leased := len(v) == 1 && v[0] == 1; leased != (o.LeasedBy != "") {
			r.problem("outbox_due: entry %s of tenant %s: index lease %v, record leased by %q", id, tenant, leased, o.LeasedBy)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return root.ForEachBucket(func(tk []byte) error {
		r.Counts.Tenants++
		return checkTenant(root.Bucket(tk), idString(tk), due, r)
	})
}

// checkTenant runs the checks of one tenant's buckets.
func checkTenant(tb *bolt.Bucket, tenant string, due *bolt.Bucket, r *CheckReport) error {
	for _, name := range tenantBuckets {
		if tb.Bucket(name) == nil {
			r.problem("tenant %s: bucket %s is missing", tenant, name)
			return nil
		}
	}
	// Outbox → outbox_due, and the delivering messages of each event.
	outstanding := map[string]int{} // event id → delivering messages (outbox and device queues)
	err := tb.Bucket(tbOutbox).ForEach(func(k, v []byte) error {
		r.Counts.OutboxEntries++
		var o model.OutboxEntry
		if err := decodeOutbox(k, v, &o); err != nil {
			r.problem("outbox: entry %x of tenant %s does not decode: %v", k, tenant, err)
			return nil
		}
		if o.TenantID != tenant || o.ID != idString(k) {
			r.problem("outbox: entry %x of tenant %s is recorded as %s of tenant %s", k, tenant, o.ID, o.TenantID)
			return nil
		}
		dk, err := dueKey(&o)
		if err != nil {
			r.problem("outbox: entry %s of tenant %s: %v", o.ID, tenant, err)
			return nil
		}
		if due.Get(dk) == nil {
			r.problem("outbox: entry %s of tenant %s (due %s) has no outbox_due key: the scheduler would never see it",
				o.ID, tenant, o.DueAt.UTC().Format(model.TimeLayout))
		}
		if o.EventID != "" && o.Channel != "" {
			outstanding[o.EventID]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = tb.Bucket(tbDeviceQueue).ForEach(func(k, v []byte) error {
		r.Counts.DeviceQueue++
		var q model.QueueItem
		if err := json.Unmarshal(v, &q); err != nil {
			r.problem("device_queue: item %x of tenant %s does not decode: %v", k, tenant, err)
			return nil
		}
		if q.Kind == model.QueueEvent && q.EventID != "" {
			outstanding[q.EventID]++
		}
		return nil
	})
	if err != nil {
		return err
	}

	// Events ↔ events_by_idem, and each event's outstanding messages.
	events := tb.Bucket(tbEvents)
	byKey := map[string]string{} // idempotency key → the first event id seen with it
	err = events.ForEach(func(k, v []byte) error {
		r.Counts.Events++
		var ev model.Event
		if err := decodeEvent(k, v, &ev); err != nil {
			r.problem("events: event %x of tenant %s does not decode: %v", k, tenant, err)
			return nil
		}
		if ev.ID != idString(k) {
			r.problem("events: event %x of tenant %s is recorded as %s", k, tenant, ev.ID)
		}
		if n := outstanding[ev.ID]; n != ev.Delivery.Outstanding {
			r.problem("outbox: event %s of tenant %s (%s) counts %d outstanding messages, the outbox and device queues hold %d",
				ev.ID, tenant, ev.Status, ev.Delivery.Outstanding, n)
		}
		delete(outstanding, ev.ID)
		if ev.Status == model.EventPending && ev.Delivery.Started > 0 && ev.Delivery.Outstanding == 0 {
			r.problem("outbox: event %s of tenant %s is pending with %d channel(s) started and no message outstanding",
				ev.ID, tenant, ev.Delivery.Started)
		}
		if ev.Status == model.EventPending {
			r.Counts.PendingEvents++
		}
		r.Counts.OutstandingMsg += ev.Delivery.Outstanding
		if ev.IdempotencyKey == "" {
			return nil
		}
		if first, dup := byKey[ev.IdempotencyKey]; dup {
			r.problem("events: idempotency_key %q of tenant %s names two events, %s and %s", ev.IdempotencyKey, tenant, first, ev.ID)
			return nil
		}
		byKey[ev.IdempotencyKey] = ev.ID
		if id, ok := replyEventID(tb.Bucket(tbEventsByIdem).Get([]byte(ev.IdempotencyKey)), r, tenant, ev.IdempotencyKey); ok && id != ev.ID {
			r.problem("events_by_idem: key %q of tenant %s names event %q, but event %s has that key", ev.IdempotencyKey, tenant, id, ev.ID)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for id, n := range outstanding {
		r.problem("outbox: %d delivering message(s) of tenant %s name event %s, which does not exist", n, tenant, id)
	}
	err = tb.Bucket(tbEventsByIdem).ForEach(func(k, v []byte) error {
		r.Counts.EventKeys++
		if _, ok := byKey[string(k)]; !ok {
			id, _ := replyEventID(v, r, tenant, string(k))
			r.problem("events_by_idem: key %q of tenant %s names event %q, which does not exist (or has another key)", k, tenant, id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return checkDevices(tb, tenant, events, r)
}

// replyEventID reads the event_id of a stored event reply; ok is false (and a problem is
// recorded) when there is none.
func replyEventID(raw []byte, r *CheckReport, tenant, key string) (string, bool) {
	if raw == nil {
		r.problem("events_by_idem: tenant %s has an event with idempotency_key %q and no stored reply", tenant, key)
		return "", false
	}
	rec, err := decodeEventReply(raw)
	if err != nil {
		r.problem("events_by_idem: key %q of tenant %s: %v", key, tenant, err)
		return "", false
	}
	var acc struct {
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal(rec.Body, &acc); err != nil || acc.EventID == "" {
		r.problem("events_by_idem: key %q of tenant %s: the stored reply names no event_id", key, tenant)
		return "", false
	}
	return acc.EventID, true
}

// checkDevices checks each device's sequence records against its sync state.
func checkDevices(tb *bolt.Bucket, tenant string, events *bolt.Bucket, r *CheckReport) error {
	type seen struct {
		above   int64 // items above applied_through
		highest int64
	}
	devices := map[string]*model.Device{}
	err := tb.Bucket(tbDevices).ForEach(func(k, v []byte) error {
		r.Counts.Devices++
		var d model.Device
		if err := json.Unmarshal(v, &d); err != nil {
			r.problem("devices: device %x of tenant %s does not decode: %v", k, tenant, err)
			return nil
		}
		devices[string(k)] = &d
		return nil
	})
	if err != nil {
		return err
	}
	per := map[string]*seen{}
	err = tb.Bucket(tbDeviceSeq).ForEach(func(k, v []byte) error {
		r.Counts.DeviceItems++
		if len(k) != 24 {
			r.problem("device_seq: key %x of tenant %s is not device|sequence", k, tenant)
			return nil
		}
		d := devices[string(k[:16])]
		if d == nil {
			r.problem("device_seq: an item of tenant %s names device %s, which does not exist", tenant, idString(k[:16]))
			return nil
		}
		seq := int64(binary.BigEndian.Uint64(k[16:]))
		var it model.DeviceItem
		if err := json.Unmarshal(v, &it); err != nil {
			r.problem("device_seq: item %d of device %s does not decode: %v", seq, d.ID, err)
			return nil
		}
		if it.Seq != seq {
			r.problem("device_seq: item %d of device %s is recorded as %d", seq, d.ID, it.Seq)
		}
		s := per[d.ID]
		if s == nil {
			s = &seen{}
			per[d.ID] = s
		}
		s.highest = max(s.highest, seq)
		if seq > d.Sync.AppliedThrough {
			s.above++
		} else if it.Status != model.ItemApplied && it.Status != model.ItemRejected {
			r.problem("device_seq: item %d of device %s is %q at or below applied_through %d", seq, d.ID, it.Status, d.Sync.AppliedThrough)
		}
		if it.Status == model.ItemApplied && it.EventID != "" {
			if ek, err := idKey(it.EventID); err != nil || events.Get(ek) == nil {
				r.problem("device_seq: item %d of device %s created event %s, which does not exist", seq, d.ID, it.EventID)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, d := range devices {
		s := per[d.ID]
		if s == nil {
			s = &seen{}
		}
		st := d.Sync
		switch {
		case st.AppliedThrough > st.HighestReceived:
			r.problem("devices: device %s has applied_through %d above highest_received %d", d.ID, st.AppliedThrough, st.HighestReceived)
		case s.highest > st.HighestReceived:
			r.problem("devices: device %s holds item %d above highest_received %d", d.ID, s.highest, st.HighestReceived)
		case s.above != st.Waiting:
			r.problem("devices: device %s counts %d waiting items, device_seq holds %d above applied_through %d",
				d.ID, st.Waiting, s.above, st.AppliedThrough)
		case st.AckThrough > st.QueueLast:
			r.problem("devices: device %s has ack_through %d above queue_last %d", d.ID, st.AckThrough, st.QueueLast)
		}
	}
	return nil
}

// FormatCheck renders a report for people.
func FormatCheck(r *CheckReport) string {
	var b strings.Builder
	c := r.Counts
	fmt.Fprintf(&b, "bbolt check: %d error(s)\n", len(r.Bolt))
	for _, e := range r.Bolt {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	fmt.Fprintf(&b, "fieldrelay check: %d problem(s)\n", r.ProblemCount)
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	if r.ProblemCount > len(r.Problems) {
		fmt.Fprintf(&b, "  … and %d more\n", r.ProblemCount-len(r.Problems))
	}
	fmt.Fprintf(&b, "checked %d tenant(s): %d events (%d keys, %d pending, %d messages outstanding), %d outbox entries (%d due keys), %d devices (%d sequence records, %d queue items)\n",
		c.Tenants, c.Events, c.EventKeys, c.PendingEvents, c.OutstandingMsg, c.OutboxEntries, c.OutboxDue, c.Devices, c.DeviceItems, c.DeviceQueue)
	if r.OK {
		b.WriteString("OK\n")
	}
	return b.String()
}
