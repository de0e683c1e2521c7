package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"
)

// jsonRoundTrip is ev as the JSON record read it back: what every reader saw before the
// binary form, and must still see.
func jsonRoundTrip(t *testing.T, ev *model.Event) model.Event {
	t.Helper()
	var out model.Event
	if err := json.Unmarshal(ev.AppendJSON(nil), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// fullEvent has every field set, so that a field added to model.Event and left out of the
// binary form fails TestEventCodec_EveryField.
func fullEvent() *model.Event {
	zone, batch, device, origin := "lyon-3", "01a2193a-0fca-7000-9f5d-298c93139d91", "tablet-7", "edge-1"
	lat, lng := 45.7001, 4.8001
	at := func(d time.Duration) *model.Time {
		v := model.At(time.Date(2026, 6, 9, 10, 11, 12, 345e6, time.UTC).Add(d))
		return &v
	}
	return &model.Event{ID: "01a2193a-0fca-7001-a0f0-c37090f00ec1", Type: "FLOOD", Priority: "high", Vertical: "emergency",
		IdempotencyKey: "field-3b241101-e2bb-4255-8caf-4136c566a962", Payload: json.RawMessage(`{"lat":45.7001,"lng":4.8001,"note":"é\u2028"}`),
		ZoneCode: &zone, Lat: &lat, Lng: &lng, Severity: "high", RequiredEquipment: []string{"pump", "boat"},
		Status: model.EventDelivered, ChannelSelected: "webhook", ChannelsAttempted: []string{"webhook", "sms"},
		Source: "sync_batch", BatchID: &batch, DeviceID: &device, CapturedAt: at(-time.Hour), DeviceCapturedAt: at(-2 * time.Hour),
		Origin: &origin, CreatedAt: *at(0), UpdatedAt: *at(time.Second), DeliveredAt: at(2 * time.Second), ClosedAt: at(3 * time.Second),
		Disposition: &model.Disposition{Code: model.DispositionOther, Note: "gas off \"at the meter\"", ClosedBy: model.NewID(), At: *at(3 * time.Second)},
		Delivery:    model.DeliveryState{Plan: []string{"webhook", "sms"}, Started: 2, Outstanding: 1}}
}

// nonZeroFields fails for each field of v (a struct) left at its zero value.
func nonZeroFields(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	for i := range v.NumField() {
		f, name := v.Field(i), path+v.Type().Field(i).Name
		if f.IsZero() {
			t.Errorf("fullEvent leaves %s unset: set it, and write it in the binary form", name)
		}
		if f.Kind() == reflect.Struct && f.Type() == reflect.TypeFor[model.DeliveryState]() {
			nonZeroFields(t, f, name+".")
		}
	}
}

func TestEventCodec_EveryField(t *testing.T) {
	full := fullEvent()
	nonZeroFields(t, reflect.ValueOf(*full), "")
	bare := &model.Event{ID: full.ID, Type: "ALARM", Priority: "low", Vertical: "gov", Status: model.EventPending,
		Source: "api", CreatedAt: full.CreatedAt, UpdatedAt: full.UpdatedAt}
	empties := *bare
	empties.ChannelsAttempted, empties.Delivery.Plan, empties.RequiredEquipment = []string{}, []string{}, []string{}
	foreign := *full
	other := "BATCH-7"
	foreign.BatchID = &other
	unlisted := *full
	unlisted.Priority, unlisted.Status, unlisted.Severity, unlisted.IdempotencyKey = "p9", "weird", "", "plain key é"
	unlisted.Delivery.Plan, unlisted.ChannelsAttempted = []string{"carrier-pigeon", "sms"}, []string{"carrier-pigeon"}
	zero := *bare
	zero.CreatedAt, zero.UpdatedAt = model.Time{}, model.Time{}
	for name, ev := range map[string]*model.Event{"full": full, "bare": bare, "empty lists": &empties,
		"batch_id not an id": &foreign, "zero times": &zero, "unlisted words": &unlisted} {
		t.Run(name, func(t *testing.T) {
			k, err := idKey(ev.ID)
			if err != nil {
				t.Fatal(err)
			}
			raw := encodeEvent(nil, ev)
			var got model.Event
			if err := decodeEvent(k, raw, &got); err != nil {
				t.Fatal(err)
			}
			want := jsonRoundTrip(t, ev)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded:\n%#v\nthe JSON record reads:\n%#v", got, want)
			}
			if a, b := string(got.AppendJSON(nil)), string(ev.AppendJSON(nil)); a != b {
				t.Errorf("answer:\n%s\nwant:\n%s", a, b)
			}
			if len(raw) >= len(ev.AppendJSON(nil)) {
				t.Errorf("binary record %d bytes, JSON %d", len(raw), len(ev.AppendJSON(nil)))
			}
			// Every truncation is an error, never a panic or a silent success.
			for n := range len(raw) {
				if err := decodeEvent(k, raw[:n], &got); err == nil {
					t.Fatalf("truncated to %d of %d bytes: decoded", n, len(raw))
				}
			}
		})
	}
}

// A file written before the binary form holds JSON records: they still read.
func TestEventCodec_JSONRecord(t *testing.T) {
	ev := fullEvent()
	k, _ := idKey(ev.ID)
	var got model.Event
	if err := decodeEvent(k, ev.AppendJSON(nil), &got); err != nil {
		t.Fatal(err)
	}
	if want := jsonRoundTrip(t, ev); !reflect.DeepEqual(got, want) {
		t.Errorf("decoded:\n%#v\nwant:\n%#v", got, want)
	}
	if err := decodeEvent(k, []byte{9, 1, 2}, &got); err == nil {
		t.Error("an unknown form decoded")
	}
}

// A file of schema version 1 holds events, event replies and sync batch records as JSON:
// after an upgrade they read as before, and new records take the compact forms beside them.
func TestEventCodec_OlderFile(t *testing.T) {
	dir := t.TempDir()
	db := openInternal(t, dir)
	tn := &model.Tenant{ID: model.NewID(), Slug: "older", Name: "Older"}
	ctx := context.Background()
	if err := db.Update(ctx, func(tx model.Tx) error { return tx.PutTenant(tn) }); err != nil {
		t.Fatal(err)
	}
	old := fullEvent()
	batch := &model.Batch{ID: *old.BatchID, CapturedAt: old.CreatedAt, ReceivedAt: old.CreatedAt, Accepted: 1,
		Items: []model.BatchItem{{IdempotencyKey: old.IdempotencyKey, Status: model.ItemAccepted, EventID: &old.ID}}}
	reply := &model.IdempotencyRecord{Reply: model.Reply{Status: 201, Body: []byte(`{"event_id":"` + old.ID + `"}`), RequestID: "req-1"},
		CreatedAt: old.CreatedAt}
	// The records as version 1 wrote them.
	err := db.bolt.Update(func(btx *bolt.Tx) error {
		tk, _ := idKey(tn.ID)
		tb := btx.Bucket(bucketTenantRoot).Bucket(tk)
		k, _ := idKey(old.ID)
		if err := tb.Bucket(tbEvents).Put(k, old.AppendJSON(nil)); err != nil {
			return err
		}
		raw, _ := json.Marshal(batch)
		bk, _ := idKey(batch.ID)
		if err := tb.Bucket(tbBatches).Put(bk, raw); err != nil {
			return err
		}
		v1 := []byte{eventReplyV1, 0, 201, 0, 0, 0, 0, 0, 0, 0, 0, byte(len(reply.RequestID))}
		binary.BigEndian.PutUint64(v1[3:11], uint64(reply.CreatedAt.UnixMilli()))
		v1 = append(append(v1, reply.RequestID...), reply.Body...)
		if err := tb.Bucket(tbEventsByIdem).Put([]byte(old.IdempotencyKey), v1); err != nil {
			return err
		}
		return btx.Bucket(bucketMeta).Put(metaSchemaVersion, []byte("1"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openInternal(t, dir)
	fresh := *old
	fresh.ID, fresh.IdempotencyKey = model.NewID(), "field-"+model.NewID()
	freshBatch := *batch
	freshBatch.ID = model.NewID()
	err = db.Update(ctx, func(tx model.Tx) error {
		if err := tx.PutEvent(tn.ID, &fresh); err != nil {
			return err
		}
		if err := tx.PutSyncBatch(tn.ID, &freshBatch); err != nil {
			return err
		}
		if b, err := tx.SyncBatch(tn.ID, freshBatch.ID); err != nil || !reflect.DeepEqual(*b, freshBatch) {
			t.Errorf("new batch: %+v %v, want %+v", b, err, freshBatch)
		}
		got, err := tx.Event(tn.ID, old.ID)
		if err != nil {
			return err
		}
		if want := jsonRoundTrip(t, old); !reflect.DeepEqual(*got, want) {
			t.Errorf("older event:\n%#v\nwant:\n%#v", *got, want)
		}
		if got, err := tx.Event(tn.ID, fresh.ID); err != nil || string(got.AppendJSON(nil)) != string(fresh.AppendJSON(nil)) {
			t.Errorf("new event: %v %v", got, err)
		}
		list, _, err := tx.Events(tn.ID, model.EventFilter{}, model.Page{Limit: 10})
		if err != nil || len(list) != 2 {
			t.Errorf("both events listed: %d %v", len(list), err)
		}
		b, err := tx.SyncBatch(tn.ID, batch.ID)
		if err != nil || len(b.Items) != 1 || *b.Items[0].EventID != old.ID {
			t.Errorf("older batch: %+v %v", b, err)
		}
		r, err := tx.EventReply(tn.ID, old.IdempotencyKey)
		if err != nil || r == nil || string(r.Body) != string(reply.Body) || r.RequestID != reply.RequestID {
			t.Errorf("older reply: %+v %v", r, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.bolt.View(func(btx *bolt.Tx) error {
		tk, _ := idKey(tn.ID)
		tb := btx.Bucket(bucketTenantRoot).Bucket(tk)
		bk, _ := idKey(freshBatch.ID)
		ek, _ := idKey(fresh.ID)
		if raw := tb.Bucket(tbBatches).Get(bk); raw[0] != batchPacked {
			t.Errorf("a new batch record is not packed: %q", raw)
		}
		if raw := tb.Bucket(tbEvents).Get(ek); raw[0] != eventV2 {
			t.Errorf("a new event record is not in the binary form: %q", raw)
		}
		if v := string(btx.Bucket(bucketMeta).Get(metaSchemaVersion)); v != strconv.Itoa(schemaVersion) {
			t.Errorf("schema version %q after open, want %d", v, schemaVersion)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
