package e2e

import (
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestField_DeviceClockFast: through the binary, a tablet whose clock runs 3 minutes fast
// syncs offline events with its clock as sent_at: they are applied (not rejected as more
// than 2 minutes in the future), with captured_at on the node's clock and the device's own
// kept as device_captured_at, and the answer says the offset.
func TestField_DeviceClockFast(t *testing.T) {
	bin := binary(t)
	s := serveDemo(t, bin, t.TempDir())
	sup, op := s.login(t, "operational_supervisor"), s.login(t, "field_operator")
	status, _, body := s.call(t, "GET", "/v1/teams", nil, sup...)
	expect(t, "teams", status, 200, body)
	var teamID string
	for _, it := range body["data"].([]any) {
		if tm := it.(map[string]any); tm["name"] == "SAMU Lyon 1" {
			teamID = tm["id"].(string)
		}
	}
	status, _, body = s.call(t, "POST", "/v1/devices/register", map[string]any{"name": "fast tablet", "platform": "android",
		"team_id": teamID, "zone_code": "lyon"}, op...)
	expect(t, "register", status, 201, body)
	deviceID := body["device_id"].(string)

	deviceNow := time.Now().Add(3 * time.Minute)
	var items []any
	var own []string
	for i := range 2 {
		at := deviceNow.Add(time.Duration(i-2) * 10 * time.Second).UTC().Format(model.TimeLayout)
		own = append(own, at)
		items = append(items, map[string]any{"sequence_number": i + 1, "kind": "event", "captured_at": at,
			"payload": map[string]any{"type": "FIRE", "priority": "high", "vertical": "emergency", "idempotency_key": "fast-" + at}})
	}
	status, _, body = s.call(t, "POST", "/v1/devices/sync", map[string]any{"device_id": deviceID, "items": items,
		"sent_at": deviceNow.UTC().Format(model.TimeLayout)}, op...)
	expect(t, "sync from a clock 3 min fast", status, 200, body)
	if off, _ := body["clock_offset_ms"].(float64); off > -170_000 || off < -190_000 || body["clock_flagged"] != nil {
		t.Fatalf("clock_offset_ms %v, want about -180000, not flagged: %v", body["clock_offset_ms"], body)
	}
	var last time.Time
	for i, r := range body["results"].([]any) {
		res := r.(map[string]any)
		if res["status"] != "applied" {
			t.Fatalf("item %d: %v", i, res)
		}
		status, _, ev := s.call(t, "GET", "/v1/events/"+res["event_id"].(string), nil, op...)
		expect(t, "the event", status, 200, ev)
		captured, err := time.Parse(time.RFC3339, ev["captured_at"].(string))
		if err != nil || ev["device_captured_at"] != own[i] {
			t.Fatalf("item %d: captured_at %v (%v), device_captured_at %v, want %s", i, ev["captured_at"], err, ev["device_captured_at"], own[i])
		}
		deviceAt, _ := time.Parse(time.RFC3339, own[i])
		if d := deviceAt.Sub(captured); d < 170*time.Second || d > 190*time.Second || !captured.After(last) {
			t.Fatalf("item %d: captured_at %s is %s before the device's %s, want about 3 min, after %s", i, captured, d, deviceAt, last)
		}
		last = captured
	}
}
