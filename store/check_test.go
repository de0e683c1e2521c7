package store_test

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
	"github.com/google/uuid"

	bolt "go.etcd.io/bbolt"
)

// checkFixture is a small consistent database: an event with its key and one delivering
// outbox message, a device with two processed items and one held above a gap.
type checkFixture struct {
	dir                   string
	tenant, event, outbox string
	device                string
	tenantKey, eventKey   []byte
	outboxKey, deviceKey  []byte
	dueKey                []byte
}

func newCheckFixture(t *testing.T) *checkFixture {
	t.Helper()
	f := &checkFixture{dir: t.TempDir()}
	db, err := store.Open(f.dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tn := MustPutTenant(t, db, "chk")
	now := model.At(time.Now())
	ev := &model.Event{ID: model.NewID(), Type: "ALARM", Priority: "low", Vertical: "gov", IdempotencyKey: "k-1",
		Status: model.EventPending, ChannelSelected: model.ChannelREST, Source: engine.SourceAPI, CreatedAt: now, UpdatedAt: now,
		Delivery: model.DeliveryState{Plan: []string{model.ChannelREST}, Started: 1, Outstanding: 1}}
	o := &model.OutboxEntry{ID: model.NewID(), TenantID: tn.ID, Kind: model.OutboxWebhook, WebhookID: model.NewID(),
		Name: engine.HookEventCreated, EventID: ev.ID, Channel: model.ChannelREST, DueAt: now, CreatedAt: now}
	d := &model.Device{ID: model.NewID(), Name: "d", Platform: "android", RegisteredAt: now,
		Sync: model.DeviceSyncState{AppliedThrough: 2, HighestReceived: 4, Waiting: 1}}
	MustUpdate(t, db, func(tx model.Tx) error {
		if err := tx.PutEvent(tn.ID, ev); err != nil {
			return err
		}
		rec := &model.IdempotencyRecord{Reply: model.Reply{Status: 201, RequestID: "r", Body: []byte(`{"event_id":"` + ev.ID + `"}`)}, CreatedAt: now}
		if err := tx.PutEventReply(tn.ID, ev.IdempotencyKey, rec); err != nil {
			return err
		}
		if err := tx.PutOutboxEntry(o); err != nil {
			return err
		}
		if err := tx.PutDevice(tn.ID, d); err != nil {
			return err
		}
		for _, it := range []model.DeviceItem{{Seq: 1, Status: model.ItemApplied, EventID: ev.ID}, {Seq: 2, Status: model.ItemRejected},
			{Seq: 4, Status: model.ItemPending, Kind: engine.ItemLocation}} {
			if err := tx.PutDeviceItem(tn.ID, d.ID, &it); err != nil {
				return err
			}
		}
		return nil
	})
	report, err := db.Check()
	if err != nil {
		t.Fatal(err)
	}
	if !report.OK || report.Counts.Events != 1 || report.Counts.OutboxDue != 1 || report.Counts.DeviceItems != 3 {
		t.Fatalf("a consistent database: %s", store.FormatCheck(report))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	u := func(id string) []byte { x := uuid.MustParse(id); return x[:] }
	f.tenant, f.event, f.outbox, f.device = tn.ID, ev.ID, o.ID, d.ID
	f.tenantKey, f.eventKey, f.outboxKey, f.deviceKey = u(tn.ID), u(ev.ID), u(o.ID), u(d.ID)
	f.dueKey = binary.BigEndian.AppendUint64(nil, uint64(now.UnixMilli()))
	f.dueKey = append(append(f.dueKey, f.tenantKey...), f.outboxKey...)
	return f
}

// tenantBucket returns a nested bucket of the fixture's tenant.
func (f *checkFixture) tenantBucket(tx *bolt.Tx, name string) *bolt.Bucket {
	return tx.Bucket([]byte("t")).Bucket(f.tenantKey).Bucket([]byte(name))
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(f *checkFixture, tx *bolt.Tx) error
		want    string
	}{
		{"a due key lost", func(f *checkFixture, tx *bolt.Tx) error {
			return tx.Bucket([]byte("outbox_due")).Delete(f.dueKey)
		}, "has no outbox_due key"},
		{"an outbox entry lost", func(f *checkFixture, tx *bolt.Tx) error {
			return f.tenantBucket(tx, "outbox").Delete(f.outboxKey)
		}, "has no outbox record"},
		{"an entry and its key lost", func(f *checkFixture, tx *bolt.Tx) error {
			if err := tx.Bucket([]byte("outbox_due")).Delete(f.dueKey); err != nil {
				return err
			}
			return f.tenantBucket(tx, "outbox").Delete(f.outboxKey)
		}, "counts 1 outstanding messages, the outbox and device queues hold 0"},
		{"a due key at the wrong time", func(f *checkFixture, tx *bolt.Tx) error {
			due := tx.Bucket([]byte("outbox_due"))
			if err := due.Delete(f.dueKey); err != nil {
				return err
			}
			k := append([]byte(nil), f.dueKey...)
			k[7]++
			return due.Put(k, nil)
		}, "has no outbox_due key"},
		{"an event's key lost", func(f *checkFixture, tx *bolt.Tx) error {
			return f.tenantBucket(tx, "events_by_idem").Delete([]byte("k-1"))
		}, `idempotency_key "k-1" and no stored reply`},
		{"an event lost", func(f *checkFixture, tx *bolt.Tx) error {
			return f.tenantBucket(tx, "events").Delete(f.eventKey)
		}, `names event "` + "%EVENT%" + `", which does not exist`},
		{"a duplicate event", func(f *checkFixture, tx *bolt.Tx) error {
			b := f.tenantBucket(tx, "events")
			raw := b.Get(f.eventKey)
			id := model.NewID()
			x := uuid.MustParse(id)
			return b.Put(x[:], []byte(strings.Replace(string(raw), f.event, id, 1)))
		}, `idempotency_key "k-1" of tenant`},
		{"a pending item below applied_through", func(f *checkFixture, tx *bolt.Tx) error {
			k := binary.BigEndian.AppendUint64(append([]byte(nil), f.deviceKey...), 2)
			return f.tenantBucket(tx, "device_seq").Put(k, []byte(`{"seq":2,"status":"pending","received_at":"2026-01-01T00:00:00.000Z"}`))
		}, `item 2 of device`},
		{"a waiting item lost", func(f *checkFixture, tx *bolt.Tx) error {
			k := binary.BigEndian.AppendUint64(append([]byte(nil), f.deviceKey...), 4)
			return f.tenantBucket(tx, "device_seq").Delete(k)
		}, "counts 1 waiting items, device_seq holds 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCheckFixture(t)
			writeRaw(t, store.Path(f.dir), func(tx *bolt.Tx) error { return tc.corrupt(f, tx) })
			db, err := store.Open(f.dir, store.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			report, err := db.Check()
			if err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(tc.want, "%EVENT%", f.event)
			text := store.FormatCheck(report)
			if report.OK || report.ProblemCount == 0 || !strings.Contains(text, want) {
				t.Fatalf("want a problem with %q, got:\n%s", want, text)
			}
			if len(report.Bolt) != 0 {
				t.Fatalf("bbolt errors on a file changed through bbolt:\n%s", text)
			}
		})
	}
}
