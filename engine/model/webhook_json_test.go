package model_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The envelope written by hand is the one json.Marshal writes, whatever the payload.
func TestWebhookEnvelope_AppendJSONMatchesMarshal(t *testing.T) {
	at := model.At(time.Date(2026, 6, 9, 10, 11, 12, 345e6, time.UTC))
	zone := "lyon <3> & co"
	lat := 45.76404
	ev := &model.Event{ID: model.NewID(), Type: "FIRE \u2028", Priority: "high", Vertical: "emergency", IdempotencyKey: "k",
		Payload: json.RawMessage(" {\"a\" : \"<b> & \u2028\",\n \"n\": [1, 2.50] }\t"), ZoneCode: &zone, Lat: &lat, Status: "pending", ChannelSelected: "rest_full",
		ChannelsAttempted: []string{}, Source: "api", CreatedAt: at, UpdatedAt: at}
	var nilEvent *model.Event
	payloads := []any{ev, nilEvent, nil, model.Dispatch{MissionID: model.NewID(), TeamID: "t"}, map[string]any{"x": []int{1, 2}}}
	for _, p := range payloads {
		w := model.WebhookEnvelope{Event: "event.created", Payload: p, TenantID: model.NewID(), OccurredAt: at}
		want, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		got, err := w.AppendJSON([]byte("kept"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, append([]byte("kept"), want...)) {
			t.Fatalf("payload %T:\n got %s\nwant kept%s", p, got, want)
		}
	}
	if _, err := (&model.WebhookEnvelope{Payload: func() {}}).AppendJSON(nil); err == nil {
		t.Fatal("a payload json.Marshal refuses was written")
	}
	// Payloads written as they are, and those json.Marshal compacts or escapes.
	for _, raw := range []string{`{"a":"b c","n":[1,2.5,-3e2],"t":true,"z":null}`, `{"q":"say \"hi\" \\","e":{}}`,
		`{"a": 1}`, "{\"a\":1}\n", `{"a":"\\"}`, `{"a":"x\"<y"}`, `{"a":"&"}`, "{\"a\":\"\u2028\u2029\"}", `{"a":"\u003c"}`,
		`[ ]`, `{"a":"\\\""}`, "{\"\\t\":\"x\"}\t"} {
		c := *ev
		c.Payload = json.RawMessage(raw)
		w := model.WebhookEnvelope{Event: "event.created", Payload: &c, TenantID: "t", OccurredAt: at}
		want, err := json.Marshal(w)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		got, err := w.AppendJSON(nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("payload %q:\n got %s (%v)\nwant %s", raw, got, err, want)
		}
	}
}

func BenchmarkWebhookEnvelope(b *testing.B) {
	at := model.At(time.Now())
	lat, lng := 45.7, 4.8
	ev := &model.Event{ID: model.NewID(), Type: "order.created", Priority: "high", Vertical: "logistics",
		IdempotencyKey: "bench-1", Payload: json.RawMessage(`{"order_id":"ord_00000001","customer":{"id":"cus_000001","tier":"gold","locale":"de-DE"},"amount_cents":1001,"currency":"EUR","items":[{"sku":"SKU-1001","qty":2,"price_cents":1299},{"sku":"SKU-2002","qty":1,"price_cents":4999}],"shipping":{"method":"express","eta_hours":24},"note":"leave at the door, ring twice, call if nobody answers"}`),
		Lat: &lat, Lng: &lng, Status: "pending", ChannelSelected: "rest_full", ChannelsAttempted: []string{}, Source: "api",
		CreatedAt: at, UpdatedAt: at}
	w := model.WebhookEnvelope{Event: "event.created", Payload: ev, TenantID: model.NewID(), OccurredAt: at}
	b.Run("Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(w); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := w.AppendJSON(make([]byte, 0, 1024)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestDeliveryAttempt_AppendJSONMatchesMarshal(t *testing.T) {
	at := model.At(time.Date(2026, 6, 9, 10, 11, 12, 345e6, time.UTC))
	next := model.At(at.Add(5 * time.Second))
	for _, a := range []model.DeliveryAttempt{
		{},
		{ID: model.NewID(), WebhookID: model.NewID(), MessageID: "msg_1", Event: "event.created", Attempt: 1,
			Status: "succeeded", StatusCode: 204, DurationMs: 12, At: at},
		{ID: model.NewID(), WebhookID: model.NewID(), MessageID: "msg_2", Event: "team.dispatched", Attempt: 7,
			Status: "failed", StatusCode: -1, Error: "dial tcp: <refused> & \"gone\" \u2028 é", DurationMs: -3, At: at, NextAttemptAt: &next},
	} {
		want, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.AppendJSON([]byte("kept")); !bytes.Equal(got, append([]byte("kept"), want...)) {
			t.Fatalf("\n got %s\nwant kept%s", got, want)
		}
	}
}
