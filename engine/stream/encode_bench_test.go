package stream

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// BenchmarkEncodeEvent: an event.created change's data, as encode writes it and as
// json.Marshal did.
func BenchmarkEncodeEvent(b *testing.B) {
	at := model.At(time.Date(2026, 11, 28, 14, 0, 0, 123e6, time.UTC))
	zone, lat, lng := "lyon", 45.753585, 4.810953
	ev := &model.Event{ID: model.NewID(), Type: "ANTENNA_FAULT", Priority: "critical", Vertical: "telecom", IdempotencyKey: "bench-1",
		Payload:  json.RawMessage(`{"lat":45.753585,"lng":4.810953,"severity":"low","required_equipment":["climbing_gear"],"site":"Confluence","description":"entrance; keep the radio on channel 4 and confirm arrival to the dispatch desk."}`),
		ZoneCode: &zone, Lat: &lat, Lng: &lng, Severity: "low", RequiredEquipment: []string{"climbing_gear"}, Status: "pending",
		ChannelSelected: "rest_full", ChannelsAttempted: []string{}, Source: "api", CreatedAt: at, UpdatedAt: at}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encode(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}
