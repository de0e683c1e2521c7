package model_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// AppendJSON must write exactly what json.Marshal writes for the record (the payload
// compacted as json.Marshal would), so that the two never disagree.
func TestEvent_AppendJSON(t *testing.T) {
	str := func(s string) *string { return &s }
	num := func(f float64) *float64 { return &f }
	at := model.At(time.Date(2026, 6, 9, 10, 11, 12, 345e6, time.UTC))
	events := []model.Event{
		{},
		{ID: model.NewID(), Type: "FIRE", Priority: "high", Vertical: "emergency", IdempotencyKey: "k",
			Payload: json.RawMessage(`{"a":1}`), ZoneCode: str("lyon"), Lat: num(45.76404), Lng: num(-4.8e-7),
			Severity: "high", RequiredEquipment: []string{"ladder"}, Status: "pending", ChannelSelected: "rest_full",
			ChannelsAttempted: []string{}, Source: "api", BatchID: str("b"), DeviceID: str("d"), CapturedAt: &at, DeviceCapturedAt: &at,
			Origin: str("node"), CreatedAt: at, UpdatedAt: at, DeliveredAt: &at, ClosedAt: &at,
			Delivery: model.DeliveryState{Plan: []string{"rest_full", "sms"}, Started: 1, Outstanding: 2}},
		{Type: "quote\" back\\slash <html> & \u2028\u2029 \x00\x1f\b\f\n\r\t é 日本 \xff end", Lat: num(0), Lng: num(1e21)},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var sb strings.Builder
		for range rng.IntN(40) {
			sb.WriteRune(rune(rng.IntN(0x3000)))
		}
		f := (rng.Float64() - 0.5) * 360
		events = append(events, model.Event{ID: model.NewID(), Type: sb.String(), Lat: &f, CreatedAt: at})
	}
	for _, ev := range events {
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got := ev.AppendJSON(nil)
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON:\n got %s\nwant %s", got, want)
		}
	}
}

func BenchmarkEvent_AppendJSON(b *testing.B) {
	at := model.At(time.Now())
	lat, lng := 45.7, 4.8
	ev := model.Event{ID: model.NewID(), Type: "MEDICAL_EMERGENCY", Priority: "high", Vertical: "healthcare",
		IdempotencyKey: "bench-1", Payload: json.RawMessage(`{"lat":45.7,"lng":4.8,"description":"` + strings.Repeat("x", 400) + `"}`),
		Lat: &lat, Lng: &lng, Status: "pending", ChannelSelected: "rest_full", ChannelsAttempted: []string{}, Source: "api",
		CreatedAt: at, UpdatedAt: at}
	b.Run("AppendJSON", func(b *testing.B) {
		buf := make([]byte, 0, 2048)
		for b.Loop() {
			buf = ev.AppendJSON(buf[:0])
		}
	})
	b.Run("Marshal", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(ev)
		}
	})
}
