package model_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
)

// TestNextMissionState_EveryMove checks every (state, requested state, role) against a
// table written out by hand from docs/rules.md, Mission lifecycle.
func TestNextMissionState_EveryMove(t *testing.T) {
	states := []string{"CREATED", "SENT", "ACK", "ON_ROUTE", "ON_SITE", "COMPLETED", "FAILED"}
	if strings.Join(states, ",") != strings.Join(model.MissionStates, ",") {
		t.Fatalf("MissionStates = %v, want %v", model.MissionStates, states)
	}
	// Which roles move missions at all (missions:manage or missions:receive).
	moves := map[string]bool{
		"company_admin":          true,
		"company_tech":           false,
		"operational_supervisor": true,
		"field_operator":         true,
		"corporate_client":       false,
		"api_user":               false,
	}
	if len(model.Roles) != len(moves) {
		t.Fatalf("engine.Roles = %v, the table knows %d roles", model.Roles, len(moves))
	}
	// allowed[from] lists what a client may ask for; a missing key is a finished mission.
	allowed := map[string][]string{
		"CREATED":  {"ACK", "FAILED"},
		"SENT":     {"ACK", "FAILED"},
		"ACK":      {"ON_ROUTE", "FAILED"},
		"ON_ROUTE": {"ON_SITE", "FAILED"},
		"ON_SITE":  {"COMPLETED", "FAILED"},
	}
	n := 0
	for _, role := range model.Roles {
		manage, receive := model.RoleHas(role, model.PermMissionsManage), model.RoleHas(role, model.PermMissionsReceive)
		want, ok := moves[role]
		if !ok || want != (manage || receive) {
			t.Fatalf("role %s: the table says moves=%v, RoleHas gives manage=%v receive=%v", role, want, manage, receive)
		}
		for _, from := range states {
			for _, to := range states {
				n++
				err := model.NextMissionState(from, to, manage, receive)
				name := role + " " + from + "→" + to
				next, open := allowed[from]
				switch {
				case !want:
					modeltest.AssertKind(t, err, model.KindForbidden)
				case !open:
					modeltest.AssertKind(t, err, model.KindMissionClosed)
				case slices.Contains(next, to):
					if err != nil {
						t.Errorf("%s: %v, want allowed", name, err)
					}
				default:
					e := modeltest.AssertKind(t, err, model.KindInvalidTransition)
					wantMsg := from + " → " + to + " is not allowed; allowed next: " + strings.Join(next, ", ")
					if e.Msg != wantMsg {
						t.Errorf("%s: message %q, want %q", name, e.Msg, wantMsg)
					}
				}
			}
		}
	}
	if n != 7*7*6 {
		t.Fatalf("checked %d combinations, want %d", n, 7*7*6)
	}
}

func TestNextMissionState_PermissionsApart(t *testing.T) {
	// Either permission alone moves a mission along the field path; the system states
	// stay out of reach of both.
	for _, perms := range [][2]bool{{true, false}, {false, true}, {true, true}} {
		if err := model.NextMissionState("SENT", "ACK", perms[0], perms[1]); err != nil {
			t.Fatalf("%v: %v", perms, err)
		}
		modeltest.AssertKind(t, model.NextMissionState("CREATED", "SENT", perms[0], perms[1]), model.KindInvalidTransition)
		modeltest.AssertKind(t, model.NextMissionState("ON_SITE", "CREATED", perms[0], perms[1]), model.KindInvalidTransition)
	}
}

func TestNextMissionState_UnknownStatus(t *testing.T) {
	for _, to := range []string{"", "DONE", "ack", "completed"} {
		modeltest.AssertInvalid(t, model.NextMissionState("ACK", to, false, true), "status")
	}
	// An unknown name is a validation error even on a finished mission.
	modeltest.AssertInvalid(t, model.NextMissionState("COMPLETED", "DONE", true, false), "status")
	// No permission is refused before anything else.
	modeltest.AssertKind(t, model.NextMissionState("ACK", "DONE", false, false), model.KindForbidden)
}

func TestAllowedMissionMoves(t *testing.T) {
	if got := model.AllowedMissionMoves("ON_ROUTE"); strings.Join(got, ",") != "ON_SITE,FAILED" {
		t.Fatalf("AllowedMissionMoves(ON_ROUTE) = %v", got)
	}
	for _, s := range []string{"COMPLETED", "FAILED", "LOST"} {
		if got := model.AllowedMissionMoves(s); got != nil {
			t.Fatalf("AllowedMissionMoves(%s) = %v, want none", s, got)
		}
	}
	e := modeltest.AssertKind(t, model.NextMissionState("ON_ROUTE", "ACK", false, true), model.KindInvalidTransition)
	if e.Msg != "ON_ROUTE → ACK is not allowed; allowed next: ON_SITE, FAILED" {
		t.Fatalf("message %q", e.Msg)
	}
}
