package engine

import (
	"context"
	"slices"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// Webhook names of the field response.
const (
	HookTeamDispatched     = "team.dispatched"
	HookMissionReinforced  = "mission.reinforced"
	HookDispatchRequiresMn = "dispatch.requires_manual"
)

// OutboxReinforce is the outbox entry of a mission's reinforcement check: no call, a
// transaction at its due time.
const OutboxReinforce = model.OutboxReinforce

// DispatchTeam sends a team to an event by hand, in one transaction: the Dispatch record, a
// CREATED mission, the team on_mission, the team.dispatched notification and one
// billable operation, all in the caller's transaction. A second team on an event whose
// mission is active is a backup: an independent mission. A team that is not available is
// team_unavailable; an available team with no members is team_empty unless the input
// confirms it (docs/decisions/0076-score-teams-nobody-receives.md). The
// input is checked once, before the transaction (a refused input writes nothing, its
// idempotency key included).
func (e *Engine) DispatchTeam(ctx context.Context, p model.Principal, in model.DispatchInput, w *model.Write) (*model.Dispatch, error) {
	if err := p.Require(model.PermDispatchAssign); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return write(ctx, e, p.TenantID, w, func(tx model.Tx) (*model.Dispatch, error) { return e.dispatchTeam(tx, p, in) })
}

// dispatchTeam is DispatchTeam within tx, its input checked.
func (e *Engine) dispatchTeam(tx model.Tx, p model.Principal, in model.DispatchInput) (*model.Dispatch, error) {
	ev, err := tx.Event(p.TenantID, in.EventID)
	if err != nil {
		return nil, err
	}
	team, err := tx.Team(p.TenantID, in.TeamID)
	if err != nil {
		return nil, err
	}
	if err := dispatchable(ev, team, in.ConfirmEmptyTeam); err != nil {
		return nil, err
	}
	by, err := changeActor(tx, p)
	if err != nil {
		return nil, err
	}
	d, _, err := e.dispatch(tx, p.TenantID, ev, team, dispatchOrder{actor: p.ActorID(), by: by, source: MoveSourceAPI,
		notes: in.Notes, lat: in.EventLat, lng: in.EventLng})
	return d, err
}

// dispatchable checks that team may be dispatched to ev here: the event open and this
// node's, the team available and with members (unless confirmed empty).
func dispatchable(ev *model.Event, team *model.Team, confirmEmpty bool) error {
	if ev.Status == model.EventClosed {
		return model.Errorf(model.KindEventClosed, "event %s is closed", ev.ID)
	}
	if ev.Origin != nil {
		return model.Errorf(model.KindConflict, "event %s is replicated from node %s: its teams are dispatched there", ev.ID, *ev.Origin)
	}
	if team.Status != TeamAvailable {
		return model.Errorf(model.KindTeamUnavailable, "team %s is %s, not available", model.Quote(team.Name), team.Status)
	}
	if len(team.Members) == 0 && !confirmEmpty {
		return model.Errorf(model.KindTeamEmpty, "team %s has no members: nobody would receive the mission; "+
			"add members, or send \"confirm_empty_team\": true to dispatch it anyway", model.Quote(team.Name))
	}
	return nil
}

// dispatchOrder says who dispatches and what the mission carries.
type dispatchOrder struct {
	actor, source, notes string
	// by names the actor for the other teams of the event (a backup's mission_update).
	by              model.ChangeActor
	lat, lng        *float64
	reinforcementOf *string
	// requestID is the central node's dispatch request the dispatch answers.
	requestID *string
}

// dispatch writes a dispatch of team to ev within tx (the checks are the caller's).
func (e *Engine) dispatch(tx model.Tx, tenantID string, ev *model.Event, team *model.Team, o dispatchOrder) (*model.Dispatch, *model.Mission, error) {
	t, err := tx.Tenant(tenantID)
	if err != nil {
		return nil, nil, err
	}
	now := model.At(e.clock.Now())
	m := &model.Mission{ID: e.ids.at(now.Time), EventID: ev.ID, TeamID: team.ID, Status: model.MissionCreated,
		Vertical: ev.Vertical, Priority: ev.Priority, Notes: o.notes, EventLat: o.lat, EventLng: o.lng,
		DispatchedAt: now, DispatchedBy: o.actor, ReinforcementOf: o.reinforcementOf, Origin: ev.Origin,
		History:   []model.MissionMove{{To: model.MissionCreated, At: now, Actor: o.actor, Source: o.source}},
		CreatedAt: now, UpdatedAt: now}
	d := &model.Dispatch{ID: e.ids.at(now.Time), TenantID: tenantID, EventID: ev.ID, TeamID: team.ID,
		DispatchedBy: o.actor, DispatchedAt: now, Notes: o.notes, MissionID: m.ID, Origin: ev.Origin,
		DispatchRequestID: o.requestID}
	m.DispatchID = d.ID
	if m.Code, err = newMissionCode(tx, tenantID, m.ID); err != nil {
		return nil, nil, err
	}
	if err := e.closeEventAlerts(tx, tenantID, ev.ID); err != nil {
		return nil, nil, err
	}
	team.SetStatus(TeamOnMission, now)
	if err := tx.PutTeam(tenantID, team); err != nil {
		return nil, nil, err
	}
	teamStatusMoved(tx, tenantID, team)
	if err := e.publish(tx, tenantID, StreamTeamUpdated, model.PermTeamsRead, team.ID, team); err != nil {
		return nil, nil, err
	}
	if err := putMission(tx, tenantID, m); err != nil {
		return nil, nil, err
	}
	if err := putDispatch(tx, tenantID, d); err != nil {
		return nil, nil, err
	}
	if err := tx.PutLedgerEntry(tenantID, &model.LedgerEntry{ID: e.ids.at(now.Time), Kind: "dispatch", DispatchID: d.ID,
		MissionID: m.ID, EventID: ev.ID, TeamID: team.ID, At: now}); err != nil {
		return nil, nil, err
	}
	if err := e.count(tx, tenantID, now.Time, model.UsageDelta{MissionState: model.MissionCreated}); err != nil {
		return nil, nil, err
	}
	if err := e.notifyTeam(tx, tenantID, ev, team, d, m); err != nil {
		return nil, nil, err
	}
	// The teams already on the event learn of their backup.
	what := model.UpdateBackup
	if o.reinforcementOf != nil {
		what = model.UpdateReinforcement
	}
	if err := e.tellOtherMissions(tx, tenantID, m, model.MissionChange{What: what, By: o.by, At: now, Channel: o.source,
		TeamID: team.ID, TeamName: team.Name, MissionID: m.ID}); err != nil {
		return nil, nil, err
	}
	if o.reinforcementOf == nil {
		if err := e.armReinforcement(tx, t, m); err != nil {
			return nil, nil, err
		}
	}
	return d, m, nil
}

// reinforceable reports whether a mission is one that reinforcement watches: dispatched
// here (not a reinforcement itself, not replicated), not yet reinforced, not yet at ACK.
func reinforceable(m *model.Mission) bool {
	return m.ReinforcementOf == nil && m.Origin == nil && !m.Reinforced &&
		(m.Status == model.MissionCreated || m.Status == model.MissionSent)
}

// UnacknowledgedAlertMin is the minutes after its dispatch at which a mission not at ACK
// raises mission_unacknowledged when the tenant has no reinforcement timeout
// (docs/decisions/0260-mission-timers.md).
const UnacknowledgedAlertMin = 5

// checkMin is the minutes after its dispatch at which a mission's check runs: the
// tenant's reinforcement timeout, or UnacknowledgedAlertMin when there is none (the
// check then only raises the alert).
func checkMin(t *model.Tenant) int {
	if t.ReinforcementTimeoutMin == 0 {
		return UnacknowledgedAlertMin
	}
	return t.ReinforcementTimeoutMin
}

// reinforceDue is when a mission's check is due under the tenant's timeout.
func reinforceDue(t *model.Tenant, m *model.Mission) model.Time {
	return model.At(m.DispatchedAt.Add(time.Duration(checkMin(t)) * time.Minute))
}

// armReinforcement writes a mission's reinforcement check into the outbox, due at its
// dispatch + the tenant's timeout (at once when that has passed).
func (e *Engine) armReinforcement(tx model.Tx, t *model.Tenant, m *model.Mission) error {
	now := model.At(e.clock.Now())
	due := reinforceDue(t, m)
	if due.Before(now.Time) {
		due = now
	}
	return e.armReinforcementAt(tx, t, m, due)
}

// armReinforcementAt writes a mission's reinforcement check into the outbox, due at due.
func (e *Engine) armReinforcementAt(tx model.Tx, t *model.Tenant, m *model.Mission, due model.Time) error {
	return e.enqueue(tx, &model.OutboxEntry{ID: model.NewID(), TenantID: t.ID, Kind: OutboxReinforce,
		MissionID: m.ID, EventID: m.EventID, DueAt: due, CreatedAt: model.At(e.clock.Now())})
}

// rearmReinforcement follows a change of the tenant's reinforcement timeout from before
// to t's, within tx. The timeout in force is the one a check reads when it runs: a check
// that runs early (the timeout grew) arms itself again for the new time. So only a
// shorter time of the check (checkMin: switching reinforcement off makes it
// UnacknowledgedAlertMin) needs new checks: one for each mission the check watches.
func (e *Engine) rearmReinforcement(tx model.Tx, t *model.Tenant, before int) error {
	if checkMin(t) >= checkMin(&model.Tenant{ReinforcementTimeoutMin: before}) {
		return nil
	}
	ids, err := tx.CodedMissions(t.ID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		m, err := tx.Mission(t.ID, id)
		if model.IsKind(err, model.KindNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if reinforceable(m) {
			if err := e.armReinforcement(tx, t, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// notifyTeam tells a team of its mission: the team.dispatched webhooks (rest_full), an
// SMS to each member's phone (the mission SMS, with its code: EncodeMissionSMS) and the
// queues of the team's devices. The first of them that succeeds (a device: its
// acknowledgement) moves the mission to SENT.
func (e *Engine) notifyTeam(tx model.Tx, tenantID string, ev *model.Event, team *model.Team, d *model.Dispatch, mission *model.Mission) error {
	// Only the tenant and its webhooks are needed: the cached configuration would be
	// stale after every dispatch (the team's status changed) and reload every team.
	t, err := tx.Tenant(tenantID)
	if err != nil {
		return err
	}
	hooks, err := tx.Webhooks(tenantID)
	if err != nil {
		return err
	}
	cfg := &tenantConfig{tenant: t, webhooks: hooks}
	if _, err := e.webhookMessages(tx, cfg, HookTeamDispatched, outboxTag{missionID: d.MissionID}, d); err != nil {
		return err
	}
	if err := e.queueMission(tx, tenantID, team.ID, d.MissionID, ev.ID); err != nil {
		return err
	}
	if !e.sender.SMSAvailable() {
		return nil
	}
	text, err := smscodec.EncodeMissionSMS(mission.Code, ev.ID, ev.Priority, ev.Type, zoneCodeOf(ev), ev.Lat, ev.Lng)
	if err != nil {
		return err
	}
	now := model.At(e.clock.Now())
	seen := map[string]bool{}
	for _, m := range team.Members {
		if m.Phone == "" || seen[m.Phone] {
			continue
		}
		seen[m.Phone] = true
		if err := e.enqueue(tx, &model.OutboxEntry{ID: model.NewID(), TenantID: tenantID, Kind: model.OutboxSMS, To: m.Phone,
			Text: text, MissionID: d.MissionID, DueAt: now, CreatedAt: now}); err != nil {
			return err
		}
	}
	return nil
}

// requiresManual is the payload of dispatch.requires_manual.
type requiresManual struct {
	EventID    string  `json:"event_id"`
	BestTeamID *string `json:"best_team_id"`
	BestScore  float64 `json:"best_score"`
	Threshold  float64 `json:"threshold"`
	MissionID  *string `json:"mission_id,omitempty"`
	Reason     string  `json:"reason"`
}

// autoDispatch dispatches the best eligible available team to a new event when the
// tenant's dispatch_mode is on, within tx. It answers the dispatch, or requiresManual
// true after alerting supervisors (dispatch.requires_manual). Team availability is read
// from tx, never from a cache: two events of one group must not take the same team.
func (e *Engine) autoDispatch(tx model.Tx, tenantID string, t *model.Tenant, ev *model.Event) (*model.AutoDispatch, bool, error) {
	auto, manual, err := e.tryAutoDispatch(tx, tenantID, t, ev)
	if err != nil || auto != nil {
		return auto, manual, err
	}
	return nil, manual, e.raiseUndispatched(tx, tenantID, ev)
}

// tryAutoDispatch is autoDispatch before the alert of an event nobody was sent to.
func (e *Engine) tryAutoDispatch(tx model.Tx, tenantID string, t *model.Tenant, ev *model.Event) (*model.AutoDispatch, bool, error) {
	if !t.FeatureFlags.DispatchMode {
		return nil, false, nil
	}
	best, team, err := e.bestTeam(tx, tenantID, t, ev, nil)
	if err != nil {
		return nil, false, err
	}
	if team == nil {
		return nil, true, e.alertManual(tx, tenantID, t, ev, best, nil, "no team meets the dispatch threshold")
	}
	_, m, err := e.dispatch(tx, tenantID, ev, team, dispatchOrder{actor: model.NilID, by: systemActor, source: MoveSourceSystem,
		notes: model.AutoDispatchNotes, lat: ev.Lat, lng: ev.Lng})
	if err != nil {
		return nil, false, err
	}
	return &model.AutoDispatch{MissionID: m.ID, TeamID: team.ID, Score: best.Score}, false, nil
}

// bestTeam ranks the tenant's teams but those in exclude for ev and returns the best
// score and, when it is eligible, its team. A team this node routes to a site is its
// site's to dispatch (docs/decisions/0202-team-status-up.md), never ranked here.
func (e *Engine) bestTeam(tx model.Tx, tenantID string, t *model.Tenant, ev *model.Event, exclude []string) (*model.TeamScore, *model.Team, error) {
	teams, err := tx.Teams(tenantID)
	if err != nil {
		return nil, nil, err
	}
	teams = slices.DeleteFunc(teams, func(t model.Team) bool {
		return slices.Contains(exclude, t.ID) || (t.SiteID != nil && t.Origin == nil)
	})
	cfg, err := e.tenantConfig(tx, tenantID)
	if err != nil {
		return nil, nil, err
	}
	ranked := RankTeams(teams, model.ScoreTarget{Vertical: ev.Vertical, Lat: ev.Lat, Lng: ev.Lng,
		RequiredEquipment: ev.RequiredEquipment, ZoneCentroid: cfg.centroid}, t.DispatchThreshold)
	if len(ranked) == 0 {
		return nil, nil, nil
	}
	best := ranked[0]
	if !best.Eligible {
		return &best, nil, nil
	}
	for i := range teams {
		if teams[i].ID == best.TeamID {
			return &best, &teams[i], nil
		}
	}
	return &best, nil, nil
}

// alertManual writes dispatch.requires_manual.
func (e *Engine) alertManual(tx model.Tx, tenantID string, t *model.Tenant, ev *model.Event, best *model.TeamScore, missionID *string, reason string) error {
	if err := e.raiseManual(tx, tenantID, ev, missionID, reason); err != nil {
		return err
	}
	payload := requiresManual{EventID: ev.ID, Threshold: t.DispatchThreshold, MissionID: missionID, Reason: reason}
	if best != nil {
		id := best.TeamID
		payload.BestTeamID, payload.BestScore = &id, best.Score
	}
	return e.notify(tx, tenantID, HookDispatchRequiresMn, payload)
}

// reinforced is the payload of mission.reinforced.
type reinforced struct {
	MissionID              string `json:"mission_id"`
	ReinforcementMissionID string `json:"reinforcement_mission_id"`
	EventID                string `json:"event_id"`
	TeamID                 string `json:"team_id"`
}

// reinforce runs the reinforcement check of a mission within tx: a mission that has not
// reached ACK when the tenant's timeout in force ends raises mission_unacknowledged and
// gets the next best eligible team as a backup, once; with none eligible, supervisors are
// alerted. With no timeout, the check runs UnacknowledgedAlertMin after the dispatch and
// only raises the alert. at is the time the check
// judges by: the due time it was armed for and the time elapsed since on the monotonic
// clock (the scheduler's), not the wall clock's now, which may have stepped meanwhile.
func (e *Engine) reinforce(tx model.Tx, tenantID, missionID string, at time.Time) error {
	m, err := tx.Mission(tenantID, missionID)
	if model.IsKind(err, model.KindNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !reinforceable(m) {
		return nil
	}
	t, err := tx.Tenant(tenantID)
	if err != nil {
		return err
	}
	// The timeout in force now decides (docs/rules.md, Dispatch score: a check every minute against
	// reinforcement_timeout_min): off, the check only alerts; grown since the check was armed,
	// it is armed again for the time left, as a duration
	// from now (docs/decisions/0128-timers-clock-steps.md).
	now := model.At(e.clock.Now())
	if due := reinforceDue(t, m); due.After(at) {
		return e.armReinforcementAt(tx, t, m, model.At(now.Add(due.Sub(at))))
	}
	ev, err := tx.Event(tenantID, m.EventID)
	if err != nil || ev.Status == model.EventClosed {
		return err
	}
	teamName := "a team"
	if tm, err := tx.Team(tenantID, m.TeamID); err == nil {
		teamName = tm.Name
	}
	if err := e.raiseUnacknowledged(tx, tenantID, ev, m, teamName); err != nil {
		return err
	}
	if t.ReinforcementTimeoutMin == 0 {
		return nil
	}
	m.Reinforced, m.UpdatedAt = true, now
	if err := putMission(tx, tenantID, m); err != nil {
		return err
	}
	// A team that already has a mission on the event (on it, or just failed or stood
	// down off it) is never its reinforcement.
	others, err := tx.MissionsOfEvent(tenantID, ev.ID)
	if err != nil {
		return err
	}
	onEvent := make([]string, 0, len(others))
	for i := range others {
		onEvent = append(onEvent, others[i].TeamID)
	}
	best, team, err := e.bestTeam(tx, tenantID, t, ev, onEvent)
	if err != nil {
		return err
	}
	if team == nil {
		return e.alertManual(tx, tenantID, t, ev, best, &m.ID, "mission "+m.ID+" was not acknowledged in time and no team meets the dispatch threshold")
	}
	_, backup, err := e.dispatch(tx, tenantID, ev, team, dispatchOrder{actor: model.NilID, by: systemActor, source: MoveSourceSystem,
		notes: model.ReinforcementNotes, lat: m.EventLat, lng: m.EventLng, reinforcementOf: &m.ID})
	if err != nil {
		return err
	}
	return e.notify(tx, tenantID, HookMissionReinforced, reinforced{MissionID: m.ID,
		ReinforcementMissionID: backup.ID, EventID: ev.ID, TeamID: team.ID})
}

// missionChannel names the channel of a notification that reached a team.
func missionChannel(o *model.OutboxEntry) string {
	if o.Kind == model.OutboxSMS {
		return model.ChannelSMS
	}
	return model.ChannelREST
}
