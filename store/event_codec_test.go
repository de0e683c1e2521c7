package store

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
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
		Delivery: model.DeliveryState{Plan: []string{"webhook", "sms"}, Started: 2, Outstanding: 1}}
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
