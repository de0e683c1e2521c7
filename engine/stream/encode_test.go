package stream

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestEncodeIsMarshal: a change's data are json.Marshal's bytes for every payload, the
// event and the alert written by their own AppendJSON included (a nil one is null).
func TestEncodeIsMarshal(t *testing.T) {
	at := model.At(time.Date(2026, 11, 28, 14, 0, 0, 123e6, time.UTC))
	zone := "lyon"
	var nilEvent *model.Event
	var nilAlert *model.Alert
	for _, payload := range []any{
		&model.Event{ID: model.NewID(), Type: "FIRE", Priority: "high", Vertical: "emergency", ZoneCode: &zone,
			Payload: json.RawMessage(`{ "a" : "<b>&" }`), Status: "pending", ChannelsAttempted: []string{}, CreatedAt: at, UpdatedAt: at},
		&model.Alert{ID: model.NewID(), Kind: "event_undispatched", Status: "open", Message: "<no team> & \u2028", RaisedAt: at, UpdatedAt: at},
		nilEvent, nilAlert,
		model.Event{ID: model.NewID(), Type: "FLOOD", CreatedAt: at},
		map[string]any{"mission_id": "m", "status": "ACK"},
	} {
		want, err := json.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encode(payload)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("encode(%T) = %s, %v\n          want %s", payload, got, err, want)
		}
	}
}
