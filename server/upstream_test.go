package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestUpstream_CentralNode replicates the records of an edge node to a central node as the
// edge pushes them: the records as the edge's own API returns them, sent as upstream_*
// items of a fieldrelay-node device through POST /v1/devices/sync. The central node lists
// and filters them by origin; another tenant sees none of them.
func TestUpstream_CentralNode(t *testing.T) {
	const nodeID = "0190d5a0-3333-7000-8000-0000000000e1"
	edge := newNode(t)
	ef := edge.addTenant("site", "core")
	es := newMissionSeed(edge, ef)
	ekey := []string{"x-svc-api-key", ef.key}
	evID := es.event("edge-ev-1")
	dispatch := edge.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": evID, "team_id": es.teamA.ID, "notes": "go"}, ekey...).
		want(http.StatusCreated)
	missionID := dispatch.str("mission_id")
	edge.do("PATCH", "/v1/missions/"+missionID+"/status", map[string]any{"status": "ACK"}, ekey...).want(http.StatusOK)
	record := func(path string) json.RawMessage {
		return edge.do("GET", path, nil, ekey...).want(http.StatusOK).raw
	}
	event, mission := record("/v1/events/"+evID), record("/v1/missions/"+missionID)

	central := newNode(t)
	cf := central.addTenant("hq", "core")
	other := central.addTenant("other", "core")
	ckey := []string{"x-svc-api-key", cf.key}
	reg := map[string]any{"name": "fieldrelay node " + nodeID, "platform": "fieldrelay-node", "hardware_id": nodeID}
	dev := central.do("POST", "/v1/devices/register", reg, ckey...).want(http.StatusCreated).str("device_id")
	if again := central.do("POST", "/v1/devices/register", reg, ckey...).want(http.StatusOK).str("device_id"); again != dev {
		t.Fatalf("re-registration gave %s, want %s", again, dev)
	}
	at := central.clock.Now().Add(-time.Minute).UTC().Format("2006-01-02T15:04:05.000Z")
	item := func(seq int, kind string, payload json.RawMessage) map[string]any {
		return map[string]any{"sequence_number": seq, "kind": kind, "captured_at": at, "payload": payload}
	}
	items := []any{item(1, "upstream_event", event), item(2, "upstream_dispatch", dispatch.raw),
		item(3, "upstream_mission", mission), item(4, "upstream_mission", mission)}
	res := central.do("POST", "/v1/devices/sync", map[string]any{"device_id": dev, "items": items}, ckey...).want(http.StatusOK)
	want := []string{"applied", "applied", "applied", "duplicate"}
	for i, r := range res.list("results") {
		if r["status"] != want[i] {
			t.Fatalf("result %d: %v, want %s (%s)", i, r, want[i], res.raw)
		}
	}
	if res.num("applied_through") != 4 {
		t.Fatalf("applied_through: %s", res.raw)
	}
	// The same items again (a push that resumes from an old applied_through): duplicates.
	res = central.do("POST", "/v1/devices/sync", map[string]any{"device_id": dev, "items": items}, ckey...).want(http.StatusOK)
	for _, r := range res.list("results") {
		if r["status"] != "duplicate" {
			t.Fatalf("replay: %s", res.raw)
		}
	}
	// An ack-only sync tells the edge where the central node stands.
	if ack := central.do("POST", "/v1/devices/sync", map[string]any{"device_id": dev, "items": []any{}}, ckey...).want(http.StatusOK); ack.num("applied_through") != 4 {
		t.Fatalf("ack-only: %s", ack.raw)
	}

	// Listed by origin, and read one by one, as the edge stored them.
	evs := central.do("GET", "/v1/events?origin="+nodeID, nil, ckey...).want(http.StatusOK)
	if evs.num("count") != 1 {
		t.Fatalf("events of origin: %s", evs.raw)
	}
	got := evs.list("data")[0]
	if got["event_id"] != evID || got["source"] != "upstream" || got["origin"] != nodeID {
		t.Fatalf("event: %v", got)
	}
	one := central.do("GET", "/v1/events/"+evID, nil, ckey...).want(http.StatusOK)
	var orig map[string]any
	_ = json.Unmarshal(event, &orig)
	for _, k := range []string{"created_at", "updated_at", "idempotency_key", "status", "channel_selected", "type", "priority"} {
		if one.body[k] != orig[k] {
			t.Errorf("event %s: %v, the edge has %v", k, one.body[k], orig[k])
		}
	}
	ms := central.do("GET", "/v1/missions?origin="+nodeID, nil, ckey...).want(http.StatusOK)
	if ms.num("count") != 1 || ms.list("data")[0]["id"] != missionID || ms.list("data")[0]["status"] != "ACK" {
		t.Fatalf("missions of origin: %s", ms.raw)
	}
	// By the edge's team, which the central node does not know.
	if byTeam := central.do("GET", "/v1/missions?team_id="+es.teamA.ID, nil, ckey...).want(http.StatusOK); byTeam.num("count") != 1 {
		t.Fatalf("missions of the edge's team: %s", byTeam.raw)
	}
	m := central.do("GET", "/v1/missions/"+missionID, nil, ckey...).want(http.StatusOK)
	if m.str("origin") != nodeID || len(m.body["history"].([]any)) != 3 {
		t.Fatalf("mission: %s", m.raw)
	}
	// Nothing local matches the origin filter, and no other origin lists them.
	if none := central.do("GET", "/v1/events?origin=0190d5a0-0000-7000-8000-000000000000", nil, ckey...).want(http.StatusOK); none.num("count") != 0 {
		t.Fatalf("another origin: %s", none.raw)
	}
	// The central node's field operator sees no mission of the edge's teams.
	op := []string{"Authorization", central.login(cf.emails["field_operator"])}
	if opList := central.do("GET", "/v1/missions", nil, op...).want(http.StatusOK); opList.num("count") != 0 {
		t.Fatalf("field operator: %s", opList.raw)
	}
	central.do("GET", "/v1/missions/"+missionID, nil, op...).wantErr(http.StatusNotFound, "not_found")

	// Another tenant: nothing listed, 404 on the ids, and the node device is not its own.
	okey := []string{"x-svc-api-key", other.key}
	for _, path := range []string{"/v1/events?origin=" + nodeID, "/v1/missions?origin=" + nodeID, "/v1/events", "/v1/missions"} {
		if l := central.do("GET", path, nil, okey...).want(http.StatusOK); l.num("count") != 0 {
			t.Fatalf("another tenant %s: %s", path, l.raw)
		}
	}
	central.do("GET", "/v1/events/"+evID, nil, okey...).wantErr(http.StatusNotFound, "not_found")
	central.do("GET", "/v1/missions/"+missionID, nil, okey...).wantErr(http.StatusNotFound, "not_found")
	central.do("POST", "/v1/devices/sync", map[string]any{"device_id": dev, "items": items}, okey...).wantErr(http.StatusNotFound, "not_found")

	// A device that is not a node: upstream items forbidden, item by item.
	tablet := central.do("POST", "/v1/devices/register", map[string]any{"name": "tablet", "platform": "android", "hardware_id": nodeID + "-x"},
		ckey...).want(http.StatusCreated).str("device_id")
	res = central.do("POST", "/v1/devices/sync", map[string]any{"device_id": tablet, "items": items[:1]}, ckey...).want(http.StatusOK)
	if r := res.list("results")[0]; r["status"] != "rejected" || r["error"] != "forbidden" {
		t.Fatalf("tablet: %s", res.raw)
	}
}
