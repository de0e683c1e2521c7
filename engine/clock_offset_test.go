package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestDeviceSync_ClockOffset: a device whose clock is minutes or hours off sends its
// clock as sent_at; its items are applied with captured_at on the node's clock, in order,
// the device's own value kept as device_captured_at, and the answer says the offset. Beyond
// 24 h the clock is flagged and its times are taken as they came (items in the far future
// then rejected, as without sent_at).
func TestDeviceSync_ClockOffset(t *testing.T) {
	f := newDeviceFix(t)
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		skew    time.Duration // the device's clock minus the node's
		sent    bool
		flagged bool
		applied bool
	}{
		{"3 min fast", 3 * time.Minute, true, false, true},
		{"3 min slow", -3 * time.Minute, true, false, true},
		{"2 h fast", 2 * time.Hour, true, false, true},
		{"2 h slow", -2 * time.Hour, true, false, true},
		{"2 days fast, flagged", 48 * time.Hour, true, true, false},
		{"2 days slow, flagged", -48 * time.Hour, true, true, true},
		{"3 min fast without sent_at", 3 * time.Minute, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dev := f.mustRegister(t, f.opA, model.DeviceInput{Name: c.name, Platform: "android", TeamID: f.teamA.ID, ZoneCode: "north"})
			now := f.clock.Now()
			deviceNow := now.Add(c.skew)
			var items []any
			for i := range 3 {
				items = append(items, item(int64(i+1), "event", map[string]any{"type": "FIRE", "vertical": "emergency",
					"priority": "high", "idempotency_key": fmt.Sprintf("%s-%d", c.name, i)}, deviceNow.Add(time.Duration(i-3)*10*time.Second)))
			}
			in := model.DeviceSyncInput{DeviceID: dev.ID, Items: rawItems(t, items...)}
			if c.sent {
				s := deviceNow.UTC().Format(model.TimeLayout)
				in.SentAt = &s
			}
			reply, err := f.e.SyncDevice(ctx, f.opA, nil, in, model.DeviceSyncRender{Event: jsonRender(201), Answer: jsonRender(200)})
			if err != nil {
				t.Fatal(err)
			}
			var res model.DeviceSyncResult
			if err := json.Unmarshal(reply.Body, &res); err != nil {
				t.Fatal(err)
			}
			if c.sent && (res.ClockOffsetMs == nil || *res.ClockOffsetMs != (-c.skew).Milliseconds()) || !c.sent && res.ClockOffsetMs != nil {
				t.Fatalf("clock_offset_ms %v, want %v", res.ClockOffsetMs, (-c.skew).Milliseconds())
			}
			if res.ClockFlagged != c.flagged {
				t.Fatalf("clock_flagged %v, want %v", res.ClockFlagged, c.flagged)
			}
			var last time.Time
			for i, r := range res.Results {
				if !c.applied {
					if r.Status != model.ItemRejected || r.Field != "captured_at" {
						t.Fatalf("item %d: %+v, want rejected on captured_at", i, r)
					}
					continue
				}
				if r.Status != model.ItemApplied || r.EventID == "" {
					t.Fatalf("item %d: %+v, want applied", i, r)
				}
				var ev *model.Event
				if err := f.e.View(ctx, func(tx model.Tx) (err error) { ev, err = tx.Event(f.tenant.ID, r.EventID); return err }); err != nil {
					t.Fatal(err)
				}
				own := deviceNow.Add(time.Duration(i-3) * 10 * time.Second)
				want := own.Add(-c.skew) // on the node's clock
				if c.flagged {
					want = own
				}
				if ev.CapturedAt == nil || !ev.CapturedAt.Equal(want) {
					t.Fatalf("item %d: captured_at %v, want %v", i, ev.CapturedAt, want)
				}
				if c.flagged != (ev.DeviceCapturedAt == nil) || !c.flagged && !ev.DeviceCapturedAt.Equal(own) {
					t.Fatalf("item %d: device_captured_at %v, want %v", i, ev.DeviceCapturedAt, own)
				}
				if !ev.CapturedAt.After(last) {
					t.Fatalf("item %d: captured_at %v not after the previous one's %v", i, ev.CapturedAt, last)
				}
				last = ev.CapturedAt.Time
			}
		})
	}
	dev := f.mustRegister(t, f.opA, model.DeviceInput{Name: "bad clock", Platform: "android", TeamID: f.teamA.ID, ZoneCode: "north"})
	bad := "yesterday"
	_, err := f.e.SyncDevice(ctx, f.opA, nil, model.DeviceSyncInput{DeviceID: dev.ID, Items: rawItems(t), SentAt: &bad},
		model.DeviceSyncRender{Event: jsonRender(201), Answer: jsonRender(200)})
	AssertInvalid(t, err, "sent_at")
}

// TestSyncBatch_ClockOffset: a sync batch from a phone 3 minutes fast, with its clock as
// sent_at, is accepted with its events' captured_at on the node's clock (the phone's kept),
// and its record says the offset.
func TestSyncBatch_ClockOffset(t *testing.T) {
	e, clock := MustOpenEngine(t)
	ct := MustCreateTenant(t, e, "acme")
	key := model.Principal{TenantID: ct.Tenant.ID, TenantActive: true, KeyID: model.NewID(), Scopes: []string{model.PermSyncWrite}}
	phone := clock.Now().Add(3 * time.Minute)
	sent := phone.UTC().Format(model.TimeLayout)
	in := model.SyncBatchInput{CapturedAt: phone.Add(-time.Second).UTC().Format(model.TimeLayout), SentAt: &sent,
		Events: []model.SyncItemInput{{Type: "FIRE", Vertical: "emergency", IdempotencyKey: "fast-1"}}}
	reply, err := e.SyncBatch(context.Background(), key, in, nil, syncRender)
	if err != nil {
		t.Fatal(err)
	}
	var b model.Batch
	if err := json.Unmarshal(reply.Body, &b); err != nil || b.Accepted != 1 || b.ClockOffsetMs == nil ||
		*b.ClockOffsetMs != -(3*time.Minute).Milliseconds() {
		t.Fatalf("batch: %v %s", err, reply.Body)
	}
	var ev *model.Event
	if err := e.View(context.Background(), func(tx model.Tx) (err error) { ev, err = tx.Event(ct.Tenant.ID, *b.Items[0].EventID); return err }); err != nil {
		t.Fatal(err)
	}
	if !ev.CapturedAt.Equal(clock.Now().Add(-time.Second)) || ev.DeviceCapturedAt == nil || !ev.DeviceCapturedAt.Equal(phone.Add(-time.Second)) {
		t.Fatalf("event: captured_at %v, device_captured_at %v", ev.CapturedAt, ev.DeviceCapturedAt)
	}
}
