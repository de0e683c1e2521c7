package server_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestEvents_PayloadLimit: POST /v1/events refuses a payload of more than 64 KiB of JSON
// with 413 payload_too_large naming the limit
// (docs/decisions/0077-payload-cap-64-kib.md); a sync batch rejects the item only.
func TestEvents_PayloadLimit(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	key := []string{"x-svc-api-key", f.key}
	doc := mustDoc(t)
	withNote := func(idem string, size int) map[string]any {
		b := eventBody(idem)
		// {"note":"…"} of exactly size bytes.
		b["payload"] = map[string]any{"note": strings.Repeat("x", size-len(`{"note":""}`))}
		return b
	}
	res := n.do("POST", "/v1/events", withNote("big", engine.MaxPayloadBytes+1), key...).wantErr(http.StatusRequestEntityTooLarge, "payload_too_large")
	if res.str("field") != "payload" || !strings.Contains(res.str("message"), "65536") {
		t.Fatalf("answer: %s", res.raw)
	}
	if err := doc.checkAnswer("POST", "/v1/events", res.status, res.header.Get("Content-Type"), res.raw); err != nil {
		t.Fatal(err)
	}
	n.do("POST", "/v1/events", withNote("at-limit", engine.MaxPayloadBytes), key...).want(http.StatusCreated)

	batch := n.do("POST", "/v1/sync/batch", map[string]any{"captured_at": "2026-06-09T10:00:00Z", "events": []any{
		withNote("sync-big", engine.MaxPayloadBytes+1), withNote("sync-small", 100)}}, key...).want(http.StatusOK)
	items := batch.body["items"].([]any)
	first, second := items[0].(map[string]any), items[1].(map[string]any)
	if batch.num("accepted") != 1 || batch.num("rejected") != 1 || first["status"] != "rejected" ||
		first["error"].(map[string]any)["code"] != "payload_too_large" || second["status"] != "accepted" {
		t.Fatalf("batch: %s", batch.raw)
	}
}

// TestLists_CappedInBytes: a page of a list holds at most engine.MaxPageBytes of records;
// it ends early with its next_cursor, and the cursors still walk every record once. One
// 900 KB payload made a default GET /v1/events 917 KB before payloads were capped; at
// limit=500 an answer could reach hundreds of MB.
func TestLists_CappedInBytes(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	key := []string{"x-svc-api-key", f.key}
	const events = 70 // of 60 KiB each: 4.1 MiB in all
	for i := range events {
		b := eventBody("bulk-" + string(rune('A'+i/26)) + string(rune('a'+i%26)))
		b["payload"] = map[string]any{"note": strings.Repeat("x", 60<<10)}
		n.do("POST", "/v1/events", b, key...).want(http.StatusCreated)
	}
	// Missions of 300 KB each, written to the store directly (through the API a mission
	// reaches ~100 KB: six moves of 16 KiB feedback), all of one team: both ways the store
	// lists missions.
	team := model.NewID()
	const missions = 16
	err := n.eng.Update(context.Background(), func(tx model.Tx) error {
		for i := range missions {
			at := model.At(time.Date(2026, 6, 9, 9, 0, i, 0, time.UTC))
			m := &model.Mission{ID: model.NewIDAt(at.Time), EventID: model.NewID(), TeamID: team, Status: model.MissionCreated,
				Vertical: "emergency", Priority: "high", Notes: strings.Repeat("n", 300_000), DispatchedAt: at,
				DispatchID: model.NewID(), DispatchedBy: model.NilID, CreatedAt: at, UpdatedAt: at,
				History: []model.MissionMove{{To: model.MissionCreated, At: at, Actor: model.NilID, Source: engine.MoveSourceSystem}}}
			if err := tx.PutMission(f.tenant.ID, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, id string
		total    int
	}{
		{"/v1/events", "event_id", events},
		{"/v1/missions", "id", missions},
		{"/v1/missions?team_id=" + team, "id", missions},
	} {
		t.Run(c.path, func(t *testing.T) {
			n := n.on(t)
			seen := map[string]bool{}
			pages := 0
			cursor := ""
			for range c.total + 1 {
				u := c.path + sep(c.path) + "limit=500"
				if cursor != "" {
					u += "&cursor=" + url.QueryEscape(cursor)
				}
				res := n.do("GET", u, nil, key...).want(http.StatusOK)
				pages++
				if len(res.raw) > model.MaxPageBytes+1024 {
					t.Fatalf("page %d: %d bytes", pages, len(res.raw))
				}
				for _, it := range res.items() {
					seen[it[c.id].(string)] = true
				}
				cursor = res.str("next_cursor")
				if cursor == "" {
					break
				}
			}
			if pages < 2 || len(seen) != c.total {
				t.Fatalf("%d pages, %d distinct records of %d", pages, len(seen), c.total)
			}
		})
	}
}

func sep(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}
