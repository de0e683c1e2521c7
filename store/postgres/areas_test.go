package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// The areas the conformance suite does not pin yet (outbox, delivery attempts, devices,
// sync batches, usage, the ledger, upstream) and the retries of serializable transactions.

func newStore(t *testing.T) (*postgres.DB, string) {
	t.Helper()
	db := open(t, pgtest.URL(t))
	tn := model.NewID()
	update(t, db, func(tx model.Tx) error {
		return tx.PutTenant(&model.Tenant{ID: tn, Name: "Acme", Slug: "acme-" + tn[:8], Status: "active"})
	})
	return db, tn
}

func update(t *testing.T, db model.Store, fn func(model.Tx) error) {
	t.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func wantKind(t *testing.T, err error, kind model.Kind) {
	t.Helper()
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != kind {
		t.Fatalf("error = %v, want a %s *model.Error", err, kind)
	}
}

func TestOutbox(t *testing.T) {
	db, tn := newStore(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := &model.OutboxEntry{ID: model.NewID(), TenantID: tn, Kind: "webhook", DueAt: model.At(now.Add(time.Minute))}
	b := &model.OutboxEntry{ID: model.NewID(), TenantID: tn, Kind: "sms", DueAt: model.At(now), LeasedBy: "run-1"}
	update(t, db, func(tx model.Tx) error {
		if err := tx.PutOutboxEntry(a); err != nil {
			return err
		}
		return tx.PutOutboxEntry(b)
	})
	update(t, db, func(tx model.Tx) error {
		due, err := tx.DueOutbox()
		if err != nil {
			return err
		}
		want := []model.OutboxRef{{TenantID: tn, ID: b.ID, DueAt: now, Leased: true}, {TenantID: tn, ID: a.ID, DueAt: now.Add(time.Minute)}}
		if !slices.Equal(due, want) {
			t.Errorf("DueOutbox = %+v, want %+v", due, want)
		}
		got, err := tx.OutboxEntry(tn, a.ID)
		if err != nil || got.Kind != "webhook" {
			t.Errorf("OutboxEntry = %+v, %v", got, err)
		}
		// Moving an entry moves it in the due index.
		a.DueAt = model.At(now.Add(-time.Minute))
		if err := tx.PutOutboxEntry(a); err != nil {
			return err
		}
		if err := tx.DeleteOutboxEntry(tn, b.ID); err != nil {
			return err
		}
		if err := tx.DeleteOutboxEntry(tn, b.ID); err != nil { // settled twice: no error
			return err
		}
		due, err = tx.DueOutbox()
		if err != nil || len(due) != 1 || due[0].ID != a.ID || !due[0].DueAt.Equal(now.Add(-time.Minute)) || due[0].Leased {
			t.Errorf("DueOutbox after a move and a delete = %+v, %v", due, err)
		}
		_, err = tx.OutboxEntry(tn, b.ID)
		wantKind(t, err, model.KindNotFound)
		return nil
	})
	err := db.Update(context.Background(), func(tx model.Tx) error {
		return tx.PutOutboxEntry(&model.OutboxEntry{ID: model.NewID(), TenantID: model.NewID(), DueAt: model.At(now)})
	})
	wantKind(t, err, model.KindNotFound)
}

func TestDeliveryAttempts(t *testing.T) {
	db, tn := newStore(t)
	wh := &model.Webhook{ID: model.NewID(), URL: "https://example.com/h", Events: []string{"event.created"}, Status: "active"}
	other := model.NewID()
	var ids []string
	update(t, db, func(tx model.Tx) error {
		if err := tx.PutWebhook(tn, wh); err != nil {
			return err
		}
		for i := range 5 {
			a := &model.DeliveryAttempt{ID: model.NewID(), WebhookID: wh.ID, Attempt: i + 1, Status: "failed"}
			ids = append(ids, a.ID)
			if err := tx.PutDeliveryAttempt(tn, a); err != nil {
				return err
			}
		}
		return tx.PutDeliveryAttempt(tn, &model.DeliveryAttempt{ID: model.NewID(), WebhookID: other, Status: "succeeded"})
	})
	var got []string
	cursor := ""
	for range 10 {
		var page []model.DeliveryAttempt
		var next string
		update(t, db, func(tx model.Tx) (err error) {
			page, next, err = tx.DeliveryAttempts(tn, wh.ID, model.Page{Limit: 2, Cursor: cursor})
			return err
		})
		for _, a := range page {
			got = append(got, a.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	slices.Reverse(ids)
	if !slices.Equal(got, ids) {
		t.Fatalf("DeliveryAttempts in pages = %v, want newest first %v", got, ids)
	}
	err := db.View(context.Background(), func(tx model.Tx) error {
		_, _, err := tx.DeliveryAttempts(tn, wh.ID, model.Page{Cursor: "not a cursor"})
		return err
	})
	wantKind(t, err, model.KindValidation)
	// Deleting the webhook deletes its log, and only its.
	update(t, db, func(tx model.Tx) error { return tx.DeleteWebhook(tn, wh.ID) })
	update(t, db, func(tx model.Tx) error {
		if as, _, err := tx.DeliveryAttempts(tn, wh.ID, model.Page{}); err != nil || len(as) != 0 {
			t.Errorf("attempts of a deleted webhook = %v, %v", as, err)
		}
		if as, _, err := tx.DeliveryAttempts(tn, other, model.Page{}); err != nil || len(as) != 1 {
			t.Errorf("attempts of another webhook = %v, %v", as, err)
		}
		return nil
	})
}

func ptr(s string) *string { return &s }

func TestDevices(t *testing.T) {
	db, tn := newStore(t)
	team := model.NewID()
	d1 := &model.Device{ID: model.NewID(), Name: "one", HardwareID: ptr("hw-1"), TeamID: &team, ZoneCode: ptr("north")}
	d2 := &model.Device{ID: model.NewID(), Name: "two", TeamID: &team}
	update(t, db, func(tx model.Tx) error {
		if err := tx.PutDevice(tn, d1); err != nil {
			return err
		}
		return tx.PutDevice(tn, d2)
	})
	update(t, db, func(tx model.Tx) error {
		d, err := tx.DeviceByHardware(tn, "hw-1")
		if err != nil || d.ID != d1.ID {
			t.Errorf("DeviceByHardware = %+v, %v", d, err)
		}
		_, err = tx.DeviceByHardware(tn, "hw-2")
		wantKind(t, err, model.KindNotFound)
		wantKind(t, tx.PutDevice(tn, &model.Device{ID: model.NewID(), HardwareID: ptr("hw-1")}), model.KindConflict)
		if ids, err := tx.DevicesOfTeam(tn, team); err != nil || !slices.Equal(ids, []string{d1.ID, d2.ID}) {
			t.Errorf("DevicesOfTeam = %v, %v", ids, err)
		}
		if ids, err := tx.DevicesOfZone(tn, "north"); err != nil || !slices.Equal(ids, []string{d1.ID}) {
			t.Errorf("DevicesOfZone = %v, %v", ids, err)
		}
		// Moving the device moves it in the indexes; its hardware id is free again.
		d1.HardwareID, d1.TeamID, d1.ZoneCode = ptr("hw-9"), nil, ptr("south")
		if err := tx.PutDevice(tn, d1); err != nil {
			return err
		}
		if ids, err := tx.DevicesOfTeam(tn, team); err != nil || !slices.Equal(ids, []string{d2.ID}) {
			t.Errorf("DevicesOfTeam after a move = %v, %v", ids, err)
		}
		if ids, err := tx.DevicesOfZone(tn, "north"); err != nil || len(ids) != 0 {
			t.Errorf("DevicesOfZone after a move = %v, %v", ids, err)
		}
		return tx.PutDevice(tn, &model.Device{ID: model.NewID(), HardwareID: ptr("hw-1")})
	})
	// Items by sequence, the walk, the queue.
	update(t, db, func(tx model.Tx) error {
		for _, s := range []int64{1, 2, 3, 5, 8} {
			if err := tx.PutDeviceItem(tn, d2.ID, &model.DeviceItem{Seq: s, Status: "accepted"}); err != nil {
				return err
			}
		}
		for q := int64(1); q <= 4; q++ {
			if err := tx.PutQueueItem(tn, d2.ID, &model.QueueItem{QueueSequence: q, Kind: "mission"}); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, db, func(tx model.Tx) error {
		if it, err := tx.DeviceItem(tn, d2.ID, 5); err != nil || it == nil || it.Seq != 5 {
			t.Errorf("DeviceItem(5) = %+v, %v", it, err)
		}
		if it, err := tx.DeviceItem(tn, d2.ID, 4); err != nil || it != nil {
			t.Errorf("DeviceItem(4) = %+v, %v; want nil", it, err)
		}
		var seen []int64
		err := tx.WalkDeviceItems(tn, d2.ID, 1, func(s int64) bool { seen = append(seen, s); return s < 5 })
		if err != nil || !slices.Equal(seen, []int64{2, 3, 5}) {
			t.Errorf("WalkDeviceItems = %v, %v", seen, err)
		}
		q, err := tx.QueueItems(tn, d2.ID, 1, 2)
		if err != nil || len(q) != 2 || q[0].QueueSequence != 2 || q[1].QueueSequence != 3 {
			t.Errorf("QueueItems = %+v, %v", q, err)
		}
		gone, err := tx.DeleteQueueItems(tn, d2.ID, 3)
		if err != nil || len(gone) != 3 || gone[0].QueueSequence != 1 || gone[2].QueueSequence != 3 {
			t.Errorf("DeleteQueueItems = %+v, %v", gone, err)
		}
		q, err = tx.QueueItems(tn, d2.ID, 0, 10)
		if err != nil || len(q) != 1 || q[0].QueueSequence != 4 {
			t.Errorf("QueueItems after a delete = %+v, %v", q, err)
		}
		return nil
	})
}

func TestSyncBatchesUsageLedger(t *testing.T) {
	db, tn := newStore(t)
	b := &model.Batch{ID: model.NewID(), Accepted: 3}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	update(t, db, func(tx model.Tx) error {
		if err := tx.PutSyncBatch(tn, b); err != nil {
			return err
		}
		for _, c := range []struct {
			day, metric string
			n           uint64
		}{{"2026-05-02", "events", 2}, {"2026-05-01", "events", 1}, {"2026-05-01", "events", 4}, {"2026-05-01", "api", 7}, {"2026-06-01", "events", 1 << 63}} {
			if err := tx.AddUsage(tn, c.day, c.metric, c.n); err != nil {
				return err
			}
		}
		for i, kind := range []string{"dispatch", "dispatch", "sms", "dispatch"} {
			e := &model.LedgerEntry{ID: model.NewIDAt(at.Add(time.Duration(i) * time.Hour)), Kind: kind}
			if err := tx.PutLedgerEntry(tn, e); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, db, func(tx model.Tx) error {
		got, err := tx.SyncBatch(tn, b.ID)
		if err != nil || got.Accepted != 3 {
			t.Errorf("SyncBatch = %+v, %v", got, err)
		}
		_, err = tx.SyncBatch(tn, model.NewID())
		wantKind(t, err, model.KindNotFound)
		cs, err := tx.UsageCounters(tn, "2026-05-01", "2026-06-01")
		want := []model.UsageCounter{{Day: "2026-05-01", Metric: "api", N: 7}, {Day: "2026-05-01", Metric: "events", N: 5},
			{Day: "2026-05-02", Metric: "events", N: 2}, {Day: "2026-06-01", Metric: "events", N: 1 << 63}}
		if err != nil || !slices.Equal(cs, want) {
			t.Errorf("UsageCounters = %v, %v; want %v", cs, err, want)
		}
		n, err := tx.LedgerCount(tn, "dispatch", at, at.Add(3*time.Hour))
		if err != nil || n != 2 {
			t.Errorf("LedgerCount = %d, %v; want 2", n, err)
		}
		wantKind(t, tx.AddUsage(model.NewID(), "2026-05-01", "events", 1), model.KindNotFound)
		return nil
	})
}

func TestUpstream(t *testing.T) {
	db, tn := newStore(t)
	update(t, db, func(tx model.Tx) error {
		_, err := tx.Upstream(tn)
		wantKind(t, err, model.KindNotFound)
		wantKind(t, tx.PutUpstream(&model.UpstreamConfig{TenantID: model.NewID(), URL: "https://c.example"}), model.KindNotFound)
		if err := tx.PutUpstream(&model.UpstreamConfig{TenantID: tn, URL: "https://c.example"}); err != nil {
			return err
		}
		for i := range 4 {
			seq, err := tx.AppendChange(tn, model.LogChange{Kind: model.ChangeEvent, ID: model.NewID(), At: model.At(time.Now())})
			if err != nil || seq != int64(i+1) {
				t.Errorf("AppendChange = %d, %v; want %d", seq, err, i+1)
			}
		}
		return nil
	})
	update(t, db, func(tx model.Tx) error {
		if ids, err := tx.UpstreamTenants(); err != nil || !slices.Equal(ids, []string{tn}) {
			t.Errorf("UpstreamTenants = %v, %v", ids, err)
		}
		cs, err := tx.Changes(tn, 1, 2)
		if err != nil || len(cs) != 2 || cs[0].Seq != 2 || cs[1].Seq != 3 || cs[0].Kind != model.ChangeEvent {
			t.Errorf("Changes = %+v, %v", cs, err)
		}
		// Trimmed to empty, the log never gives a number twice.
		if err := tx.TrimChanges(tn, 4); err != nil {
			return err
		}
		if end, err := tx.ChangeLogEnd(tn); err != nil || end != 4 {
			t.Errorf("ChangeLogEnd = %d, %v", end, err)
		}
		seq, err := tx.AppendChange(tn, model.LogChange{Kind: model.ChangeMission, ID: model.NewID(), At: model.At(time.Now())})
		if err != nil || seq != 5 {
			t.Errorf("AppendChange after a trim = %d, %v", seq, err)
		}
		return nil
	})
}

// Concurrent read-modify-write transactions of one global row run one after the other
// (the row read FOR UPDATE; of the first inserts, the unique key keeps one and the others
// run again, whole), and the hooks of a run that did not commit never run
// (docs/decisions/0236-read-committed.md).
func TestReadModifyWriteConcurrent(t *testing.T) {
	db, _ := newStore(t)
	const workers, each = 6, 10
	var runs, hooks atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Go(func() {
			for range each {
				errs <- db.Update(context.Background(), func(tx model.Tx) error {
					runs.Add(1)
					v, err := tx.Meta("counter")
					if err != nil {
						return err
					}
					n := 0
					if v != nil {
						fmt.Sscan(string(v), &n)
					}
					tx.OnCommit(func() { hooks.Add(1) })
					return tx.PutMeta("counter", fmt.Appendf(nil, "%d", n+1))
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var v []byte
	if err := db.View(context.Background(), func(tx model.Tx) (err error) { v, err = tx.Meta("counter"); return err }); err != nil {
		t.Fatal(err)
	}
	if string(v) != fmt.Sprint(workers*each) || hooks.Load() != workers*each {
		t.Fatalf("counter = %s, hooks run %d; want %d each", v, hooks.Load(), workers*each)
	}
	t.Logf("%d commits took %d runs", workers*each, runs.Load())
}

// An event's payload comes back byte for byte: its keys in the caller's order, and the
// escapes jsonb would refuse (docs/decisions/0091-postgres-schema.md).
func TestEventPayloadVerbatim(t *testing.T) {
	db, tn := newStore(t)
	payload := `{"z": 1, "a": "nul \u0000 here", "m": [1.50, 2e3]}`
	now := time.Now()
	ev := &model.Event{ID: model.NewIDAt(now), Type: "incident", Priority: "high", Vertical: "fire",
		Status: model.EventPending, Payload: []byte(payload), CreatedAt: model.At(now)}
	update(t, db, func(tx model.Tx) error { return tx.PutEvent(tn, ev) })
	update(t, db, func(tx model.Tx) error {
		got, err := tx.Event(tn, ev.ID)
		if err != nil || string(got.Payload) != payload {
			t.Errorf("payload = %s, %v; want %s", got.Payload, err, payload)
		}
		return nil
	})
}

// Concurrent ingests of one tenant add to the same usage counters: every transaction commits
// (none runs out of retries) and the report sums every addition once.
func TestUsageUnderConcurrentIngest(t *testing.T) {
	db, tn := newStore(t)
	const workers, each = 32, 8
	var runs atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Go(func() {
			for range each {
				errs <- db.Batch(context.Background(), tn, func(tx model.Tx) error {
					runs.Add(1)
					ev := &model.Event{ID: model.NewID(), Type: "FIRE", Priority: "low", Vertical: "emergency",
						Status: "pending", CreatedAt: model.At(time.Now())}
					if err := tx.PutEvent(tn, ev); err != nil {
						return err
					}
					if err := tx.AddUsage(tn, "2026-11-26", "events.priority.low", 1); err != nil {
						return err
					}
					return tx.AddUsage(tn, "2026-11-26", "events.channel.rest_full", 2)
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []model.UsageCounter
	if err := db.View(context.Background(), func(tx model.Tx) (err error) {
		got, err = tx.UsageCounters(tn, "2026-11-26", "2026-11-26")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want := []model.UsageCounter{{Day: "2026-11-26", Metric: "events.channel.rest_full", N: 2 * workers * each},
		{Day: "2026-11-26", Metric: "events.priority.low", N: workers * each}}
	if !slices.Equal(got, want) {
		t.Fatalf("usage = %+v, want %+v", got, want)
	}
	t.Logf("%d commits took %d runs", workers*each, runs.Load())
}
