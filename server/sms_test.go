package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// smsSeed is a tenant whose team Alpha has the field operator (phone +33611111111) and
// a member without a user (+33622222222), team Bravo (+33633333333), and a key of the
// SMS gateway (scope sms:inbound only).
type smsSeed struct {
	n            *node
	f            *tenantFix
	alpha, bravo *model.Team
	gateway      string
}

func newSMSSeed(n *node, f *tenantFix) *smsSeed {
	n.t.Helper()
	s := &smsSeed{n: n, f: f}
	var op *model.UserAccount
	err := n.eng.View(context.Background(), func(tx model.Tx) (err error) {
		op, err = tx.UserAccountByEmail(f.emails[model.RoleFieldOperator])
		return err
	})
	if err == nil {
		err = func() (err error) {
			if s.alpha, err = n.eng.CreateTeam(context.Background(), tenantAdmin(f.tenant.ID), model.TeamInput{Name: "Alpha", Verticals: []string{"emergency"},
				Members: []model.MemberInput{{Name: "Ann", UserID: op.ID, Phone: "+33611111111"}, {Name: "Al", Phone: "+33622222222"}}}, nil); err != nil {
				return err
			}
			if s.bravo, err = n.eng.CreateTeam(context.Background(), tenantAdmin(f.tenant.ID), model.TeamInput{Name: "Bravo", Verticals: []string{"emergency"},
				Members: []model.MemberInput{{Name: "Bob", Phone: "+33633333333"}}}, nil); err != nil {
				return err
			}
			k, err := n.eng.AdminCreateAPIKey(context.Background(), f.tenant.Slug, model.CreateAPIKeyInput{Name: "sms gateway",
				Scopes: []string{model.PermSMSInbound}})
			if err != nil {
				return err
			}
			s.gateway = k.APIKey
			return nil
		}()
	}
	if err != nil {
		n.t.Fatal(err)
	}
	return s
}

// on returns the seed bound to a subtest's node.
func (s *smsSeed) on(n *node) *smsSeed { c := *s; c.n = n; return &c }

// dispatch posts an event, dispatches team to it as the supervisor and returns the
// mission's id and code.
func (s *smsSeed) dispatch(idem string, team *model.Team) (string, string) {
	s.n.t.Helper()
	ev := s.n.do("POST", "/v1/events", eventBody(idem), "x-svc-api-key", s.f.key).want(http.StatusCreated).str("event_id")
	sup := s.n.login(s.f.emails[model.RoleOperationalSupervisor])
	id := s.n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": ev, "team_id": team.ID}, "Authorization", sup).
		want(http.StatusCreated).str("mission_id")
	m := s.n.do("GET", "/v1/missions/"+id, nil, "x-svc-api-key", s.f.key).want(http.StatusOK)
	if !smscodec.ValidMissionCode(m.str("code")) {
		s.n.t.Fatalf("mission without a code: %s", m.raw)
	}
	return id, m.str("code")
}

// sms posts an inbound SMS with the gateway's key.
func (s *smsSeed) sms(from, body string, headers ...string) *response {
	s.n.t.Helper()
	return s.n.do("POST", "/v1/sms/inbound", map[string]any{"from": from, "body": body},
		append([]string{"x-svc-api-key", s.gateway}, headers...)...)
}

// logLen counts the tenant's inbound log.
func (s *smsSeed) logLen() int {
	s.n.t.Helper()
	var n int
	err := s.n.eng.View(context.Background(), func(tx model.Tx) error {
		l, _, err := tx.SMSInbounds(s.f.tenant.ID, model.Page{Limit: 500})
		n = len(l)
		return err
	})
	if err != nil {
		s.n.t.Fatal(err)
	}
	return n
}

func (s *smsSeed) status(id string) string {
	s.n.t.Helper()
	return s.n.do("GET", "/v1/missions/"+id, nil, "x-svc-api-key", s.f.key).want(http.StatusOK).str("status")
}

func TestSMSInbound(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := newSMSSeed(n, n.addTenant("other", "core"))
	s := newSMSSeed(n, f)
	id, code := s.dispatch("sms-1", s.alpha)
	otherID, otherCode := other.dispatch("sms-o", other.alpha)

	t.Run("Caller", func(t *testing.T) {
		n := n.on(t)
		body := map[string]any{"from": "+33611111111", "body": "FR1 ACK " + code}
		for _, email := range f.emails { // a JWT, whatever its role
			n.do("POST", "/v1/sms/inbound", body, "Authorization", n.login(email)).wantErr(http.StatusForbidden, "forbidden")
		}
		// The tenant's first key holds every scope but sms:inbound.
		n.do("POST", "/v1/sms/inbound", body, "x-svc-api-key", f.key).wantErr(http.StatusForbidden, "forbidden")
		n.do("POST", "/v1/sms/inbound", body).wantErr(http.StatusUnauthorized, "unauthorized")
		if got := s.on(n).logLen(); got != 0 {
			t.Fatalf("%d records of refused callers", got)
		}
	})

	t.Run("NotAnSMS", func(t *testing.T) {
		n := n.on(t)
		s := s.on(n)
		n.do("POST", "/v1/sms/inbound", "{", "x-svc-api-key", s.gateway).wantErr(http.StatusBadRequest, "invalid_json")
		n.do("POST", "/v1/sms/inbound", map[string]any{"from": 33611111111, "body": "FR1 ACK " + code},
			"x-svc-api-key", s.gateway).wantErr(http.StatusBadRequest, "validation_error", "from")
		if got := s.logLen(); got != 0 {
			t.Fatalf("%d records of requests that are no SMS", got)
		}
	})

	t.Run("Refused", func(t *testing.T) {
		n := n.on(t)
		s := s.on(n)
		for _, tc := range []struct {
			name, from, body string
			status           int
			code, field      string
		}{
			{"Empty", "+33611111111", "", http.StatusBadRequest, "validation_error", "body"},
			{"UnknownVerb", "+33611111111", "FR1 FOO X", http.StatusBadRequest, "validation_error", "body"},
			{"MissingCode", "+33611111111", "FR1 ACK", http.StatusBadRequest, "validation_error", "body"},
			{"NoFrom", "", "FR1 ACK " + code, http.StatusBadRequest, "validation_error", "from"},
			{"UnknownCode", "+33611111111", "FR1 ACK 22222", http.StatusNotFound, "not_found", ""},
			{"OtherTenantsCode", "+33611111111", "FR1 ACK " + otherCode, http.StatusNotFound, "not_found", ""},
			{"Stranger", "+447700900123", "FR1 ACK " + code, http.StatusForbidden, "forbidden", ""},
			{"OtherTeam", "+33633333333", "FR1 ACK " + code, http.StatusForbidden, "forbidden", ""},
			{"Skip", "+33611111111", "FR1 DONE " + code, http.StatusConflict, "invalid_transition", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				n := n.on(t)
				s := s.on(n)
				if tc.name == "UnknownCode" && (code == "22222" || otherCode == "22222") {
					t.Skip("the mission drew 22222")
				}
				before := s.logLen()
				res := s.sms(tc.from, tc.body)
				if tc.field != "" {
					res.wantErr(tc.status, tc.code, tc.field)
				} else {
					res.wantErr(tc.status, tc.code)
				}
				if got := s.logLen(); got != before+1 {
					t.Fatalf("%d records, want %d: a refused SMS is recorded", got, before+1)
				}
				if st := s.status(id); st != "CREATED" && st != "SENT" {
					t.Fatalf("the mission moved to %s", st)
				}
			})
		}
		if st := other.on(n).status(otherID); st != "CREATED" && st != "SENT" {
			t.Fatalf("the other tenant's mission moved to %s", st)
		}
		if got := other.on(n).logLen(); got != 0 {
			t.Fatalf("the other tenant's log has %d records", got)
		}
	})

	t.Run("AckAndReplay", func(t *testing.T) {
		n := n.on(t)
		s := s.on(n)
		before := s.logLen()
		res := s.sms("+33 6 11 11 11 11", "fr1  ack "+code, "Idempotency-Key", "gw-msg-1").want(http.StatusOK)
		m, _ := res.body["mission"].(map[string]any)
		if res.str("outcome") != "applied" || res.str("status") != "ACK" || res.str("mission_id") != id ||
			res.str("from") != "+33611111111" || m["status"] != "ACK" || m["code"] != code {
			t.Fatalf("ACK: %s", res.raw)
		}
		again := s.sms("+33 6 11 11 11 11", "fr1  ack "+code, "Idempotency-Key", "gw-msg-1").want(http.StatusOK)
		if again.header.Get("Idempotent-Replayed") != "true" || string(again.raw) != string(res.raw) {
			t.Fatalf("replay: %s %v", again.raw, again.header)
		}
		if got := s.logLen(); got != before+1 {
			t.Fatalf("%d records after a replay, want %d", got, before+1)
		}
		mission := n.do("GET", "/v1/missions/"+id, nil, "x-svc-api-key", f.key).want(http.StatusOK)
		h, _ := mission.body["history"].([]any)
		last, _ := h[len(h)-1].(map[string]any)
		if mission.str("status") != "ACK" || last["source"] != "sms" || last["to"] != "ACK" {
			t.Fatalf("after an SMS ACK: %s", mission.raw)
		}
		// The same reply again, under a new key: the mission is past ACK.
		s.sms("+33611111111", "FR1 ACK "+code, "Idempotency-Key", "gw-msg-2").wantErr(http.StatusConflict, "invalid_transition")
		replay := s.sms("+33611111111", "FR1 ACK "+code, "Idempotency-Key", "gw-msg-2").wantErr(http.StatusConflict, "invalid_transition")
		if replay.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("a refused reply is not replayed: %v", replay.header)
		}
		if got := s.logLen(); got != before+2 {
			t.Fatalf("%d records, want %d: a replayed refusal is recorded once", got, before+2)
		}
		s.n.do("POST", "/v1/sms/inbound", map[string]any{"from": "+33611111111", "body": "FR1 ROUTE " + code},
			"x-svc-api-key", s.gateway, "Idempotency-Key", "gw-msg-2").wantErr(http.StatusUnprocessableEntity, "idempotency_key_reused")
	})

	t.Run("FieldPath", func(t *testing.T) {
		n := n.on(t)
		s := s.on(n)
		for _, step := range []struct{ verb, status string }{{"ROUTE", "ON_ROUTE"}, {"SITE", "ON_SITE"}, {"DONE", "COMPLETED"}} {
			s.sms("+33622222222", "FR1 "+step.verb+" "+code).want(http.StatusOK)
			if st := s.status(id); st != step.status {
				t.Fatalf("after %s: %s", step.verb, st)
			}
		}
		// The code went with the mission: a late reply from the team is told the mission
		// is closed; to another team's phone the code means nothing.
		s.sms("+33622222222", "FR1 DONE "+code).wantErr(http.StatusConflict, "mission_closed")
		s.sms("+33633333333", "FR1 DONE "+code).wantErr(http.StatusNotFound, "not_found")
		id2, code2 := s.dispatch("sms-2", s.bravo)
		s.sms("+33633333333", "FR1 FAIL "+code2).want(http.StatusOK)
		if st := s.status(id2); st != "FAILED" {
			t.Fatalf("after FAIL: %s", st)
		}
	})
}
