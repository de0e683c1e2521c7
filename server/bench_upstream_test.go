package server_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// upstreamSyncItems is the size of one benchmarked upstream push.
const upstreamSyncItems = 1000

// BenchmarkUpstreamApply measures a central node applying an edge node's push: one POST
// /v1/devices/sync of 1,000 upstream items per op from a fieldrelay-node device, through
// the real router and a real, fsynced store. The mix: 600 upstream_event (new events,
// 300-byte payloads), 200 upstream_dispatch (new dispatches) and 200 upstream_mission, of
// which 100 insert a CREATED mission and 100 move forward a mission the previous op
// inserted (CREATED → COMPLETED: six moves, the stored history a prefix). Every item must
// be applied. It reports the p50 and p99 latency of a push and the items applied per second.
//
//	go test ./server -run XXX -bench UpstreamApply -benchtime 100x
func BenchmarkUpstreamApply(b *testing.B) {
	const nodeID = "0190d5a0-4444-7000-8000-0000000000e1"
	n := newNode(b)
	f := n.addTenant("central", "mission-critical")
	h := n.handler(b)
	dev := n.do("POST", "/v1/devices/register", map[string]any{"name": "fieldrelay node " + nodeID, "platform": "fieldrelay-node",
		"hardware_id": nodeID}, "x-svc-api-key", f.key).want(201).str("device_id")
	pad := strings.Repeat("x", 200)
	edgeTeam := model.NewID()

	newMission := func(evID string, at model.Time) *model.Mission {
		return &model.Mission{ID: model.NewIDAt(at.Time), EventID: evID, TeamID: edgeTeam, Status: model.MissionCreated,
			Code: "ABCDE", Vertical: "healthcare", Priority: "high", Notes: "auto-dispatch", DispatchedAt: at,
			DispatchID: model.NewIDAt(at.Time), DispatchedBy: model.NilID,
			History:   []model.MissionMove{{To: model.MissionCreated, At: at, Actor: model.NilID, Source: engine.MoveSourceSystem}},
			CreatedAt: at, UpdatedAt: at}
	}
	complete := func(m *model.Mission, at model.Time) *model.Mission {
		c := *m
		c.History = slices.Clone(m.History)
		from := c.Status
		for _, to := range []string{model.MissionSent, model.MissionAck, model.MissionOnRoute, model.MissionOnSite, model.MissionCompleted} {
			c.History = append(c.History, model.MissionMove{From: from, To: to, At: at, Actor: model.NilID, Source: engine.MoveSourceDevice})
			from = to
		}
		c.Status, c.UpdatedAt, c.AckAt, c.OnRouteAt, c.OnSiteAt, c.CompletedAt = model.MissionCompleted, at, &at, &at, &at, &at
		c.Feedback = json.RawMessage(`{"outcome":"treated"}`)
		return &c
	}

	var seq int64
	var previous []*model.Mission // inserted by the previous op, moved forward by the next
	item := func(kind string, payload any, at string) map[string]any {
		seq++
		return map[string]any{"sequence_number": seq, "kind": kind, "captured_at": at, "payload": payload}
	}
	// body builds the next push; first (outside any timer) it stores the 100 missions the
	// first push moves forward.
	body := func() string {
		at := n.clock.Now().Add(-time.Second).UTC().Format(model.TimeLayout)
		now := model.At(time.Now())
		items := make([]map[string]any, 0, upstreamSyncItems)
		var inserted []*model.Mission
		for j := range 600 {
			id := model.NewIDAt(now.Time)
			ev := &model.Event{ID: id, Type: "MEDICAL", Priority: "high", Vertical: "healthcare",
				IdempotencyKey: fmt.Sprintf("edge-%d-%d", seq, j), Payload: json.RawMessage(`{"lat":45.5,"lng":4.5,"note":"` + pad + `"}`),
				ZoneCode: upPtr("north"), Lat: upPtr(45.5), Lng: upPtr(4.5), Status: model.EventDelivered, ChannelSelected: model.ChannelREST,
				ChannelsAttempted: []string{model.ChannelREST}, Source: engine.SourceAPI, CreatedAt: now, UpdatedAt: now}
			items = append(items, item("upstream_event", ev, at))
			if j < 200 {
				m := newMission(id, now)
				items = append(items, item("upstream_dispatch", &model.Dispatch{ID: m.DispatchID, TenantID: model.NewID(),
					EventID: id, TeamID: edgeTeam, DispatchedBy: model.NilID, DispatchedAt: now, Notes: m.Notes, MissionID: m.ID}, at))
				if j < 100 {
					items = append(items, item("upstream_mission", m, at))
					inserted = append(inserted, m)
				}
			}
		}
		for _, m := range previous {
			items = append(items, item("upstream_mission", complete(m, now), at))
		}
		previous = inserted
		raw, _ := json.Marshal(map[string]any{"device_id": dev, "items": items})
		return string(raw)
	}
	send := func(raw string) (time.Duration, int) { return benchDeviceSync(b, h, f.key, raw, seq) }
	// A first push outside the timer leaves 100 missions for the first measured one.
	send(body())

	durations := make([]time.Duration, 0, b.N)
	var total time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		n.clock.Advance(time.Second)
		raw := body()
		b.StartTimer()
		d, count := send(raw)
		b.StopTimer()
		if count != upstreamSyncItems {
			b.Fatalf("%d items, want %d", count, upstreamSyncItems)
		}
		durations = append(durations, d)
		total += d
		b.StartTimer()
	}
	b.StopTimer()
	reportSyncFigures(b, durations, total, upstreamSyncItems)
}

func upPtr[T any](v T) *T { return &v }
