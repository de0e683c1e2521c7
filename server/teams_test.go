package server_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"
)

// userID logs in as email and returns the user's id.
func (n *node) userID(email string) string {
	n.t.Helper()
	res := n.do("POST", "/v1/auth/login", map[string]any{"email": email, "password": testPassword}).want(http.StatusOK)
	id, _ := res.obj("user")["id"].(string)
	if id == "" {
		n.t.Fatalf("login without a user id: %s", res.raw)
	}
	return id
}

func (r *response) members() []map[string]any {
	var out []map[string]any
	list, _ := r.body["members"].([]any)
	for _, it := range list {
		m, _ := it.(map[string]any)
		out = append(out, m)
	}
	return out
}

func TestTeams(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	super := []string{"Authorization", n.login(f.emails["operational_supervisor"])}
	operator := []string{"Authorization", n.login(f.emails["field_operator"])}
	client := []string{"Authorization", n.login(f.emails["corporate_client"])}
	otherAdmin := []string{"Authorization", n.login(other.emails["company_admin"])}
	operatorID := n.userID(f.emails["field_operator"])
	n.do("POST", "/v1/zones", zoneBody("PAR-01"), "x-svc-api-key", f.key).want(http.StatusCreated)
	stamp := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

	var teamID, ownMember, otherMember string
	t.Run("Create", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", "/v1/teams", map[string]any{
			"name": "Alpha", "verticals": []string{"healthcare", "emergency"}, "equipment": []string{"Defibrillator", "defibrillator", "rope"},
			"zone_code": "PAR-01",
			"members": []map[string]any{
				{"name": "Ann", "user_id": operatorID, "phone": "+33612345678", "lat": 48.85, "lng": 2.35},
				{"name": "Ben"},
			},
		}, super...).want(http.StatusCreated)
		for _, k := range []string{"id", "name", "status", "verticals", "equipment", "zone_code", "members", "created_at", "updated_at"} {
			if _, ok := res.body[k]; !ok {
				t.Errorf("team field %s missing: %s", k, res.raw)
			}
		}
		if res.str("status") != "available" || res.str("name") != "Alpha" || res.str("zone_code") != "PAR-01" ||
			res.str("created_at") != stamp(n.clock.Now()) || len(res.members()) != 2 {
			t.Fatalf("team: %s", res.raw)
		}
		if eq, _ := res.body["equipment"].([]any); len(eq) != 2 || eq[0] != "defibrillator" || eq[1] != "rope" {
			t.Fatalf("equipment: %s", res.raw)
		}
		ann, ben := res.members()[0], res.members()[1]
		if ann["user_id"] != operatorID || ann["lat"] != 48.85 || ann["lng"] != 2.35 || ann["location_updated_at"] != stamp(n.clock.Now()) {
			t.Fatalf("member: %v", ann)
		}
		for _, k := range []string{"lat", "lng", "location_updated_at"} {
			if v, ok := ben[k]; !ok || v != nil {
				t.Fatalf("member without a position: %s must be null: %v", k, ben)
			}
		}
		teamID, ownMember, otherMember = res.str("id"), ann["id"].(string), ben["id"].(string)
		n.do("POST", "/v1/teams", map[string]any{"name": "Bravo", "verticals": []string{"gov"}}, "x-svc-api-key", f.key).want(http.StatusCreated)
		n.do("POST", "/v1/teams", map[string]any{"name": "Bravo", "verticals": []string{"gov"}}, otherAdmin...).want(http.StatusCreated)
	})
	t.Run("ErrCreateValidation", func(t *testing.T) {
		n := n.on(t)
		long := strings.Repeat("x", 65)
		for _, c := range []struct {
			body  string
			field string
		}{
			{`{"verticals": ["gov"]}`, "name"},
			{`{"name": "  ", "verticals": ["gov"]}`, "name"},
			{`{"name": "` + strings.Repeat("n", 201) + `", "verticals": ["gov"]}`, "name"},
			{`{"name": 5, "verticals": ["gov"]}`, "name"},
			{`{"name": "T"}`, "verticals"},
			{`{"name": "T", "verticals": ["mining"]}`, "verticals"},
			{`{"name": "T", "verticals": "gov"}`, "verticals"},
			{`{"name": "T", "verticals": ["gov"], "equipment": [""]}`, "equipment"},
			{`{"name": "T", "verticals": ["gov"], "equipment": ["` + long + `"]}`, "equipment"},
			{`{"name": "T", "verticals": ["gov"], "zone_code": "LYO-01"}`, "zone_code"},
			{`{"name": "T", "verticals": ["gov"], "members": [{"phone": "+33612345678"}]}`, "members.name"},
			{`{"name": "T", "verticals": ["gov"], "members": [{"name": "A", "phone": "0612345678"}]}`, "members.phone"},
			{`{"name": "T", "verticals": ["gov"], "members": [{"name": "A", "user_id": "0190a0b0-0000-7000-8000-000000000000"}]}`, "members.user_id"},
			{`{"name": "T", "verticals": ["gov"], "members": [{"name": "A", "lat": 1}]}`, "members.lng"},
			{`{"name": "T", "verticals": ["gov"], "members": [{"name": "A", "lng": 1}]}`, "members.lat"},
			{`{"name": "T", "verticals": ["gov"], "members": [{"name": "A", "lat": 91, "lng": 1}]}`, "members.lat"},
			{`{"name": "T", "verticals": ["gov"], "members": [{"name": "A", "lat": 1, "lng": 181}]}`, "members.lng"},
		} {
			n.do("POST", "/v1/teams", c.body, super...).wantErr(http.StatusBadRequest, "validation_error", c.field)
		}
		// Another tenant's user and zone do not exist here.
		n.do("POST", "/v1/teams", map[string]any{"name": "T", "verticals": []string{"gov"},
			"members": []map[string]any{{"name": "A", "user_id": operatorID}}}, otherAdmin...).wantErr(http.StatusBadRequest, "validation_error", "members.user_id")
		n.do("POST", "/v1/teams", `{"name": `, super...).wantErr(http.StatusBadRequest, "invalid_json")
		if l := n.do("GET", "/v1/teams", nil, super...).want(http.StatusOK); l.num("count") != 2 {
			t.Fatalf("a refused team was stored: %s", l.raw)
		}
	})
	t.Run("GetAndList", func(t *testing.T) {
		n := n.on(t)
		res := n.do("GET", "/v1/teams/"+teamID, nil, client...).want(http.StatusOK)
		if res.str("id") != teamID || len(res.members()) != 2 || res.members()[0]["lat"] != 48.85 {
			t.Fatalf("team: %s", res.raw)
		}
		l := n.do("GET", "/v1/teams", nil, client...).want(http.StatusOK)
		if l.num("count") != 2 || l.items()[0]["name"] != "Bravo" || l.items()[1]["name"] != "Alpha" {
			t.Fatalf("list: %s", l.raw)
		}
		if m, _ := l.items()[1]["members"].([]any); len(m) != 2 || m[0].(map[string]any)["lat"] != 48.85 {
			t.Fatalf("list without members' positions: %s", l.raw)
		}
		for q, want := range map[string]int{"status=available": 2, "status=off_duty": 0, "zone_code=PAR-01": 1,
			"vertical=gov": 1, "vertical=healthcare&zone_code=PAR-01": 1, "vertical=banking": 0} {
			if l := n.do("GET", "/v1/teams?"+q, nil, client...).want(http.StatusOK); int(l.num("count")) != want {
				t.Errorf("?%s: %s, want %d", q, l.raw, want)
			}
		}
		p1 := n.do("GET", "/v1/teams?limit=1", nil, client...).want(http.StatusOK)
		p2 := n.do("GET", "/v1/teams?limit=1&cursor="+p1.str("next_cursor"), nil, client...).want(http.StatusOK)
		if p1.items()[0]["name"] != "Bravo" || p2.items()[0]["name"] != "Alpha" || p2.str("next_cursor") != "" {
			t.Fatalf("pages: %s %s", p1.raw, p2.raw)
		}
		n.do("GET", "/v1/teams?status=busy", nil, client...).wantErr(http.StatusBadRequest, "validation_error", "status")
		n.do("GET", "/v1/teams?limit=0", nil, client...).wantErr(http.StatusBadRequest, "validation_error", "limit")
		n.do("GET", "/v1/teams?cursor=%21%21", nil, client...).wantErr(http.StatusBadRequest, "validation_error", "cursor")
		n.do("GET", "/v1/teams/0190a0b0-0000-7000-8000-000000000000", nil, client...).wantErr(http.StatusNotFound, "not_found")
		n.do("GET", "/v1/teams/nope", nil, client...).wantErr(http.StatusNotFound, "not_found")
		if o := n.do("GET", "/v1/teams", nil, otherAdmin...).want(http.StatusOK); o.num("count") != 1 || o.items()[0]["id"] == teamID {
			t.Fatalf("other tenant's list: %s", o.raw)
		}
	})
	t.Run("Patch", func(t *testing.T) {
		n := n.on(t)
		n.clock.Advance(time.Second)
		res := n.do("PATCH", "/v1/teams/"+teamID, map[string]any{"name": "Alpha 1", "verticals": []string{"healthcare"},
			"equipment": []string{"Oxygen"}, "status": "off_duty"}, super...).want(http.StatusOK)
		if res.str("name") != "Alpha 1" || res.str("status") != "off_duty" || res.str("zone_code") != "PAR-01" ||
			res.str("updated_at") != stamp(n.clock.Now()) || res.str("created_at") == res.str("updated_at") {
			t.Fatalf("patched: %s", res.raw)
		}
		res = n.do("PATCH", "/v1/teams/"+teamID, map[string]any{"zone_code": "", "status": "available"}, super...).want(http.StatusOK)
		if _, ok := res.body["zone_code"]; ok || res.str("status") != "available" {
			t.Fatalf("cleared zone: %s", res.raw)
		}
		n.do("PATCH", "/v1/teams/"+teamID, map[string]any{"zone_code": "PAR-01"}, super...).want(http.StatusOK)
		if got := n.do("GET", "/v1/teams/"+teamID, nil, client...); got.str("name") != "Alpha 1" || got.str("zone_code") != "PAR-01" {
			t.Fatalf("stored: %s", got.raw)
		}
	})
	t.Run("ErrPatch", func(t *testing.T) {
		n := n.on(t)
		before := n.do("GET", "/v1/teams/"+teamID, nil, super...)
		for _, c := range []struct {
			body  string
			field string
		}{
			{`{"name": ""}`, "name"},
			{`{"verticals": []}`, "verticals"},
			{`{"verticals": ["mining"]}`, "verticals"},
			{`{"equipment": ["` + strings.Repeat("e", 65) + `"]}`, "equipment"},
			{`{"zone_code": "LYO-01"}`, "zone_code"},
			{`{"status": "busy"}`, "status"},
			{`{"status": 1}`, "status"},
		} {
			n.do("PATCH", "/v1/teams/"+teamID, c.body, super...).wantErr(http.StatusBadRequest, "validation_error", c.field)
		}
		n.do("PATCH", "/v1/teams/"+teamID, map[string]any{"status": "on_mission"}, super...).wantErr(http.StatusConflict, "team_unavailable")
		after := n.do("GET", "/v1/teams/"+teamID, nil, super...)
		if !bytes.Equal(mustJSON(before.body["verticals"]), mustJSON(after.body["verticals"])) || before.str("updated_at") != after.str("updated_at") {
			t.Fatalf("a refused patch changed the team: %s → %s", before.raw, after.raw)
		}
		n.do("PATCH", "/v1/teams/0190a0b0-0000-7000-8000-000000000000", map[string]any{"name": "x"}, super...).wantErr(http.StatusNotFound, "not_found")
	})
	t.Run("AddMember", func(t *testing.T) {
		n := n.on(t)
		n.clock.Advance(time.Second)
		res := n.do("POST", "/v1/teams/"+teamID+"/members", map[string]any{"name": "Cleo", "phone": "+33600000003", "lat": 45.0, "lng": 4.0},
			super...).want(http.StatusCreated)
		if res.str("id") != teamID || len(res.members()) != 3 || res.members()[2]["name"] != "Cleo" ||
			res.members()[2]["location_updated_at"] != stamp(n.clock.Now()) || res.str("updated_at") != stamp(n.clock.Now()) {
			t.Fatalf("team with its new member: %s", res.raw)
		}
		for _, c := range []struct {
			body  string
			field string
		}{
			{`{}`, "name"},
			{`{"name": "D", "phone": "+1"}`, "phone"},
			{`{"name": "D", "user_id": "nope"}`, "user_id"},
			{`{"name": "D", "user_id": "` + operatorID + `"}`, "user_id"},
			{`{"name": "D", "lat": 1}`, "lng"},
			{`{"name": "D", "lat": -91, "lng": 1}`, "lat"},
			{`{"name": "D", "lat": "north", "lng": 1}`, "lat"},
		} {
			n.do("POST", "/v1/teams/"+teamID+"/members", c.body, super...).wantErr(http.StatusBadRequest, "validation_error", c.field)
		}
		n.do("POST", "/v1/teams/0190a0b0-0000-7000-8000-000000000000/members", map[string]any{"name": "D"}, super...).wantErr(http.StatusNotFound, "not_found")
		n.do("GET", "/v1/teams/"+teamID+"/members", nil, super...).wantErr(http.StatusMethodNotAllowed, "method_not_allowed")
		if got := n.do("GET", "/v1/teams/"+teamID, nil, super...); len(got.members()) != 3 {
			t.Fatalf("a refused member was stored: %s", got.raw)
		}
	})
	t.Run("Location", func(t *testing.T) {
		n := n.on(t)
		loc := func(member string) string { return "/v1/teams/" + teamID + "/members/" + member + "/location" }
		n.clock.Advance(time.Second)
		res := n.do("PATCH", loc(ownMember), map[string]any{"lat": 45.76, "lng": 4.84}, operator...).want(http.StatusOK)
		if res.str("id") != ownMember || res.num("lat") != 45.76 || res.num("lng") != 4.84 || res.str("location_updated_at") != stamp(n.clock.Now()) ||
			res.str("user_id") != operatorID {
			t.Fatalf("member: %s", res.raw)
		}
		rec := n.clock.Now().Add(-time.Hour)
		res = n.do("PATCH", loc(otherMember), map[string]any{"lat": 1, "lng": 2, "recorded_at": stamp(rec)}, super...).want(http.StatusOK)
		if res.str("location_updated_at") != stamp(rec) || res.num("lat") != 1 {
			t.Fatalf("member with recorded_at: %s", res.raw)
		}
		// An older position than the stored one is ignored.
		res = n.do("PATCH", loc(otherMember), map[string]any{"lat": 3, "lng": 4, "recorded_at": stamp(rec.Add(-time.Minute))}, super...).want(http.StatusOK)
		if res.str("location_updated_at") != stamp(rec) || res.num("lat") != 1 {
			t.Fatalf("older position: %s", res.raw)
		}
		got := n.do("GET", "/v1/teams/"+teamID, nil, client...)
		if got.members()[0]["lat"] != 45.76 || got.members()[1]["lat"] != 1.0 {
			t.Fatalf("stored positions: %s", got.raw)
		}
		for _, c := range []struct {
			body  string
			field string
		}{
			{`{"lng": 2}`, "lat"},
			{`{"lat": 2}`, "lng"},
			{`{"lat": 90.1, "lng": 2}`, "lat"},
			{`{"lat": 1, "lng": 180.1}`, "lng"},
			{`{"lat": "x", "lng": 2}`, "lat"},
			{`{"lat": 1, "lng": 2, "recorded_at": "today"}`, "recorded_at"},
			{`{"lat": 1, "lng": 2, "recorded_at": "` + n.clock.Now().Add(3*time.Minute).Format(time.RFC3339) + `"}`, "recorded_at"},
		} {
			n.do("PATCH", loc(ownMember), c.body, operator...).wantErr(http.StatusBadRequest, "validation_error", c.field)
		}
		// A field operator moves its own member record only; a client moves none.
		n.do("PATCH", loc(otherMember), map[string]any{"lat": 1, "lng": 2}, operator...).wantErr(http.StatusForbidden, "forbidden")
		n.do("PATCH", loc(ownMember), map[string]any{"lat": 1, "lng": 2}, client...).wantErr(http.StatusForbidden, "forbidden")
		n.do("PATCH", loc("0190a0b0-0000-7000-8000-000000000000"), map[string]any{"lat": 1, "lng": 2}, super...).wantErr(http.StatusNotFound, "not_found")
		n.do("PATCH", "/v1/teams/0190a0b0-0000-7000-8000-000000000000/members/"+ownMember+"/location", map[string]any{"lat": 1, "lng": 2},
			operator...).wantErr(http.StatusNotFound, "not_found")
		n.do("PATCH", loc(ownMember), map[string]any{"lat": 1, "lng": 2}).wantErr(http.StatusUnauthorized, "unauthorized")
	})
	t.Run("ErrOtherTenant", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/v1/teams/"+teamID, nil, otherAdmin...).wantErr(http.StatusNotFound, "not_found")
		n.do("PATCH", "/v1/teams/"+teamID, map[string]any{"name": "x"}, otherAdmin...).wantErr(http.StatusNotFound, "not_found")
		n.do("POST", "/v1/teams/"+teamID+"/members", map[string]any{"name": "x"}, otherAdmin...).wantErr(http.StatusNotFound, "not_found")
		n.do("PATCH", "/v1/teams/"+teamID+"/members/"+ownMember+"/location", map[string]any{"lat": 1, "lng": 2}, otherAdmin...).
			wantErr(http.StatusNotFound, "not_found")
		n.do("PATCH", "/v1/teams/"+teamID+"/members/"+ownMember+"/location", map[string]any{"lat": 1, "lng": 2},
			"Authorization", n.login(other.emails["field_operator"])).wantErr(http.StatusNotFound, "not_found")
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		n := n.on(t)
		for _, role := range []string{"company_tech", "field_operator", "corporate_client", "api_user"} {
			auth := []string{"Authorization", n.login(f.emails[role])}
			n.do("POST", "/v1/teams", map[string]any{"name": "Z", "verticals": []string{"gov"}}, auth...).wantErr(http.StatusForbidden, "forbidden")
			n.do("PATCH", "/v1/teams/"+teamID, map[string]any{"name": "x"}, auth...).wantErr(http.StatusForbidden, "forbidden")
			n.do("POST", "/v1/teams/"+teamID+"/members", map[string]any{"name": "x"}, auth...).wantErr(http.StatusForbidden, "forbidden")
		}
		n.do("GET", "/v1/teams", nil, operator...).wantErr(http.StatusForbidden, "forbidden")
		n.do("GET", "/v1/teams/"+teamID, nil, operator...).wantErr(http.StatusForbidden, "forbidden")
		n.do("GET", "/v1/teams", nil).wantErr(http.StatusUnauthorized, "unauthorized")
		n.do("GET", "/v1/teams", nil, "Authorization", n.login(f.emails["company_admin"])).want(http.StatusOK)
	})
	t.Run("IdempotentCreate", func(t *testing.T) {
		n := n.on(t)
		key := []string{"Idempotency-Key", "team-charlie-1"}
		body := map[string]any{"name": "Charlie", "verticals": []string{"gov"}, "members": []map[string]any{{"name": "Cy"}}}
		first := n.do("POST", "/v1/teams", body, append(super, key...)...).want(http.StatusCreated)
		again := n.do("POST", "/v1/teams", body, append(super, key...)...).want(http.StatusCreated)
		if again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.raw, again.raw) {
			t.Fatalf("replay:\n%s\n%s", first.raw, again.raw)
		}
		if l := n.do("GET", "/v1/teams?vertical=gov", nil, client...); l.num("count") != 2 {
			t.Fatalf("a replay created a second team: %s", l.raw)
		}
		body["name"] = "Charlie 2"
		n.do("POST", "/v1/teams", body, append(super, key...)...).wantErr(http.StatusUnprocessableEntity, "idempotency_key_reused")
		// A location update replays too.
		lkey := []string{"Idempotency-Key", "loc-1"}
		path := "/v1/teams/" + teamID + "/members/" + ownMember + "/location"
		a := n.do("PATCH", path, map[string]any{"lat": 10, "lng": 20}, append(operator, lkey...)...).want(http.StatusOK)
		n.clock.Advance(time.Minute)
		b := n.do("PATCH", path, map[string]any{"lat": 10, "lng": 20}, append(operator, lkey...)...).want(http.StatusOK)
		if b.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(a.raw, b.raw) {
			t.Fatalf("location replay:\n%s\n%s", a.raw, b.raw)
		}
	})
}
