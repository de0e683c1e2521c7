package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// dispatchTeam creates an available emergency team in the tenant, with one member at lat, lng.
func (n *node) dispatchTeam(f *tenantFix, name string, lat, lng float64) *model.Team {
	n.t.Helper()
	var tm *model.Team
	err := func() (err error) {
		tm, err = n.eng.CreateTeam(context.Background(), tenantAdmin(f.tenant.ID), model.TeamInput{Name: name, Verticals: []string{"emergency"},
			Members: []model.MemberInput{{Name: name + " lead", Phone: "+33600000099", Lat: &lat, Lng: &lng}}}, nil)
		return err
	}()
	if err != nil {
		n.t.Fatal(err)
	}
	return tm
}

func TestDispatch(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	sup := []string{"Authorization", n.login(f.emails["operational_supervisor"])}
	otherSup := []string{"Authorization", n.login(other.emails["operational_supervisor"])}
	key := []string{"x-svc-api-key", f.key}
	alpha := n.dispatchTeam(f, "Alpha", 48.9, 2.3)
	bravo := n.dispatchTeam(f, "Bravo", 48.8, 2.3)
	ev := n.do("POST", "/v1/events", eventBody("d-1"), key...).want(http.StatusCreated).str("event_id")

	t.Run("OK", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": ev, "team_id": alpha.ID, "notes": "north gate"},
			sup...).want(http.StatusCreated)
		for _, k := range []string{"id", "tenant_id", "event_id", "team_id", "dispatched_by", "dispatched_at", "notes", "mission_id"} {
			if _, ok := res.body[k]; !ok {
				t.Fatalf("dispatch record field %s missing: %s", k, res.raw)
			}
		}
		if !timeRE.MatchString(res.str("dispatched_at")) || res.str("tenant_id") != f.tenant.ID || res.str("team_id") != alpha.ID {
			t.Fatalf("dispatch record: %s", res.raw)
		}
	})

	t.Run("BusyTeamAndBackup", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": ev, "team_id": alpha.ID}, sup...).
			wantErr(http.StatusConflict, "team_unavailable")
		n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": ev, "team_id": bravo.ID}, sup...).want(http.StatusCreated)
	})

	t.Run("BadInput", func(t *testing.T) {
		n := n.on(t)
		for _, tc := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"team_id": bravo.ID}, "event_id"},
			{map[string]any{"event_id": "nope", "team_id": bravo.ID}, "event_id"},
			{map[string]any{"event_id": ev}, "team_id"},
			{map[string]any{"event_id": ev, "team_id": bravo.ID, "notes": strings.Repeat("n", 2001)}, "notes"},
			{map[string]any{"event_id": ev, "team_id": bravo.ID, "event_lat": 91, "event_lng": 2}, "event_lat"},
			{map[string]any{"event_id": ev, "team_id": bravo.ID, "event_lat": 45}, "event_lng"},
		} {
			n.do("POST", "/v1/teams/dispatch", tc.body, sup...).wantErr(http.StatusBadRequest, "validation_error", tc.field)
		}
	})

	t.Run("PermissionsAndTenants", func(t *testing.T) {
		n := n.on(t)
		client := []string{"Authorization", n.login(f.emails["corporate_client"])}
		n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": ev, "team_id": bravo.ID}, client...).
			wantErr(http.StatusForbidden, "forbidden")
		n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": ev, "team_id": bravo.ID}, otherSup...).
			wantErr(http.StatusNotFound, "not_found")
	})
}

func TestDispatch_TwentyAtOnce(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	sup := []string{"Authorization", n.login(f.emails["operational_supervisor"])}
	team := n.dispatchTeam(f, "Solo", 48.9, 2.3)
	ev := n.do("POST", "/v1/events", eventBody("c-1"), "x-svc-api-key", f.key).want(http.StatusCreated).str("event_id")
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	for i := range statuses {
		wg.Go(func() {
			statuses[i] = n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": ev, "team_id": team.ID}, sup...).status
		})
	}
	wg.Wait()
	created, conflicts := 0, 0
	for _, s := range statuses {
		switch s {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
			conflicts++
		}
	}
	if created != 1 || conflicts != 19 {
		t.Fatalf("statuses %v: want one 201 and nineteen 409", statuses)
	}
}

func TestDispatch_AutoThroughEvents(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	key := []string{"x-svc-api-key", f.key}
	n.do("PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_mode": true, "dispatch_threshold": 0.2}, admin...).want(http.StatusOK)
	team := n.dispatchTeam(f, "Near", 48.9, 2.3)
	first := n.do("POST", "/v1/events", eventBody("auto-1"), key...).want(http.StatusCreated)
	d := first.obj("dispatch")
	if d == nil || d["team_id"] != team.ID || d["mission_id"] == "" || d["score"].(float64) < 0.2 {
		t.Fatalf("auto-dispatch answer: %s", first.raw)
	}
	mission := n.do("GET", "/v1/missions/"+d["mission_id"].(string), nil, admin...).want(http.StatusOK)
	if mission.str("dispatched_by") != model.NilID || mission.str("status") != "CREATED" {
		t.Fatalf("auto-dispatched mission: %s", mission.raw)
	}
	// The only team is busy now: the next event needs a supervisor.
	second := n.do("POST", "/v1/events", eventBody("auto-2"), key...).want(http.StatusCreated)
	if second.body["requires_manual"] != true || second.body["dispatch"] != nil {
		t.Fatalf("second event: %s", second.raw)
	}
	// A replay answers the original, dispatch included.
	again := n.do("POST", "/v1/events", eventBody("auto-1"), key...).want(http.StatusCreated)
	if string(again.raw) != string(first.raw) {
		t.Fatalf("replay: %s", again.raw)
	}
}

// TestDispatch_TeamsNobodyCanReceive: a team with no members is never auto-dispatched, the
// score says why, and a manual dispatch to it needs confirm_empty_team
// (docs/decisions/0076-score-teams-nobody-receives.md). Before, the
// empty team scored proximity
// 0.5, passed the 0.40 threshold and was auto-dispatched over a staffed team 20 km away.
func TestDispatch_TeamsNobodyCanReceive(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	sup := []string{"Authorization", n.login(f.emails["operational_supervisor"])}
	key := []string{"x-svc-api-key", f.key}
	doc := mustDoc(t)
	n.do("PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_mode": true, "dispatch_threshold": 0.4}, admin...).want(http.StatusOK)
	staffed := n.dispatchTeam(f, "Staffed", 48.9-20/111.19508, 2.3) // 20 km from the events: 1/3
	empty := n.do("POST", "/v1/teams", map[string]any{"name": "Empty", "verticals": []string{"emergency"}}, sup...).
		want(http.StatusCreated).str("id")

	ev := n.do("POST", "/v1/events", eventBody("nobody-1"), key...).want(http.StatusCreated)
	if ev.body["requires_manual"] != true || ev.body["dispatch"] != nil {
		t.Fatalf("auto-dispatch: %s", ev.raw)
	}
	eventID := ev.str("event_id")

	res := n.do("POST", "/v1/teams/dispatch/score", map[string]any{"event_id": eventID}, sup...).want(http.StatusOK)
	if err := doc.checkAnswer("POST", "/v1/teams/dispatch/score", res.status, res.header.Get("Content-Type"), res.raw); err != nil {
		t.Fatalf("score answer: %v\n%s", err, res.raw)
	}
	items := res.items()
	if len(items) != 2 || items[0]["team_id"] != staffed.ID || items[1]["team_id"] != empty {
		t.Fatalf("ranking: %s", res.raw)
	}
	fs := items[1]["factors"].(map[string]any)
	if items[1]["eligible"] != false || items[1]["reason"] != engine.ReasonNoMembers || items[1]["score"] != 0.0 ||
		fs["availability"] != 0.0 || fs["position_source"] != engine.PositionUnknown {
		t.Fatalf("the empty team: %v", items[1])
	}
	if items[0]["factors"].(map[string]any)["position_source"] != engine.PositionMember || items[0]["reason"] != engine.ReasonBelowThreshold {
		t.Fatalf("the staffed team: %v", items[0])
	}

	refused := n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": empty}, sup...).
		wantErr(http.StatusConflict, "team_empty")
	if err := doc.checkAnswer("POST", "/v1/teams/dispatch", refused.status, refused.header.Get("Content-Type"), refused.raw); err != nil {
		t.Fatalf("team_empty answer: %v\n%s", err, refused.raw)
	}
	if !strings.Contains(refused.str("message"), "confirm_empty_team") {
		t.Fatalf("the message does not say how to confirm: %s", refused.raw)
	}
	n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": empty, "confirm_empty_team": true}, sup...).
		want(http.StatusCreated)
	n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": staffed.ID}, sup...).
		want(http.StatusCreated)
}
