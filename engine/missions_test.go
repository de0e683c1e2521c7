package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// lifecycleFix is a tenant with two teams (A and B, each with a field operator as a
// member), principals of several roles, and a subscription to mission.status_updated.
type lifecycleFix struct {
	e            *engine.Engine
	clock        *model.FakeClock
	tenant       *model.Tenant
	other        *model.Tenant
	teamA, teamB *model.Team
	opA, opB     model.Principal // field operators of team A and team B
	sup, corp    model.Principal
	tech         model.Principal
}

func newLifecycleFix(t *testing.T) *lifecycleFix {
	t.Helper()
	e, clock := MustOpenEngine(t)
	f := &lifecycleFix{e: e, clock: clock}
	f.tenant = MustCreateTenant(t, e, "acme").Tenant
	f.other = MustCreateTenant(t, e, "other").Tenant
	user := func(email string, role model.Role) model.Principal {
		u := MustCreateUser(t, e, "acme", email, role)
		return model.Principal{TenantID: f.tenant.ID, Plan: f.tenant.LicenseType, TenantActive: true, UserID: u.ID, Role: role}
	}
	f.opA = user("op-a@acme.example", model.RoleFieldOperator)
	f.opB = user("op-b@acme.example", model.RoleFieldOperator)
	f.sup = user("sup@acme.example", model.RoleOperationalSupervisor)
	f.corp = user("corp@acme.example", model.RoleCorporateClient)
	f.tech = user("tech@acme.example", model.RoleCompanyTech)
	mustDo(t, func() (err error) {
		if f.teamA, err = e.CreateTeam(context.Background(), tenantAdmin(f.tenant.ID), model.TeamInput{Name: "Alpha", Verticals: []string{"emergency"},
			Members: []model.MemberInput{{Name: "Ann", UserID: f.opA.UserID}, {Name: "Al"}}}, nil); err != nil {
			return err
		}
		if f.teamB, err = e.CreateTeam(context.Background(), tenantAdmin(f.tenant.ID), model.TeamInput{Name: "Bravo", Verticals: []string{"emergency"},
			Members: []model.MemberInput{{Name: "Bob", UserID: f.opB.UserID}}}, nil); err != nil {
			return err
		}
		_, err = e.CreateWebhook(context.Background(), f.sup, model.WebhookInput{URL: "https://hooks.example/m",
			Events: []string{"mission.status_updated"}}, nil)
		return err
	})
	return f
}

// event stores a pending event.
func (f *lifecycleFix) event(t *testing.T) *model.Event {
	t.Helper()
	now := model.At(f.clock.Now())
	ev := &model.Event{ID: model.NewIDAt(now.Time), Type: "FIRE", Priority: "high", Vertical: "emergency",
		IdempotencyKey: model.NewID(), Status: model.EventDelivered, ChannelSelected: model.ChannelREST,
		ChannelsAttempted: []string{}, Source: engine.SourceAPI, CreatedAt: now, UpdatedAt: now}
	MustUpdate(t, f.e, func(tx model.Tx) error { return tx.PutEvent(f.tenant.ID, ev) })
	return ev
}

// mission stores a CREATED mission of a team for an event, as a dispatch would, and puts
// the team on_mission.
func (f *lifecycleFix) mission(t *testing.T, team *model.Team, ev *model.Event) *model.Mission {
	t.Helper()
	now := model.At(f.clock.Now())
	m := &model.Mission{ID: model.NewIDAt(now.Time), EventID: ev.ID, TeamID: team.ID, Status: model.MissionCreated,
		Vertical: ev.Vertical, Priority: ev.Priority, DispatchedAt: now, DispatchID: model.NewID(), DispatchedBy: f.sup.UserID,
		History:   []model.MissionMove{{To: model.MissionCreated, At: now, Actor: f.sup.UserID, Source: engine.MoveSourceAPI}},
		CreatedAt: now, UpdatedAt: now}
	MustUpdate(t, f.e, func(tx model.Tx) error {
		if err := tx.PutMission(f.tenant.ID, m); err != nil {
			return err
		}
		tm, err := tx.Team(f.tenant.ID, team.ID)
		if err != nil {
			return err
		}
		tm.Status = engine.TeamOnMission
		return tx.PutTeam(f.tenant.ID, tm)
	})
	f.clock.Advance(time.Millisecond) // the next record's id sorts after this one
	return m
}

func (f *lifecycleFix) move(p model.Principal, id, status string, feedback string, at *model.Time) (*model.Mission, error) {
	var out *model.Mission
	in := model.MissionStatusInput{Status: status}
	if feedback != "" {
		in.Feedback = json.RawMessage(feedback)
	}
	err := func() (err error) {
		out, err = f.e.UpdateMissionStatus(context.Background(), p, id, in, engine.MoveSourceAPI, at, nil)
		return err
	}()
	return out, err
}

func (f *lifecycleFix) mustMove(t *testing.T, p model.Principal, id, status string) *model.Mission {
	t.Helper()
	m, err := f.move(p, id, status, "", nil)
	if err != nil {
		t.Fatalf("move to %s: %v", status, err)
	}
	return m
}

func (f *lifecycleFix) read(t *testing.T) (func(string) *model.Mission, func(string) *model.Team, func(string) *model.Event) {
	view := func(fn func(tx model.Tx) error) {
		t.Helper()
		if err := f.e.View(context.Background(), fn); err != nil {
			t.Fatal(err)
		}
	}
	return func(id string) (m *model.Mission) {
			view(func(tx model.Tx) (err error) { m, err = tx.Mission(f.tenant.ID, id); return err })
			return m
		}, func(id string) (tm *model.Team) {
			view(func(tx model.Tx) (err error) { tm, err = tx.Team(f.tenant.ID, id); return err })
			return tm
		}, func(id string) (ev *model.Event) {
			view(func(tx model.Tx) (err error) { ev, err = tx.Event(f.tenant.ID, id); return err })
			return ev
		}
}

// hooks returns the payloads of the mission.status_updated messages in the outbox,
// oldest first.
func (f *lifecycleFix) hooks(t *testing.T) []model.MissionStatusUpdate {
	t.Helper()
	var out []model.MissionStatusUpdate
	err := f.e.View(context.Background(), func(tx model.Tx) error {
		refs, err := tx.DueOutbox()
		if err != nil {
			return err
		}
		for _, r := range refs {
			o, err := tx.OutboxEntry(r.TenantID, r.ID)
			if err != nil {
				return err
			}
			if o.Name != "mission.status_updated" {
				continue
			}
			var env struct {
				Event   string                    `json:"event"`
				Payload model.MissionStatusUpdate `json:"payload"`
			}
			if err := json.Unmarshal(o.Body, &env); err != nil {
				return err
			}
			out = append(out, env.Payload)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEngine_UpdateMissionStatus(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := newLifecycleFix(t)
		mission, team, event := f.read(t)
		ev := f.event(t)
		m := f.mission(t, f.teamA, ev)
		f.clock.Advance(time.Minute)
		ackTime := f.clock.Now()
		got := f.mustMove(t, f.opA, m.ID, "ACK")
		if got.Status != "ACK" || got.AckAt == nil || !got.AckAt.Equal(ackTime) || !got.UpdatedAt.Equal(ackTime) {
			t.Fatalf("after ACK: %+v", got)
		}
		// ACK from CREATED records SENT at the same instant.
		h := got.History
		if len(h) != 3 || h[1].From != "CREATED" || h[1].To != "SENT" || h[2].From != "SENT" || h[2].To != "ACK" ||
			!h[1].At.Equal(h[2].At.Time) || h[2].Actor != f.opA.UserID || h[2].Source != engine.MoveSourceAPI {
			t.Fatalf("history after ACK: %+v", h)
		}
		f.clock.Advance(time.Minute)
		f.mustMove(t, f.opA, m.ID, "ON_ROUTE")
		f.clock.Advance(time.Minute)
		f.mustMove(t, f.opA, m.ID, "ON_SITE")
		f.clock.Advance(time.Minute)
		doneAt := f.clock.Now()
		got, err := f.move(f.sup, m.ID, "COMPLETED", ` { "outcome": "resolved", "n": 2 } `, nil)
		if err != nil {
			t.Fatal(err)
		}
		stored := mission(m.ID)
		if stored.Status != "COMPLETED" || !stored.AckAt.Equal(ackTime) || stored.OnRouteAt == nil || stored.OnSiteAt == nil ||
			stored.CompletedAt == nil || !stored.CompletedAt.Equal(doneAt) || stored.FailedAt != nil ||
			string(stored.Feedback) != `{"outcome":"resolved","n":2}` || len(stored.History) != 6 {
			t.Fatalf("stored: %+v", stored)
		}
		if last := stored.History[5]; last.Actor != f.sup.UserID || string(last.Feedback) != `{"outcome":"resolved","n":2}` {
			t.Fatalf("last move: %+v", last)
		}
		if got.Status != stored.Status {
			t.Fatalf("answer %+v", got)
		}
		if tm := team(f.teamA.ID); tm.Status != engine.TeamAvailable || !tm.UpdatedAt.Equal(doneAt) {
			t.Fatalf("team: %+v", tm)
		}
		if e := event(ev.ID); e.Status != model.EventClosed || e.ClosedAt == nil || !e.ClosedAt.Equal(doneAt) {
			t.Fatalf("event: %+v", e)
		}
		hooks := f.hooks(t)
		if len(hooks) != 4 {
			t.Fatalf("%d webhook messages, want 4", len(hooks))
		}
		if h := hooks[0]; h.Status != "ACK" || string(h.Feedback) != "{}" || h.MissionID != m.ID {
			t.Fatalf("first hook: %+v", h)
		}
		if h := hooks[3]; h.Status != "COMPLETED" || h.MissionID != m.ID || h.EventID != ev.ID || h.TeamID != f.teamA.ID ||
			!h.At.Equal(doneAt) || string(h.Feedback) != `{"outcome":"resolved","n":2}` {
			t.Fatalf("last hook: %+v", h)
		}
	})

	// The contract types the webhook's feedback as an object: a move without feedback
	// sends {} (never null), while the Mission resource keeps null until feedback is given,
	// then the last one given. The stream's change of the same name carries the same payload.
	t.Run("WebhookFeedbackIsAnObject", func(t *testing.T) {
		f := newLifecycleFix(t)
		mission, _, _ := f.read(t)
		m := f.mission(t, f.teamA, f.event(t))
		sub, _, _, _ := f.e.Stream().Subscribe(f.tenant.ID, 0)
		defer sub.Close()
		for _, mv := range []struct{ status, feedback, hook, stored string }{
			{"ACK", "", `{}`, "null"},
			{"ON_ROUTE", "null", `{}`, "null"},
			{"ON_SITE", `{"eta_min": 3}`, `{"eta_min":3}`, `{"eta_min":3}`},
			{"COMPLETED", "", `{}`, `{"eta_min":3}`},
		} {
			f.clock.Advance(time.Minute)
			if _, err := f.move(f.sup, m.ID, mv.status, mv.feedback, nil); err != nil {
				t.Fatal(err)
			}
			hooks := f.hooks(t)
			if h := hooks[len(hooks)-1]; h.Status != mv.status || string(h.Feedback) != mv.hook {
				t.Fatalf("%s: webhook feedback %s, want %s", mv.status, h.Feedback, mv.hook)
			}
			var rec struct {
				Feedback json.RawMessage `json:"feedback"`
			}
			b, _ := json.Marshal(mission(m.ID))
			if err := json.Unmarshal(b, &rec); err != nil || string(rec.Feedback) != mv.stored {
				t.Fatalf("%s: the mission's feedback is %s, want %s", mv.status, rec.Feedback, mv.stored)
			}
		}
		var seen []string
		for len(seen) < 4 {
			select {
			case c := <-sub.C:
				if c.Name != "mission.status_updated" {
					continue
				}
				var u model.MissionStatusUpdate
				if err := json.Unmarshal(c.Data, &u); err != nil {
					t.Fatal(err)
				}
				seen = append(seen, string(u.Feedback))
			case <-time.After(5 * time.Second):
				t.Fatalf("stream changes: %v", seen)
			}
		}
		if got := strings.Join(seen, " "); got != `{} {} {"eta_min":3} {}` {
			t.Fatalf("stream feedback: %s", got)
		}
	})

	t.Run("TimestampsSetOnce", func(t *testing.T) {
		f := newLifecycleFix(t)
		mission, _, _ := f.read(t)
		m := f.mission(t, f.teamA, f.event(t))
		if err := f.e.Update(context.Background(), func(tx model.Tx) error {
			return f.e.MarkMissionSent(tx, f.tenant.ID, m.ID, model.ChannelREST)
		}); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Second)
		ack := f.mustMove(t, f.opA, m.ID, "ACK").AckAt
		f.clock.Advance(time.Second)
		onRoute := f.mustMove(t, f.opA, m.ID, "ON_ROUTE").OnRouteAt
		f.clock.Advance(time.Second)
		got := f.mustMove(t, f.opA, m.ID, "FAILED")
		if !got.AckAt.Equal(ack.Time) || !got.OnRouteAt.Equal(onRoute.Time) || got.OnSiteAt != nil || got.CompletedAt != nil ||
			got.FailedAt == nil || !got.FailedAt.After(onRoute.Time) || !onRoute.After(ack.Time) {
			t.Fatalf("timestamps: %+v", got)
		}
		if len(got.History) != 5 { // CREATED, SENT, ACK, ON_ROUTE, FAILED
			t.Fatalf("history: %+v", got.History)
		}
		// The refused move below leaves the stored mission alone.
		_, err := f.move(f.opA, m.ID, "FAILED", "", nil)
		AssertKind(t, err, model.KindMissionClosed)
		if s := mission(m.ID); !s.FailedAt.Equal(got.FailedAt.Time) || len(s.History) != 5 {
			t.Fatalf("stored after a refused move: %+v", s)
		}
	})

	t.Run("FailedClosesOnlyTheLastActive", func(t *testing.T) {
		f := newLifecycleFix(t)
		_, team, event := f.read(t)
		ev := f.event(t)
		first := f.mission(t, f.teamA, ev)
		backup := f.mission(t, f.teamB, ev)
		f.mustMove(t, f.sup, first.ID, "FAILED")
		if e := event(ev.ID); e.Status == model.EventClosed || e.ClosedAt != nil {
			t.Fatalf("event closed while the backup is active: %+v", e)
		}
		if tm := team(f.teamA.ID); tm.Status != engine.TeamAvailable {
			t.Fatalf("team A: %s", tm.Status)
		}
		if tm := team(f.teamB.ID); tm.Status != engine.TeamOnMission {
			t.Fatalf("team B: %s", tm.Status)
		}
		f.clock.Advance(time.Minute)
		f.mustMove(t, f.opB, backup.ID, "FAILED")
		if e := event(ev.ID); e.Status != model.EventClosed || !e.ClosedAt.Equal(f.clock.Now()) {
			t.Fatalf("event after the last failure: %+v", e)
		}
		if tm := team(f.teamB.ID); tm.Status != engine.TeamAvailable {
			t.Fatalf("team B: %s", tm.Status)
		}
	})

	t.Run("CompletedClosesBackupGoesOn", func(t *testing.T) {
		f := newLifecycleFix(t)
		_, team, event := f.read(t)
		ev := f.event(t)
		first := f.mission(t, f.teamA, ev)
		backup := f.mission(t, f.teamB, ev)
		for _, s := range []string{"ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"} {
			f.mustMove(t, f.opA, first.ID, s)
		}
		closedAt := f.clock.Now()
		if e := event(ev.ID); e.Status != model.EventClosed || !e.ClosedAt.Equal(closedAt) {
			t.Fatalf("event: %+v", e)
		}
		f.clock.Advance(time.Minute)
		// The backup mission of the closed event goes on until it ends.
		f.mustMove(t, f.opB, backup.ID, "ACK")
		f.mustMove(t, f.opB, backup.ID, "FAILED")
		if e := event(ev.ID); e.Status != model.EventClosed || !e.ClosedAt.Equal(closedAt) {
			t.Fatalf("closed_at moved: %+v", e)
		}
		if tm := team(f.teamB.ID); tm.Status != engine.TeamAvailable {
			t.Fatalf("team B: %s", tm.Status)
		}
	})

	t.Run("TeamWithAnotherActiveMissionStays", func(t *testing.T) {
		f := newLifecycleFix(t)
		_, team, _ := f.read(t)
		one := f.mission(t, f.teamA, f.event(t))
		two := f.mission(t, f.teamA, f.event(t))
		f.mustMove(t, f.opA, one.ID, "FAILED")
		if tm := team(f.teamA.ID); tm.Status != engine.TeamOnMission {
			t.Fatalf("team freed while a mission is active: %s", tm.Status)
		}
		f.mustMove(t, f.opA, two.ID, "FAILED")
		if tm := team(f.teamA.ID); tm.Status != engine.TeamAvailable {
			t.Fatalf("team: %s", tm.Status)
		}
	})

	t.Run("OffDutyTeamStaysOffDuty", func(t *testing.T) {
		f := newLifecycleFix(t)
		_, team, _ := f.read(t)
		m := f.mission(t, f.teamA, f.event(t))
		MustUpdate(t, f.e, func(tx model.Tx) error {
			tm, _ := tx.Team(f.tenant.ID, f.teamA.ID)
			tm.Status = engine.TeamOffDuty
			return tx.PutTeam(f.tenant.ID, tm)
		})
		f.mustMove(t, f.sup, m.ID, "FAILED")
		if tm := team(f.teamA.ID); tm.Status != engine.TeamOffDuty {
			t.Fatalf("team: %s", tm.Status)
		}
	})

	t.Run("ErrTransitions", func(t *testing.T) {
		f := newLifecycleFix(t)
		m := f.mission(t, f.teamA, f.event(t))
		_, err := f.move(f.opA, m.ID, "SENT", "", nil)
		AssertKind(t, err, model.KindInvalidTransition)
		_, err = f.move(f.opA, m.ID, "ON_SITE", "", nil)
		e := AssertKind(t, err, model.KindInvalidTransition)
		if e.Msg != "CREATED → ON_SITE is not allowed; allowed next: ACK, FAILED" {
			t.Fatalf("message %q", e.Msg)
		}
		f.mustMove(t, f.opA, m.ID, "ACK")
		_, err = f.move(f.opA, m.ID, "ACK", "", nil)
		AssertKind(t, err, model.KindInvalidTransition)
		_, err = f.move(f.sup, m.ID, "CREATED", "", nil)
		AssertKind(t, err, model.KindInvalidTransition)
		for _, s := range []string{"ON_ROUTE", "ON_SITE", "COMPLETED"} {
			f.mustMove(t, f.opA, m.ID, s)
		}
		for _, s := range []string{"FAILED", "COMPLETED", "ACK", "CREATED"} {
			_, err = f.move(f.sup, m.ID, s, "", nil)
			AssertKind(t, err, model.KindMissionClosed)
		}
		if n := len(f.hooks(t)); n != 4 {
			t.Fatalf("%d webhook messages, want 4 (refused moves fire none)", n)
		}
	})

	t.Run("ErrValidation", func(t *testing.T) {
		f := newLifecycleFix(t)
		m := f.mission(t, f.teamA, f.event(t))
		for _, s := range []string{"", "DONE", "ack"} {
			_, err := f.move(f.opA, m.ID, s, "", nil)
			AssertInvalid(t, err, "status")
		}
		for _, fb := range []string{`[1]`, `"fine"`, `12`, `true`, `{"a":`, `{"big":"` + strings.Repeat("x", 16<<10) + `"}`} {
			_, err := f.move(f.opA, m.ID, "ACK", fb, nil)
			AssertInvalid(t, err, "feedback")
		}
		// null is no feedback.
		got, err := f.move(f.opA, m.ID, "ACK", `null`, nil)
		if err != nil || (got.Feedback != nil && string(got.Feedback) != "null") {
			t.Fatalf("null feedback: %+v, %v", got, err)
		}
	})

	t.Run("ErrPermissions", func(t *testing.T) {
		f := newLifecycleFix(t)
		m := f.mission(t, f.teamA, f.event(t))
		for _, p := range []model.Principal{f.corp, f.tech} {
			_, err := f.move(p, m.ID, "ACK", "", nil)
			AssertKind(t, err, model.KindForbidden)
		}
		// A field operator of another team does not see the mission.
		_, err := f.move(f.opB, m.ID, "ACK", "", nil)
		AssertKind(t, err, model.KindNotFound)
		// Another tenant's principal, and ids that name nothing.
		otherSup := model.Principal{TenantID: f.other.ID, TenantActive: true, UserID: model.NewID(), Role: model.RoleCompanyAdmin}
		_, err = f.move(otherSup, m.ID, "ACK", "", nil)
		AssertKind(t, err, model.KindNotFound)
		_, err = f.move(f.sup, model.NewID(), "ACK", "", nil)
		AssertKind(t, err, model.KindNotFound)
		_, err = f.move(f.sup, "nope", "ACK", "", nil)
		AssertKind(t, err, model.KindNotFound)
		// An API key holding missions:receive alone is no team member and not restricted.
		key := model.Principal{TenantID: f.tenant.ID, TenantActive: true, KeyID: model.NewID(),
			Scopes: []string{model.PermMissionsReceive}}
		got := f.mustMove(t, key, m.ID, "ACK")
		if got.History[len(got.History)-1].Actor != key.KeyID {
			t.Fatalf("actor: %+v", got.History)
		}
	})

	t.Run("CapturedAt", func(t *testing.T) {
		f := newLifecycleFix(t)
		m := f.mission(t, f.teamA, f.event(t))
		f.clock.Advance(10 * time.Minute)
		now := f.clock.Now()
		_, err := f.move(f.opA, m.ID, "ACK", "", model.TimePtr(now.Add(3*time.Minute)))
		AssertInvalid(t, err, "captured_at")
		// Before the mission's last recorded move.
		_, err = f.move(f.opA, m.ID, "ACK", "", model.TimePtr(m.CreatedAt.Add(-time.Second)))
		e := AssertKind(t, err, model.KindInvalidTransition)
		if !strings.Contains(e.Msg, "captured before the mission's last recorded move") {
			t.Fatalf("message %q", e.Msg)
		}
		// A time in the past is the time of the move.
		captured := now.Add(-5 * time.Minute)
		got, err := f.move(f.opA, m.ID, "ACK", "", model.TimePtr(captured))
		if err != nil || !got.AckAt.Equal(captured) || !got.UpdatedAt.Equal(now) {
			t.Fatalf("ACK captured earlier: %+v, %v", got, err)
		}
		// A time slightly ahead (device clock drift) counts as now.
		got, err = f.move(f.opA, m.ID, "ON_ROUTE", "", model.TimePtr(now.Add(time.Minute)))
		if err != nil || !got.OnRouteAt.Equal(now) {
			t.Fatalf("ON_ROUTE captured ahead: %+v, %v", got, err)
		}
		// An offline move older than the last one is refused.
		_, err = f.move(f.opA, m.ID, "ON_SITE", "", model.TimePtr(captured))
		AssertKind(t, err, model.KindInvalidTransition)
	})
}

func TestEngine_MarkMissionSent(t *testing.T) {
	f := newLifecycleFix(t)
	mission, _, _ := f.read(t)
	m := f.mission(t, f.teamA, f.event(t))
	mark := func(id string) error {
		return f.e.Update(context.Background(), func(tx model.Tx) error {
			return f.e.MarkMissionSent(tx, f.tenant.ID, id, model.ChannelSMS)
		})
	}
	f.clock.Advance(time.Second)
	if err := mark(m.ID); err != nil {
		t.Fatal(err)
	}
	got := mission(m.ID)
	last := got.History[len(got.History)-1]
	if got.Status != "SENT" || got.ChannelUsed == nil || *got.ChannelUsed != "sms" || len(got.History) != 2 ||
		last.From != "CREATED" || last.To != "SENT" || last.Actor != model.NilID || last.Source != engine.MoveSourceSystem ||
		!last.At.Equal(f.clock.Now()) {
		t.Fatalf("after MarkMissionSent: %+v", got)
	}
	if err := mark(m.ID); err != nil || len(mission(m.ID).History) != 2 {
		t.Fatalf("second mark: %v", err)
	}
	f.mustMove(t, f.opA, m.ID, "ACK")
	if err := mark(m.ID); err != nil || mission(m.ID).Status != "ACK" {
		t.Fatalf("mark after ACK: %v", err)
	}
	if n := len(f.hooks(t)); n != 1 { // the ACK only
		t.Fatalf("%d webhook messages, want 1", n)
	}
	AssertKind(t, mark(model.NewID()), model.KindNotFound)
}

func TestEngine_Missions(t *testing.T) {
	f := newLifecycleFix(t)
	ctx := context.Background()
	ev1, ev2 := f.event(t), f.event(t)
	a1 := f.mission(t, f.teamA, ev1)
	b1 := f.mission(t, f.teamB, ev1)
	a2 := f.mission(t, f.teamA, ev2)
	f.mustMove(t, f.opA, a2.ID, "ACK")
	ids := func(ms []model.Mission) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.ID)
		}
		return strings.Join(s, ",")
	}
	list := func(p model.Principal, q model.MissionQuery, pg model.Page) ([]model.Mission, string) {
		t.Helper()
		ms, next, err := f.e.Missions(ctx, p, q, pg)
		if err != nil {
			t.Fatalf("Missions(%+v): %v", q, err)
		}
		return ms, next
	}
	all := model.Page{Limit: 50}
	for _, tc := range []struct {
		name string
		p    model.Principal
		q    model.MissionQuery
		want []*model.Mission
	}{
		{"all, newest first", f.sup, model.MissionQuery{}, []*model.Mission{a2, b1, a1}},
		{"status", f.sup, model.MissionQuery{Status: "ACK"}, []*model.Mission{a2}},
		{"team", f.corp, model.MissionQuery{TeamID: f.teamB.ID}, []*model.Mission{b1}},
		{"member", f.sup, model.MissionQuery{MemberID: f.teamA.Members[1].ID}, []*model.Mission{a2, a1}},
		{"event", f.sup, model.MissionQuery{EventID: ev1.ID}, []*model.Mission{b1, a1}},
		{"unknown team", f.sup, model.MissionQuery{TeamID: model.NewID()}, nil},
		{"unknown member", f.sup, model.MissionQuery{MemberID: model.NewID()}, nil},
		{"origin", f.sup, model.MissionQuery{Origin: model.NewID()}, nil},
		{"field operator: own team", f.opA, model.MissionQuery{}, []*model.Mission{a2, a1}},
		{"field operator: own team, status", f.opB, model.MissionQuery{Status: "CREATED"}, []*model.Mission{b1}},
		{"field operator: another team", f.opB, model.MissionQuery{TeamID: f.teamA.ID}, nil},
	} {
		ms, _ := list(tc.p, tc.q, all)
		var want []model.Mission
		for _, m := range tc.want {
			want = append(want, *m)
		}
		if ids(ms) != ids(want) {
			t.Errorf("%s: got %s, want %s", tc.name, ids(ms), ids(want))
		}
	}

	t.Run("Cursor", func(t *testing.T) {
		var got []model.Mission
		cursor := ""
		for range 5 {
			ms, next := list(f.sup, model.MissionQuery{}, model.Page{Limit: 2, Cursor: cursor})
			got = append(got, ms...)
			if cursor = next; cursor == "" {
				break
			}
		}
		if ids(got) != strings.Join([]string{a2.ID, b1.ID, a1.ID}, ",") {
			t.Fatalf("pages: %s", ids(got))
		}
	})

	t.Run("ErrValidation", func(t *testing.T) {
		_, _, err := f.e.Missions(ctx, f.sup, model.MissionQuery{Status: "DONE"}, all)
		AssertInvalid(t, err, "status")
		_, _, err = f.e.Missions(ctx, f.sup, model.MissionQuery{TeamID: "x"}, all)
		AssertInvalid(t, err, "team_id")
		_, _, err = f.e.Missions(ctx, f.sup, model.MissionQuery{MemberID: "x"}, all)
		AssertInvalid(t, err, "member_id")
		_, _, err = f.e.Missions(ctx, f.sup, model.MissionQuery{EventID: "x"}, all)
		AssertInvalid(t, err, "event_id")
		_, _, err = f.e.Missions(ctx, f.sup, model.MissionQuery{}, model.Page{Limit: 2, Cursor: "!!"})
		AssertKind(t, err, model.KindValidation)
		_, _, err = f.e.Missions(ctx, model.Principal{TenantID: f.tenant.ID, KeyID: model.NewID(),
			Scopes: []string{model.PermEventsRead}}, model.MissionQuery{}, all)
		AssertKind(t, err, model.KindForbidden)
	})

	t.Run("One", func(t *testing.T) {
		m, err := f.e.Mission(ctx, f.opA, a2.ID)
		if err != nil || m.ID != a2.ID || len(m.History) != 3 {
			t.Fatalf("Mission: %+v, %v", m, err)
		}
		_, err = f.e.Mission(ctx, f.opB, a2.ID)
		AssertKind(t, err, model.KindNotFound)
		if _, err = f.e.Mission(ctx, f.corp, a2.ID); err != nil {
			t.Fatal(err)
		}
		_, err = f.e.Mission(ctx, model.Principal{TenantID: f.other.ID, UserID: model.NewID(), Role: model.RoleCompanyAdmin}, a2.ID)
		AssertKind(t, err, model.KindNotFound)
		_, err = f.e.Mission(ctx, f.sup, "not-an-id")
		AssertKind(t, err, model.KindNotFound)
	})
}
