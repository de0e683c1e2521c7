package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

func TestScore(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	key := []string{"x-svc-api-key", f.key}
	sup := []string{"Authorization", n.login(f.emails[model.RoleOperationalSupervisor])}
	admin := []string{"Authorization", n.login(f.emails[model.RoleCompanyAdmin])}
	lat, lng := 48.9, 2.3
	farLat := 48.9 + 100/111.19508 // about 100 km north: 1/11 < 0.20
	team := func(tenantID, name string, vert, eq []string, lat, lng float64) string {
		var id string
		err := func() error {
			tm, err := n.eng.CreateTeam(context.Background(), tenantAdmin(tenantID), model.TeamInput{Name: name, Verticals: vert, Equipment: eq,
				Members: []model.MemberInput{{Name: name + " lead", Lat: &lat, Lng: &lng}}}, nil)
			if tm != nil {
				id = tm.ID
			}
			return err
		}()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	near := team(f.tenant.ID, "Near", []string{"emergency"}, []string{"Stretcher", "rope"}, lat, lng)
	far := team(f.tenant.ID, "Far", []string{"emergency"}, []string{"stretcher"}, farLat, lng)
	wrong := team(f.tenant.ID, "Logistics", []string{"logistics"}, nil, lat, lng)
	team(other.tenant.ID, "Theirs", []string{"emergency"}, nil, lat, lng)

	body := eventBody("score-1")
	body["payload"].(map[string]any)["required_equipment"] = []string{"stretcher", "boat"}
	eventID := n.do("POST", "/v1/events", body, key...).want(http.StatusCreated).str("event_id")
	otherEvent := n.do("POST", "/v1/events", eventBody("score-x"), "x-svc-api-key", other.key).
		want(http.StatusCreated).str("event_id")

	check := func(t *testing.T, res *response, wantIDs []string, wantEligible []bool) []map[string]any {
		t.Helper()
		items := res.items()
		if res.num("count") != float64(len(wantIDs)) || len(items) != len(wantIDs) {
			t.Fatalf("count: %s", res.raw)
		}
		for i, it := range items {
			if it["team_id"] != wantIDs[i] || it["eligible"] != wantEligible[i] {
				t.Fatalf("item %d: %v; want %s eligible %v: %s", i, it, wantIDs[i], wantEligible[i], res.raw)
			}
			fs, _ := it["factors"].(map[string]any)
			for _, k := range []string{"vertical", "availability", "proximity", "distance_km", "equipment"} {
				if _, ok := fs[k]; !ok {
					t.Fatalf("factor %s missing: %v", k, it)
				}
			}
			if _, ok := it["team_name"].(string); !ok {
				t.Fatalf("team_name missing: %v", it)
			}
		}
		return items
	}

	t.Run("OKWithEvent", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", "/v1/teams/dispatch/score", map[string]any{"event_id": eventID}, sup...).want(http.StatusOK)
		items := check(t, res, []string{near, far, wrong}, []bool{true, false, false})
		first := items[0]
		fs := first["factors"].(map[string]any)
		// Near: on the spot, holds one of the two items asked.
		if first["score"] != 0.5 || fs["proximity"] != 1.0 || fs["distance_km"] != 0.0 || fs["equipment"] != 0.5 ||
			fs["vertical"] != 1.0 || fs["availability"] != 1.0 || first["team_name"] != "Near" {
			t.Fatalf("near: %v", first)
		}
		if d, _ := items[1]["factors"].(map[string]any)["distance_km"].(float64); d < 99 || d > 101 {
			t.Fatalf("far distance: %v", items[1])
		}
		if items[2]["score"] != 0.0 || items[2]["factors"].(map[string]any)["vertical"] != 0.0 {
			t.Fatalf("wrong vertical: %v", items[2])
		}
	})

	t.Run("OKWithVertical", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", "/v1/teams/dispatch/score", map[string]any{"vertical": "emergency", "lat": farLat, "lng": lng,
			"required_equipment": []string{"STRETCHER"}}, admin...).want(http.StatusOK)
		items := check(t, res, []string{far, near, wrong}, []bool{true, false, false})
		if items[0]["score"] != 1.0 {
			t.Fatalf("far on the spot: %v", items[0])
		}
		// No position: every proximity is 0.5 and every distance null.
		res = n.do("POST", "/v1/teams/dispatch/score", map[string]any{"vertical": "emergency"}, sup...).want(http.StatusOK)
		items = check(t, res, []string{far, near, wrong}, []bool{true, true, false}) // ties by name: Far, Near
		for _, it := range items {
			fs := it["factors"].(map[string]any)
			if fs["proximity"] != 0.5 || fs["distance_km"] != nil {
				t.Fatalf("no position: %v", it)
			}
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/teams/dispatch/score", map[string]any{"event_id": otherEvent}, sup...).wantErr(http.StatusNotFound, "not_found")
		n.do("POST", "/v1/teams/dispatch/score", map[string]any{"event_id": model.NewID()}, sup...).wantErr(http.StatusNotFound, "not_found")
	})

	t.Run("BadInput", func(t *testing.T) {
		n := n.on(t)
		for _, tc := range []struct {
			name  string
			body  any
			field string
		}{
			{"no vertical", map[string]any{"lat": 1, "lng": 2}, "vertical"},
			{"empty body", map[string]any{}, "vertical"},
			{"unknown vertical", map[string]any{"vertical": "mining"}, "vertical"},
			{"bad lat", map[string]any{"vertical": "emergency", "lat": 91, "lng": 2}, "lat"},
			{"bad lng", map[string]any{"vertical": "emergency", "lat": 45, "lng": -181}, "lng"},
			{"lat alone", map[string]any{"vertical": "emergency", "lat": 45}, "lng"},
			{"lng alone", map[string]any{"vertical": "emergency", "lng": 4}, "lat"},
			{"lat not a number", map[string]any{"vertical": "emergency", "lat": "north", "lng": 4}, "lat"},
			{"empty equipment", map[string]any{"vertical": "emergency", "required_equipment": []string{" "}}, "required_equipment"},
			{"event_id not an id", map[string]any{"event_id": "abc"}, "event_id"},
		} {
			n.do("POST", "/v1/teams/dispatch/score", tc.body, sup...).wantErr(http.StatusBadRequest, "validation_error", tc.field)
		}
		n.do("POST", "/v1/teams/dispatch/score", "{", sup...).wantErr(http.StatusBadRequest, "invalid_json")
	})

	t.Run("Permissions", func(t *testing.T) {
		n := n.on(t)
		for _, role := range []string{model.RoleCorporateClient, model.RoleFieldOperator} {
			tok := []string{"Authorization", n.login(f.emails[role])}
			n.do("POST", "/v1/teams/dispatch/score", map[string]any{"event_id": eventID}, tok...).wantErr(http.StatusForbidden, "forbidden")
		}
		n.do("POST", "/v1/teams/dispatch/score", map[string]any{"event_id": eventID}).wantErr(http.StatusUnauthorized, "unauthorized")
	})
}
