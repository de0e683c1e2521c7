package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
)

// dispatchTeam creates an available emergency team in the tenant, with one member at lat, lng.
func (n *node) dispatchTeam(f *tenantFix, name string, lat, lng float64) *engine.Team {
	n.t.Helper()
	var tm *engine.Team
	err := n.eng.Update(context.Background(), func(tx engine.Tx) (err error) {
		tm, err = n.eng.CreateTeam(tx, f.tenant.ID, engine.TeamInput{Name: name, Verticals: []string{"emergency"},
			Members: []engine.MemberInput{{Name: name + " lead", Phone: "+33600000099", Lat: &lat, Lng: &lng}}})
		return err
	})
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
	if mission.str("dispatched_by") != engine.NilID || mission.str("status") != "CREATED" {
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
