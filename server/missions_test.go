package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// missionSeed is a tenant with team A (the field operator is a member) and team B (not),
// and missions stored directly, as a dispatch would store them.
type missionSeed struct {
	n            *node
	f            *tenantFix
	teamA, teamB *model.Team
}

func newMissionSeed(n *node, f *tenantFix) *missionSeed {
	n.t.Helper()
	s := &missionSeed{n: n, f: f}
	var op *model.UserAccount
	err := n.eng.View(context.Background(), func(tx model.Tx) (err error) {
		op, err = tx.UserAccountByEmail(f.emails[model.RoleFieldOperator])
		return err
	})
	if err == nil {
		err = func() (err error) {
			if s.teamA, err = n.eng.CreateTeam(context.Background(), tenantAdmin(f.tenant.ID), model.TeamInput{Name: "Alpha", Verticals: []string{"emergency"},
				Members: []model.MemberInput{{Name: "Ann", UserID: op.ID}}}, nil); err != nil {
				return err
			}
			s.teamB, err = n.eng.CreateTeam(context.Background(), tenantAdmin(f.tenant.ID), model.TeamInput{Name: "Bravo", Verticals: []string{"emergency"},
				Members: []model.MemberInput{{Name: "Bob"}}}, nil)
			return err
		}()
	}
	if err != nil {
		n.t.Fatal(err)
	}
	return s
}

// on returns the seed bound to a subtest's node.
func (s *missionSeed) on(n *node) *missionSeed { c := *s; c.n = n; return &c }

// event posts an event and returns its id.
func (s *missionSeed) event(key string) string {
	s.n.t.Helper()
	return s.n.do("POST", "/v1/events", eventBody(key), "x-svc-api-key", s.f.key).want(http.StatusCreated).str("event_id")
}

// missions stores count CREATED missions of a team for an event, oldest first, and puts
// the team on_mission.
func (s *missionSeed) missions(team *model.Team, eventID string, count int) []string {
	s.n.t.Helper()
	var ids []string
	err := s.n.eng.Update(context.Background(), func(tx model.Tx) error {
		for range count {
			now := model.At(s.n.clock.Now())
			m := &model.Mission{ID: model.NewID(), EventID: eventID, TeamID: team.ID, Status: model.MissionCreated,
				Vertical: "emergency", Priority: "high", DispatchedAt: now, DispatchID: model.NewID(), DispatchedBy: model.NilID,
				History:   []model.MissionMove{{To: model.MissionCreated, At: now, Actor: model.NilID, Source: engine.MoveSourceSystem}},
				CreatedAt: now, UpdatedAt: now}
			if err := tx.PutMission(s.f.tenant.ID, m); err != nil {
				return err
			}
			ids = append(ids, m.ID)
		}
		tm, err := tx.Team(s.f.tenant.ID, team.ID)
		if err != nil {
			return err
		}
		tm.Status = engine.TeamOnMission
		return tx.PutTeam(s.f.tenant.ID, tm)
	})
	if err != nil {
		s.n.t.Fatal(err)
	}
	return ids
}

func (s *missionSeed) teamStatus(id string) string {
	s.n.t.Helper()
	var status string
	err := s.n.eng.View(context.Background(), func(tx model.Tx) error {
		tm, err := tx.Team(s.f.tenant.ID, id)
		if err == nil {
			status = tm.Status
		}
		return err
	})
	if err != nil {
		s.n.t.Fatal(err)
	}
	return status
}

func TestMissions_List(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	s := newMissionSeed(n, f)
	key := []string{"x-svc-api-key", f.key}
	ev1, ev2 := s.event("m-1"), s.event("m-2")
	b := s.missions(s.teamB, ev1, 52)
	a := s.missions(s.teamA, ev2, 2)
	n.do("PATCH", "/v1/missions/"+a[1]+"/status", map[string]any{"status": "ACK"}, key...).want(http.StatusOK)

	t.Run("DefaultLimitAndCursor", func(t *testing.T) {
		n := n.on(t)
		res := n.do("GET", "/v1/missions", nil, key...).want(http.StatusOK)
		if res.num("count") != 50 || len(res.items()) != 50 || res.str("next_cursor") == "" {
			t.Fatalf("first page: count %v, next %q", res.num("count"), res.str("next_cursor"))
		}
		if first := res.items()[0]; first["id"] != a[1] || first["status"] != "ACK" {
			t.Fatalf("newest first: %v", first)
		}
		for _, k := range []string{"id", "event_id", "team_id", "status", "channel_used", "vertical", "priority", "notes",
			"dispatched_at", "ack_at", "on_route_at", "on_site_at", "completed_at", "failed_at", "feedback",
			"created_at", "updated_at", "history"} {
			if _, ok := res.items()[1][k]; !ok {
				t.Errorf("field %s missing: %v", k, res.items()[1])
			}
		}
		rest := n.do("GET", "/v1/missions?cursor="+res.str("next_cursor"), nil, key...).want(http.StatusOK)
		if rest.num("count") != 4 || rest.str("next_cursor") != "" {
			t.Fatalf("second page: %s", rest.raw)
		}
		if c := n.do("GET", "/v1/missions?limit=3", nil, key...).want(http.StatusOK).num("count"); c != 3 {
			t.Fatalf("limit=3: %v", c)
		}
		n.do("GET", "/v1/missions?limit=0", nil, key...).wantErr(http.StatusBadRequest, "validation_error", "limit")
	})

	t.Run("Filters", func(t *testing.T) {
		n := n.on(t)
		for _, tc := range []struct {
			query string
			count float64
		}{
			{"status=ACK", 1},
			{"status=CREATED&limit=500", 53},
			{"team_id=" + s.teamA.ID, 2},
			{"team_id=" + s.teamB.ID + "&limit=500", 52},
			{"member_id=" + s.teamA.Members[0].ID, 2},
			{"member_id=" + s.teamA.Members[0].ID + "&status=CREATED", 1},
			{"member_id=" + model.NewID(), 0},
			{"event_id=" + ev2, 2},
		} {
			if c := n.do("GET", "/v1/missions?"+tc.query, nil, key...).want(http.StatusOK).num("count"); c != tc.count {
				t.Errorf("%s: count %v, want %v", tc.query, c, tc.count)
			}
		}
		n.do("GET", "/v1/missions?status=DONE", nil, key...).wantErr(http.StatusBadRequest, "validation_error", "status")
		n.do("GET", "/v1/missions?team_id=nope", nil, key...).wantErr(http.StatusBadRequest, "validation_error", "team_id")
		n.do("GET", "/v1/missions?member_id=nope", nil, key...).wantErr(http.StatusBadRequest, "validation_error", "member_id")
	})

	t.Run("FieldOperatorSeesOwnTeam", func(t *testing.T) {
		n := n.on(t)
		op := []string{"Authorization", n.login(f.emails[model.RoleFieldOperator])}
		res := n.do("GET", "/v1/missions?limit=500", nil, op...).want(http.StatusOK)
		if res.num("count") != 2 {
			t.Fatalf("field operator lists %v missions, want 2", res.num("count"))
		}
		for _, it := range res.items() {
			if it["team_id"] != s.teamA.ID {
				t.Fatalf("another team's mission listed: %v", it)
			}
		}
		if c := n.do("GET", "/v1/missions?team_id="+s.teamB.ID, nil, op...).want(http.StatusOK).num("count"); c != 0 {
			t.Fatalf("team_id of another team: %v", c)
		}
		n.do("GET", "/v1/missions/"+a[0], nil, op...).want(http.StatusOK)
		n.do("GET", "/v1/missions/"+b[0], nil, op...).wantErr(http.StatusNotFound, "not_found")
	})

	t.Run("One", func(t *testing.T) {
		n := n.on(t)
		res := n.do("GET", "/v1/missions/"+a[1], nil, key...).want(http.StatusOK)
		hist, _ := res.body["history"].([]any)
		if res.str("id") != a[1] || res.str("status") != "ACK" || !timeRE.MatchString(res.str("ack_at")) || len(hist) != 3 {
			t.Fatalf("mission: %s", res.raw)
		}
		client := []string{"Authorization", n.login(f.emails[model.RoleCorporateClient])}
		n.do("GET", "/v1/missions/"+a[1], nil, client...).want(http.StatusOK)
		n.do("GET", "/v1/missions/"+a[1], nil, "x-svc-api-key", other.key).wantErr(http.StatusNotFound, "not_found")
		n.do("GET", "/v1/missions/nope", nil, key...).wantErr(http.StatusNotFound, "not_found")
		if c := n.do("GET", "/v1/missions", nil, "x-svc-api-key", other.key).want(http.StatusOK).num("count"); c != 0 {
			t.Fatalf("other tenant lists %v missions", c)
		}
		n.do("GET", "/v1/missions", nil).wantErr(http.StatusUnauthorized, "unauthorized")
	})
}

func TestMissions_Status(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	s := newMissionSeed(n, f)
	op := []string{"Authorization", n.login(f.emails[model.RoleFieldOperator])}
	sup := []string{"Authorization", n.login(f.emails[model.RoleOperationalSupervisor])}
	patch := func(n *node, id string, body any, headers ...string) *response {
		n.t.Helper()
		return n.do("PATCH", "/v1/missions/"+id+"/status", body, headers...)
	}

	t.Run("OK", func(t *testing.T) {
		n := n.on(t)
		s := s.on(n)
		ev := s.event("st-1")
		id := s.missions(s.teamA, ev, 1)[0]
		res := patch(n, id, map[string]any{"status": "ACK"}, op...).want(http.StatusOK)
		if res.str("status") != "ACK" || !timeRE.MatchString(res.str("ack_at")) || res.body["on_route_at"] != nil {
			t.Fatalf("ACK: %s", res.raw)
		}
		patch(n, id, map[string]any{"status": "ON_ROUTE"}, op...).want(http.StatusOK)
		patch(n, id, map[string]any{"status": "ON_SITE"}, op...).want(http.StatusOK)
		res = patch(n, id, map[string]any{"status": "COMPLETED", "feedback": map[string]any{"note": "done"}}, sup...).want(http.StatusOK)
		if fb := res.obj("feedback"); res.str("status") != "COMPLETED" || fb["note"] != "done" || !timeRE.MatchString(res.str("completed_at")) {
			t.Fatalf("COMPLETED: %s", res.raw)
		}
		evRes := n.do("GET", "/v1/events/"+ev, nil, "x-svc-api-key", f.key).want(http.StatusOK)
		if evRes.str("status") != "closed" || evRes.str("closed_at") != res.str("completed_at") {
			t.Fatalf("event: %s", evRes.raw)
		}
		if st := s.teamStatus(s.teamA.ID); st != engine.TeamAvailable {
			t.Fatalf("team: %s", st)
		}
		patch(n, id, map[string]any{"status": "FAILED"}, sup...).wantErr(http.StatusConflict, "mission_closed")
	})

	t.Run("Idempotent", func(t *testing.T) {
		n := n.on(t)
		s := s.on(n)
		id := s.missions(s.teamA, s.event("st-2"), 1)[0]
		first := patch(n, id, map[string]any{"status": "ACK"}, append(op, "Idempotency-Key", "ack-1")...).want(http.StatusOK)
		again := patch(n, id, map[string]any{"status": "ACK"}, append(op, "Idempotency-Key", "ack-1")...).want(http.StatusOK)
		if string(again.raw) != string(first.raw) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %s vs %s", again.raw, first.raw)
		}
		// Without the key the same move is a second move: refused.
		patch(n, id, map[string]any{"status": "ACK"}, op...).wantErr(http.StatusConflict, "invalid_transition")
	})

	t.Run("Errors", func(t *testing.T) {
		n := n.on(t)
		s := s.on(n)
		id := s.missions(s.teamA, s.event("st-3"), 1)[0]
		otherTeam := s.missions(s.teamB, s.event("st-4"), 1)[0]
		client := []string{"Authorization", n.login(f.emails[model.RoleCorporateClient])}
		tech := []string{"Authorization", n.login(f.emails[model.RoleCompanyTech])}
		patch(n, id, map[string]any{"status": "ACK"}, client...).wantErr(http.StatusForbidden, "forbidden")
		patch(n, id, map[string]any{"status": "ACK"}, tech...).wantErr(http.StatusForbidden, "forbidden")
		patch(n, id, map[string]any{"status": "ACK"}).wantErr(http.StatusUnauthorized, "unauthorized")
		patch(n, id, map[string]any{"status": "ACK"}, "x-svc-api-key", other.key).wantErr(http.StatusNotFound, "not_found")
		patch(n, otherTeam, map[string]any{"status": "ACK"}, op...).wantErr(http.StatusNotFound, "not_found")
		patch(n, model.NewID(), map[string]any{"status": "ACK"}, sup...).wantErr(http.StatusNotFound, "not_found")
		patch(n, id, map[string]any{"status": "DONE"}, op...).wantErr(http.StatusBadRequest, "validation_error", "status")
		patch(n, id, map[string]any{}, op...).wantErr(http.StatusBadRequest, "validation_error", "status")
		patch(n, id, map[string]any{"status": 3}, op...).wantErr(http.StatusBadRequest, "validation_error", "status")
		patch(n, id, map[string]any{"status": "ACK", "feedback": "fine"}, op...).wantErr(http.StatusBadRequest, "validation_error", "feedback")
		patch(n, id, map[string]any{"status": "ACK", "feedback": []int{1}}, op...).wantErr(http.StatusBadRequest, "validation_error", "feedback")
		res := patch(n, id, map[string]any{"status": "ON_SITE"}, op...).wantErr(http.StatusConflict, "invalid_transition")
		if want := "CREATED → ON_SITE is not allowed; allowed next: ACK, FAILED"; res.str("message") != want {
			t.Fatalf("message %q, want %q", res.str("message"), want)
		}
		patch(n, id, map[string]any{"status": "SENT"}, sup...).wantErr(http.StatusConflict, "invalid_transition")
		patch(n, id, "{", op...).wantErr(http.StatusBadRequest, "invalid_json")
		// Nothing above moved the mission.
		if st := n.do("GET", "/v1/missions/"+id, nil, sup...).want(http.StatusOK).str("status"); st != "CREATED" {
			t.Fatalf("status after refused moves: %s", st)
		}
		patch(n, id, map[string]any{"status": "FAILED"}, op...).want(http.StatusOK)
		patch(n, id, map[string]any{"status": "ACK"}, op...).wantErr(http.StatusConflict, "mission_closed")
	})
}
