package engine_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// Phones of the SMS fixture.
const (
	phoneAnn = "+33611111111" // team Alpha, user opA
	phoneAl  = "+33622222222" // team Alpha, no user
	phoneBob = "+33633333333" // team Bravo
)

// smsFix is a tenant whose teams have phones, its SMS gateway's key, and another tenant
// whose team shares Ann's phone.
type smsFix struct {
	clock          *model.FakeClock
	e              *engine.Engine
	tenant, other  *model.Tenant
	alpha, bravo   *model.Team
	omega          *model.Team // the other tenant's
	opA, sup       model.Principal
	otherSup       model.Principal
	gateway, plain model.Principal // keys with and without sms:inbound
	otherGateway   model.Principal
	admin          model.Principal
}

func newSMSFix(t *testing.T) *smsFix {
	t.Helper()
	clock := model.NewFakeClock(epoch)
	e := engine.New(MustOpenDB(t), engine.Options{Clock: clock, Password: cheapPasswords,
		Sender: newFakeSender(true), Logger: slog.New(slog.DiscardHandler)})
	f := &smsFix{e: e, clock: clock}
	f.tenant = MustCreateTenant(t, e, "acme").Tenant
	f.other = MustCreateTenant(t, e, "other").Tenant
	user := func(tn *model.Tenant, email string, role model.Role) model.Principal {
		u := MustCreateUser(t, e, tn.Slug, email, role)
		return model.Principal{TenantID: tn.ID, Plan: tn.LicenseType, TenantActive: true, UserID: u.ID, Role: role}
	}
	key := func(tn *model.Tenant, scopes ...string) model.Principal {
		return model.Principal{TenantID: tn.ID, Plan: tn.LicenseType, TenantActive: true, KeyID: model.NewID(), Scopes: scopes}
	}
	f.opA = user(f.tenant, "op-a@acme.example", model.RoleFieldOperator)
	f.sup = user(f.tenant, "sup@acme.example", model.RoleOperationalSupervisor)
	f.admin = user(f.tenant, "admin@acme.example", model.RoleCompanyAdmin)
	f.otherSup = user(f.other, "sup@other.example", model.RoleOperationalSupervisor)
	f.gateway = key(f.tenant, model.PermSMSInbound)
	f.plain = key(f.tenant, model.DefaultKeyScopes()...)
	f.otherGateway = key(f.other, model.PermSMSInbound)
	mustDo(t, func() (err error) {
		if f.alpha, err = e.CreateTeam(context.Background(), tenantAdmin(f.tenant.ID), model.TeamInput{Name: "Alpha", Verticals: []string{"emergency"},
			Members: []model.MemberInput{{Name: "Ann", UserID: f.opA.UserID, Phone: phoneAnn}, {Name: "Al", Phone: phoneAl}}}, nil); err != nil {
			return err
		}
		if f.bravo, err = e.CreateTeam(context.Background(), tenantAdmin(f.tenant.ID), model.TeamInput{Name: "Bravo", Verticals: []string{"emergency"},
			Members: []model.MemberInput{{Name: "Bob", Phone: phoneBob}}}, nil); err != nil {
			return err
		}
		if f.omega, err = e.CreateTeam(context.Background(), tenantAdmin(f.other.ID), model.TeamInput{Name: "Omega", Verticals: []string{"emergency"},
			Members: []model.MemberInput{{Name: "Ann's twin", Phone: phoneAnn}}}, nil); err != nil {
			return err
		}
		_, err = e.CreateWebhook(context.Background(), f.sup, model.WebhookInput{URL: "https://hooks.example/m",
			Events: []string{"mission.status_updated"}}, nil)
		return err
	})
	return f
}

// dispatch stores an event of tenant p's and dispatches team to it as p.
func (f *smsFix) dispatch(t *testing.T, p model.Principal, team *model.Team) *model.Mission {
	t.Helper()
	var m *model.Mission
	now := model.At(f.e.Clock().Now())
	ev := &model.Event{ID: model.NewID(), Type: "FIRE", Priority: "high", Vertical: "emergency",
		IdempotencyKey: model.NewID(), Status: model.EventDelivered, ChannelSelected: model.ChannelREST,
		ChannelsAttempted: []string{}, Source: engine.SourceAPI, CreatedAt: now, UpdatedAt: now}
	MustUpdate(t, f.e, func(tx model.Tx) error { return tx.PutEvent(p.TenantID, ev) })
	d, err := f.e.DispatchTeam(context.Background(), p, model.DispatchInput{EventID: ev.ID, TeamID: team.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	MustUpdate(t, f.e, func(tx model.Tx) (err error) {
		m, err = tx.Mission(p.TenantID, d.MissionID)
		return err
	})
	f.clock.Advance(time.Millisecond)
	return m
}

// receive runs ReceiveSMS as the gateway p would through the server: a refusal commits.
func (f *smsFix) receive(p model.Principal, from, body string) (*model.SMSInboundResult, *model.Error, error) {
	var res *model.SMSInboundResult
	var refusal *model.Error
	err := func() (err error) {
		res, refusal, err = f.e.ReceiveSMS(context.Background(), p, model.SMSInboundInput{From: from, Body: body}, nil)
		return err
	}()
	f.clock.Advance(time.Millisecond) // the next record's id sorts after this one
	return res, refusal, err
}

func (f *smsFix) mission(t *testing.T, tenantID, id string) *model.Mission {
	t.Helper()
	var m *model.Mission
	if err := f.e.View(context.Background(), func(tx model.Tx) (err error) { m, err = tx.Mission(tenantID, id); return err }); err != nil {
		t.Fatal(err)
	}
	return m
}

// log returns a tenant's inbound log, newest first.
func (f *smsFix) log(t *testing.T, tenantID string) []model.SMSInbound {
	t.Helper()
	var out []model.SMSInbound
	if err := f.e.View(context.Background(), func(tx model.Tx) (err error) {
		out, _, err = tx.SMSInbounds(tenantID, model.Page{Limit: 500})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// outbox returns the tenant's pending outbox entries, soonest first.
func (f *smsFix) outbox(t *testing.T, tenantID string) []model.OutboxEntry {
	t.Helper()
	var out []model.OutboxEntry
	err := f.e.View(context.Background(), func(tx model.Tx) error {
		refs, err := tx.DueOutbox()
		for _, r := range refs {
			if r.TenantID != tenantID {
				continue
			}
			o, err := tx.OutboxEntry(r.TenantID, r.ID)
			if err != nil {
				return err
			}
			out = append(out, *o)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// statusHooks returns the mission.status_updated payloads of a mission in the outbox.
func (f *smsFix) statusHooks(t *testing.T, missionID string) []model.MissionStatusUpdate {
	t.Helper()
	var out []model.MissionStatusUpdate
	for _, o := range f.outbox(t, f.tenant.ID) {
		if o.Name != "mission.status_updated" {
			continue
		}
		var env struct {
			Payload model.MissionStatusUpdate `json:"payload"`
		}
		if err := json.Unmarshal(o.Body, &env); err != nil {
			t.Fatal(err)
		}
		if env.Payload.MissionID == missionID {
			out = append(out, env.Payload)
		}
	}
	return out
}

// TestDispatch_MissionSMSCarriesCode: a dispatch sends each member's phone the mission
// SMS, which decodes to the mission's code and its event.
func TestDispatch_MissionSMSCarriesCode(t *testing.T) {
	f := newSMSFix(t)
	m := f.dispatch(t, f.sup, f.alpha)
	var to []string
	for _, o := range f.outbox(t, f.tenant.ID) {
		if o.Kind != model.OutboxSMS || o.MissionID != m.ID {
			continue
		}
		to = append(to, o.To)
		dec, err := smscodec.DecodeMissionSMS(o.Text)
		if err != nil {
			t.Fatalf("the SMS to %s does not decode: %q: %v", o.To, o.Text, err)
		}
		if dec.Code != m.Code || dec.EventRef != m.EventID[len(m.EventID)-8:] || dec.Priority != "high" || dec.Type != "FIRE" {
			t.Fatalf("SMS %q decodes to %+v; mission code %s, event %s", o.Text, dec, m.Code, m.EventID)
		}
	}
	slices.Sort(to)
	if !slices.Equal(to, []string{phoneAnn, phoneAl}) {
		t.Fatalf("mission SMS sent to %v, want Alpha's two phones", to)
	}
}

func TestReceiveSMS_MovesMission(t *testing.T) {
	f := newSMSFix(t)
	m := f.dispatch(t, f.sup, f.alpha)

	// Ann (a user) acknowledges, in lower case with extra spaces, from a spaced number.
	res, refusal, err := f.receive(f.gateway, "+33 6 11 11 11 11", "  fr1  ack  "+m.Code+" ")
	if err != nil || refusal != nil {
		t.Fatalf("ACK: %v %v", refusal, err)
	}
	got := f.mission(t, f.tenant.ID, m.ID)
	if res.Mission == nil || res.Mission.Status != "ACK" || got.Status != "ACK" || got.AckAt == nil {
		t.Fatalf("after ACK: %+v", got)
	}
	if got.ChannelUsed == nil || *got.ChannelUsed != model.ChannelSMS {
		t.Fatalf("channel_used after an SMS ACK of a CREATED mission: %v, want sms", got.ChannelUsed)
	}
	h := got.History
	if len(h) != 3 || h[1].From != "CREATED" || h[1].To != "SENT" || h[2].To != "ACK" ||
		h[1].Source != engine.MoveSourceSMS || h[2].Source != engine.MoveSourceSMS || h[2].Actor != f.opA.UserID {
		t.Fatalf("history after an SMS ACK: %+v", h)
	}
	if res.Outcome != engine.SMSOutcomeApplied || res.From != phoneAnn || res.Code != m.Code || res.Verb != "ACK" ||
		res.MissionID == nil || *res.MissionID != m.ID || res.Status != "ACK" || res.MemberID != f.alpha.Members[0].ID ||
		res.KeyID != f.gateway.KeyID {
		t.Fatalf("inbound record: %+v", res.SMSInbound)
	}

	// Al (no user) takes it on: ROUTE, SITE and DONE, from a number written with 00.
	for _, step := range []struct{ verb, status string }{{"ROUTE", "ON_ROUTE"}, {"SITE", "ON_SITE"}, {"DONE", "COMPLETED"}} {
		if _, refusal, err := f.receive(f.gateway, "0033-6-22-22-22-22", "FR1 "+step.verb+" "+m.Code); err != nil || refusal != nil {
			t.Fatalf("%s: %v %v", step.verb, refusal, err)
		}
		got = f.mission(t, f.tenant.ID, m.ID)
		if got.Status != step.status {
			t.Fatalf("after %s: %s, want %s", step.verb, got.Status, step.status)
		}
		last := got.History[len(got.History)-1]
		if last.Source != engine.MoveSourceSMS || last.Actor != f.alpha.Members[1].ID {
			t.Fatalf("move %s: %+v, want source sms by member %s", step.verb, last, f.alpha.Members[1].ID)
		}
	}
	if got.CompletedAt == nil || got.OnRouteAt == nil || got.OnSiteAt == nil {
		t.Fatalf("timestamps: %+v", got)
	}
	var hooks []string
	for _, p := range f.statusHooks(t, m.ID) {
		hooks = append(hooks, p.Status)
	}
	if !slices.Equal(hooks, []string{"ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"}) {
		t.Fatalf("mission.status_updated: %v", hooks)
	}
	// COMPLETED freed the team, closed the event and released the code: a late reply
	// from the team is mission_closed, and names no active mission to anyone else.
	err = f.e.View(context.Background(), func(tx model.Tx) error {
		tm, err := tx.Team(f.tenant.ID, f.alpha.ID)
		if err != nil || tm.Status != engine.TeamAvailable {
			t.Errorf("team after DONE: %v %v", tm, err)
		}
		ev, err := tx.Event(f.tenant.ID, m.EventID)
		if err != nil || ev.Status != model.EventClosed {
			t.Errorf("event after DONE: %v %v", ev, err)
		}
		_, err = tx.MissionByCode(f.tenant.ID, m.Code)
		AssertKind(t, err, model.KindNotFound)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, refusal, err = f.receive(f.gateway, phoneAl, "FR1 DONE "+m.Code)
	if err != nil || refusal == nil || refusal.Kind != model.KindMissionClosed || !strings.Contains(refusal.Msg, "COMPLETED") {
		t.Fatalf("a late reply from the team: %v %v, want mission_closed", refusal, err)
	}
	_, refusal, err = f.receive(f.gateway, phoneBob, "FR1 DONE "+m.Code)
	if err != nil || refusal == nil || refusal.Kind != model.KindNotFound {
		t.Fatalf("the code from another team's phone: %v %v, want not_found", refusal, err)
	}
	log := f.log(t, f.tenant.ID)
	if len(log) != 6 || log[0].Outcome != engine.SMSOutcomeUnknownCode || log[0].Error != model.KindNotFound ||
		log[1].Outcome != engine.SMSOutcomeRefused || log[1].Error != model.KindMissionClosed ||
		log[1].MissionID == nil || *log[1].MissionID != m.ID {
		t.Fatalf("inbound log: %+v", log)
	}
	for _, r := range log[2:] {
		if r.Outcome != engine.SMSOutcomeApplied || r.MissionID == nil || *r.MissionID != m.ID {
			t.Fatalf("inbound record %+v, want applied to %s", r, m.ID)
		}
	}
}

func TestReceiveSMS_Fail(t *testing.T) {
	f := newSMSFix(t)
	m := f.dispatch(t, f.sup, f.alpha)
	if _, refusal, err := f.receive(f.gateway, phoneAnn, "FR1 FAIL "+m.Code+" road blocked"); err != nil || refusal != nil {
		t.Fatalf("FAIL: %v %v", refusal, err)
	}
	got := f.mission(t, f.tenant.ID, m.ID)
	if got.Status != "FAILED" || got.FailedAt == nil || got.History[len(got.History)-1].Source != engine.MoveSourceSMS {
		t.Fatalf("after FAIL: %+v", got)
	}
	// FAIL straight from CREATED proves nothing of the channel.
	if got.ChannelUsed != nil {
		t.Fatalf("channel_used %v after FAIL", *got.ChannelUsed)
	}
	if n := len(f.statusHooks(t, m.ID)); n != 1 {
		t.Fatalf("%d mission.status_updated, want 1", n)
	}
}

// TestReceiveSMS_Refused: whatever is refused leaves the mission as it was, is recorded
// with its outcome, and comes back as the error the client gets.
func TestReceiveSMS_Refused(t *testing.T) {
	f := newSMSFix(t)
	m := f.dispatch(t, f.sup, f.alpha)
	otherM := f.dispatch(t, f.otherSup, f.omega)
	unknown := "22222"
	for unknown == m.Code || unknown == otherM.Code {
		unknown = "33333"
	}
	for _, tc := range []struct {
		name, from, body string
		kind             model.Kind
		field, outcome   string
		mission          bool // the record names the mission
	}{
		{"Empty", phoneAnn, "", model.KindValidation, "body", engine.SMSOutcomeInvalid, false},
		{"Blank", phoneAnn, "  \n ", model.KindValidation, "body", engine.SMSOutcomeInvalid, false},
		{"UnknownVerb", phoneAnn, "FR1 FOO X", model.KindValidation, "body", engine.SMSOutcomeInvalid, false},
		{"NotFR1", phoneAnn, "OK on our way", model.KindValidation, "body", engine.SMSOutcomeInvalid, false},
		{"MissingCode", phoneAnn, "FR1 ACK", model.KindValidation, "body", engine.SMSOutcomeInvalid, false},
		{"MalformedCode", phoneAnn, "FR1 ACK 1234O", model.KindValidation, "body", engine.SMSOutcomeInvalid, false},
		{"UnknownCode", phoneAnn, "FR1 ACK " + unknown, model.KindNotFound, "", engine.SMSOutcomeUnknownCode, false},
		{"OtherTenantsCode", phoneAnn, "FR1 ACK " + otherM.Code, model.KindNotFound, "", engine.SMSOutcomeUnknownCode, false},
		{"AnotherTeamsMember", phoneBob, "FR1 ACK " + m.Code, model.KindForbidden, "", engine.SMSOutcomeStranger, true},
		{"Stranger", "+44 7700 900123", "FR1 ACK " + m.Code, model.KindForbidden, "", engine.SMSOutcomeStranger, true},
		{"NoFrom", "", "FR1 ACK " + m.Code, model.KindValidation, "from", engine.SMSOutcomeInvalid, false},
		{"FromNotANumber", "ORANGE", "FR1 ACK " + m.Code, model.KindValidation, "from", engine.SMSOutcomeInvalid, false},
		{"Skip", phoneAnn, "FR1 SITE " + m.Code, model.KindInvalidTransition, "", engine.SMSOutcomeRefused, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.log(t, f.tenant.ID))
			res, refusal, err := f.receive(f.gateway, tc.from, tc.body)
			if err != nil || refusal == nil || refusal.Kind != tc.kind || refusal.Field != tc.field {
				t.Fatalf("%q from %q: %v %v, want %s on %q", tc.body, tc.from, refusal, err, tc.kind, tc.field)
			}
			if got := f.mission(t, f.tenant.ID, m.ID); got.Status != "CREATED" || len(got.History) != 1 {
				t.Fatalf("the mission moved: %+v", got)
			}
			log := f.log(t, f.tenant.ID)
			if len(log) != before+1 {
				t.Fatalf("%d records, want %d", len(log), before+1)
			}
			r := log[0]
			if r.ID != res.ID || r.Outcome != tc.outcome || r.Error != tc.kind || r.Message == "" || r.Body != tc.body ||
				(r.MissionID != nil) != tc.mission || tc.mission && *r.MissionID != m.ID {
				t.Fatalf("record %+v, want outcome %s, error %s", r, tc.outcome, tc.kind)
			}
		})
	}
	if got := f.mission(t, f.other.ID, otherM.ID); got.Status != "CREATED" {
		t.Fatalf("the other tenant's mission moved: %+v", got)
	}
	if n := len(f.log(t, f.other.ID)); n != 0 {
		t.Fatalf("the other tenant's log has %d records", n)
	}
	if n := len(f.statusHooks(t, m.ID)); n != 0 {
		t.Fatalf("%d mission.status_updated for refused replies", n)
	}

	t.Run("Twice", func(t *testing.T) {
		if _, refusal, err := f.receive(f.gateway, phoneAnn, "FR1 ACK "+m.Code); err != nil || refusal != nil {
			t.Fatalf("ACK: %v %v", refusal, err)
		}
		_, refusal, err := f.receive(f.gateway, phoneAl, "FR1 ACK "+m.Code)
		if err != nil || refusal == nil || refusal.Kind != model.KindInvalidTransition {
			t.Fatalf("a second ACK: %v %v, want invalid_transition", refusal, err)
		}
		if r := f.log(t, f.tenant.ID)[0]; r.Outcome != engine.SMSOutcomeRefused || r.MemberID != f.alpha.Members[1].ID {
			t.Fatalf("record %+v", r)
		}
	})

	t.Run("OtherTenantsGateway", func(t *testing.T) {
		// The other tenant's gateway sees its own mission, never acme's.
		_, refusal, err := f.receive(f.otherGateway, phoneAnn, "FR1 ROUTE "+m.Code)
		if err != nil || refusal == nil || refusal.Kind != model.KindNotFound {
			t.Fatalf("%v %v, want not_found", refusal, err)
		}
		if _, refusal, err := f.receive(f.otherGateway, phoneAnn, "FR1 ACK "+otherM.Code); err != nil || refusal != nil {
			t.Fatalf("the other tenant's own member: %v %v", refusal, err)
		}
		if got := f.mission(t, f.tenant.ID, m.ID); got.Status != "ACK" {
			t.Fatalf("acme's mission: %s", got.Status)
		}
	})
}

// TestReceiveSMS_Caller: only an API key with sms:inbound may post inbound SMS; nothing
// is recorded for anyone else.
func TestReceiveSMS_Caller(t *testing.T) {
	f := newSMSFix(t)
	m := f.dispatch(t, f.sup, f.alpha)
	userWithScopes := f.admin
	userWithScopes.Scopes = []string{model.PermSMSInbound} // ignored for a user
	for name, p := range map[string]model.Principal{"Admin": f.admin, "Operator": f.opA, "UserScopes": userWithScopes,
		"KeyWithoutScope": f.plain} {
		t.Run(name, func(t *testing.T) {
			_, _, err := f.receive(p, phoneAnn, "FR1 ACK "+m.Code)
			AssertKind(t, err, model.KindForbidden)
		})
	}
	if n := len(f.log(t, f.tenant.ID)); n != 0 {
		t.Fatalf("%d records of refused callers", n)
	}
	if got := f.mission(t, f.tenant.ID, m.ID); got.Status != "CREATED" {
		t.Fatalf("mission moved: %s", got.Status)
	}
}

func TestNormalizePhone(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"+33612345678", "+33612345678", true},
		{" +33 6 12 34 56 78 ", "+33612345678", true},
		{"+33-6-12-34-56-78", "+33612345678", true},
		{"+1 (415) 555.0100", "+14155550100", true},
		{"0033612345678", "+33612345678", true},
		{"33612345678", "+33612345678", true}, // a gateway that leaves out the '+'
		{"0612345678", "", false},             // a national number: no country
		{"+0612345678", "", false},
		{"33+612345678", "", false},
		{"++33612345678", "", false},
		{"+336", "", false},
		{"+3361234567890123", "", false},
		{"ORANGE", "", false},
		{"", "", false},
	} {
		got, ok := engine.NormalizePhone(tc.in)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("NormalizePhone(%q) = %q %v, want %q %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
