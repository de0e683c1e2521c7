package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// deviceSyncItems is the size of one benchmarked sync (the target: 500 items,
// p99 ≤ 50 ms with fsync).
const deviceSyncItems = 500

// BenchmarkDeviceSync measures POST /v1/devices/sync of 500 items through the real router
// and a real, fsynced store, one sync per op: 250 events (300-byte payloads), 150 member
// positions, 52 connectivity reports and 48 mission moves (12 missions stored before the
// op, each moved ACK → ON_ROUTE → ON_SITE → COMPLETED in the sync). It reports the p50 and
// p99 latency of a sync and the items applied per second.
//
//	go test ./server -run XXX -bench DeviceSync -benchtime 200x
func BenchmarkDeviceSync(b *testing.B) {
	n := newNode(b)
	f := n.addTenant("bench", "mission-critical")
	h := n.handler(b)
	tid := f.tenant.ID
	var team *model.Team
	err := func() (err error) {
		if _, err := n.eng.CreateZone(context.Background(), tenantAdmin(tid), model.ZoneInput{Code: "north", Name: "North", Boundary: &model.Polygon{
			Type: "Polygon", Coordinates: [][][]float64{{{4, 45}, {5, 45}, {5, 46}, {4, 46}, {4, 45}}}}}, nil); err != nil {
			return err
		}
		team, err = n.eng.CreateTeam(context.Background(), tenantAdmin(tid), model.TeamInput{Name: "Alpha", ZoneCode: "north", Verticals: []string{"healthcare"},
			Members: []model.MemberInput{{Name: "Ann"}, {Name: "Al"}, {Name: "Ava"}}}, nil)
		return err
	}()
	if err != nil {
		b.Fatal(err)
	}
	dev := n.do("POST", "/v1/devices/register", map[string]any{"name": "bench tablet", "platform": "android",
		"team_id": team.ID, "zone_code": "north"}, "x-svc-api-key", f.key).want(201).str("device_id")
	pad := strings.Repeat("x", 200)

	// missions stores 12 CREATED missions of the team (with their events).
	missions := func() []string {
		var ids []string
		err := n.eng.Update(context.Background(), func(tx model.Tx) error {
			ids = ids[:0]
			now := model.At(n.clock.Now())
			for range 12 {
				ev := &model.Event{ID: model.NewIDAt(now.Time), Type: "MEDICAL", Priority: "high", Vertical: "healthcare",
					IdempotencyKey: model.NewID(), Status: model.EventDelivered, ChannelSelected: model.ChannelREST,
					ChannelsAttempted: []string{}, Source: engine.SourceAPI, CreatedAt: now, UpdatedAt: now}
				m := &model.Mission{ID: model.NewIDAt(now.Time), EventID: ev.ID, TeamID: team.ID, Status: model.MissionCreated,
					Vertical: "healthcare", Priority: "high", DispatchedAt: now, DispatchID: model.NewID(), DispatchedBy: model.NilID,
					History:   []model.MissionMove{{To: model.MissionCreated, At: now, Actor: model.NilID, Source: engine.MoveSourceSystem}},
					CreatedAt: now, UpdatedAt: now}
				if err := tx.PutEvent(tid, ev); err != nil {
					return err
				}
				if err := tx.PutMission(tid, m); err != nil {
					return err
				}
				ids = append(ids, m.ID)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return ids
	}
	moves := []string{"ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"}
	var seq int64
	// body builds the next sync of 500 items, captured at the clock's time.
	body := func() string {
		ms := missions()
		at := n.clock.Now().UTC().Format(model.TimeLayout)
		items := make([]map[string]any, 0, deviceSyncItems)
		moveSlot := 0
		for j := range deviceSyncItems {
			seq++
			it := map[string]any{"sequence_number": seq, "captured_at": at}
			switch k := j % 10; {
			case k < 5:
				it["kind"], it["payload"] = "event", map[string]any{"type": "MEDICAL", "priority": "high", "vertical": "healthcare",
					"idempotency_key": fmt.Sprintf("dev-bench-%d", seq), "payload": map[string]any{"lat": 45.5, "lng": 4.5,
						"severity": "high", "note": pad}}
			case k < 8:
				it["kind"], it["payload"] = "location", map[string]any{"member_id": team.Members[j%3].ID,
					"lat": 45 + float64(j)/1000, "lng": 4.5}
			case k == 9 && moveSlot < 48:
				it["kind"], it["payload"] = "mission_status", map[string]any{"mission_id": ms[moveSlot%12],
					"status": moves[moveSlot/12]}
				moveSlot++
			default:
				it["kind"], it["payload"] = "connectivity", map[string]any{"zone_code": "north", "state": "online", "signal_dbm": -70}
			}
			items = append(items, it)
		}
		raw, _ := json.Marshal(map[string]any{"device_id": dev, "items": items})
		return string(raw)
	}

	durations := make([]time.Duration, 0, b.N)
	var total time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		n.clock.Advance(time.Second)
		raw := body()
		b.StartTimer()
		d, _ := benchDeviceSync(b, h, f.key, raw, seq)
		b.StopTimer()
		durations = append(durations, d)
		total += d
		b.StartTimer()
	}
	b.StopTimer()
	reportSyncFigures(b, durations, total, deviceSyncItems)
}

// benchDeviceSync posts one device sync through the router and checks that every item
// was applied and that applied_through is seq; it returns the time the router took and
// how many results came back.
func benchDeviceSync(b *testing.B, h http.Handler, key, raw string, seq int64) (time.Duration, int) {
	req := httptest.NewRequest("POST", "/v1/devices/sync", strings.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-svc-api-key", key)
	w := httptest.NewRecorder()
	t0 := time.Now()
	h.ServeHTTP(w, req)
	d := time.Since(t0)
	if w.Code != 200 {
		b.Fatal(w.Code, w.Body.String())
	}
	var res struct {
		AppliedThrough int64 `json:"applied_through"`
		Results        []struct {
			Status, Message string
		} `json:"results"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || res.AppliedThrough != seq {
		b.Fatalf("applied_through %d, want %d (%v)", res.AppliedThrough, seq, err)
	}
	for _, r := range res.Results {
		if r.Status != "applied" {
			b.Fatalf("an item %s: %s", r.Status, r.Message)
		}
	}
	return d, len(res.Results)
}

// reportSyncFigures reports p50 and p99 of the syncs' durations and the items applied per
// second of sync (perSync items each).
func reportSyncFigures(b *testing.B, durations []time.Duration, total time.Duration, perSync int) {
	slices.Sort(durations)
	at := func(q float64) float64 {
		return float64(durations[min(len(durations)-1, int(q*float64(len(durations))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(float64(perSync*len(durations))/total.Seconds(), "items/s")
}
