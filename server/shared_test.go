package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
)

// TestConsoleAndFieldShare: /shared/ serves what the two web apps share as their own
// files are served (strict CSP, an ETag), and its two tables are the engine's:
// moves.json the mission lifecycle (docs/rules.md), roles.json the roles in order.
func TestConsoleAndFieldShare(t *testing.T) {
	n := newNode(t)
	for _, p := range []string{"/shared/app.css", "/shared/dom.js", "/shared/api.js", "/shared/moves.js", "/shared/moves.json", "/shared/roles.json"} {
		res, body := get(t, n, p)
		if res.StatusCode != 200 || res.Header.Get("Content-Security-Policy") != server.ConsoleCSP ||
			res.Header.Get("ETag") == "" || res.Header.Get("Cache-Control") != "no-cache" || len(body) == 0 {
			t.Errorf("%s: %d %v", p, res.StatusCode, res.Header)
		}
	}
	n.do("GET", "/shared/nope.js", nil).wantErr(http.StatusNotFound, "not_found")
	n.do("GET", "/shared/", nil).want(http.StatusNotFound)

	res, body := get(t, n, "/shared/moves.json")
	var moves struct {
		States []string            `json:"states"`
		Moves  map[string][]string `json:"moves"`
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &moves) != nil {
		t.Fatalf("moves.json: %d %v %s", res.StatusCode, res.Header, body)
	}
	if !slices.Equal(moves.States, model.MissionStates) || len(moves.Moves) != len(model.MissionStates) {
		t.Fatalf("moves.json: %s", body)
	}
	for _, from := range model.MissionStates {
		got, ok := moves.Moves[from]
		if !ok || got == nil || !slices.Equal(got, model.AllowedMissionMoves(from)) {
			t.Errorf("moves.json: from %s %v, want %v", from, got, model.AllowedMissionMoves(from))
		}
		for _, to := range model.MissionStates {
			err := model.NextMissionState(from, to, true, true)
			if (err == nil) != slices.Contains(got, to) {
				t.Errorf("moves.json: %s → %s listed %v, the engine says %v", from, to, slices.Contains(got, to), err)
			}
		}
	}

	_, body = get(t, n, "/shared/roles.json")
	var roles struct {
		Order []string `json:"order"`
	}
	if json.Unmarshal(body, &roles) != nil || !slices.Equal(roles.Order, model.Roles) {
		t.Fatalf("roles.json order: %s", body)
	}
}
