package e2e

import (
	"testing"
)

// TestCentral_ScoreSeesTeamChanges: the dispatch score of one process, whose store keeps
// the teams it decoded (docs/decisions/0108-postgres-team-cache.md), ranks
// a team as the other process last wrote it: renamed, and its member
// moved from Lyon to Paris.
func TestCentral_ScoreSeesTeamChanges(t *testing.T) {
	bin := binary(t)
	c := serveCentral(t, bin, 2)
	a, b := c.nodes[0], c.nodes[1]
	status, _, tm := a.call(t, "POST", "/v1/teams", map[string]any{"name": "Score team",
		"verticals": []string{"emergency"}, "equipment": []string{"defibrillator"},
		"members": []map[string]any{{"name": "Lead", "phone": "+33611111111", "lat": 45.76, "lng": 4.83}}},
		a.key()...)
	expect(t, "POST /v1/teams on node 1", status, 201, tm)
	id := tm["id"].(string)
	member := tm["members"].([]any)[0].(map[string]any)["id"].(string)
	score := func(want string) map[string]any {
		t.Helper()
		status, _, body := a.call(t, "POST", "/v1/teams/dispatch/score", map[string]any{"vertical": "emergency",
			"lat": 45.76, "lng": 4.83, "required_equipment": []string{"defibrillator"}}, a.key()...)
		expect(t, "POST /v1/teams/dispatch/score on node 1 ("+want+")", status, 200, body)
		for _, it := range body["data"].([]any) {
			if s := it.(map[string]any); s["team_id"] == id {
				return s
			}
		}
		t.Fatalf("the score (%s) lists no team %s: %v", want, id, body)
		return nil
	}
	for range 2 { // the second is served from node 1's cache
		s := score("before")
		if d, _ := s["factors"].(map[string]any)["distance_km"].(float64); s["team_name"] != "Score team" || d > 1 {
			t.Fatalf("score before the changes: %v, want Score team at under 1 km", s)
		}
	}
	status, _, body := b.call(t, "PATCH", "/v1/teams/"+id, map[string]any{"name": "Renamed team"}, b.key()...)
	expect(t, "PATCH /v1/teams/:id on node 2", status, 200, body)
	status, _, body = b.call(t, "PATCH", "/v1/teams/"+id+"/members/"+member+"/location",
		map[string]any{"lat": 48.8566, "lng": 2.3522}, b.key()...)
	expect(t, "PATCH the member's location on node 2", status, 200, body)
	s := score("after")
	if d, _ := s["factors"].(map[string]any)["distance_km"].(float64); s["team_name"] != "Renamed team" || d < 380 || d > 420 {
		t.Fatalf("score on node 1 after node 2's changes: %v, want Renamed team at ~392 km", s)
	}
}
