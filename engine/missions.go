package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// maxFeedbackBytes bounds the feedback object of a status update.
const maxFeedbackBytes = 16 << 10

// missionStatusHook is the webhook event of a mission status update.
const missionStatusHook = "mission.status_updated"

// noFeedback is the feedback of a mission.status_updated payload whose move had none.
var noFeedback = json.RawMessage("{}")

// teamRestricted reports whether p sees and moves only the missions of its own teams: a
// user who holds missions:receive but not missions:manage (a field operator). API keys
// are no team's members and are never restricted this way.
func teamRestricted(p model.Principal) bool {
	return !p.IsKey() && p.Can(model.PermMissionsReceive) && !p.Can(model.PermMissionsManage)
}

// ownTeamIDs lists the teams of the tenant with a member whose user_id is the user's.
func ownTeamIDs(tx model.Tx, tenantID, userID string) ([]string, error) {
	out := []string{}
	if userID == "" {
		return out, nil
	}
	teams, err := tx.Teams(tenantID)
	if err != nil {
		return nil, err
	}
	for _, t := range teams {
		if slices.ContainsFunc(t.Members, func(m model.Member) bool { return m.UserID == userID }) {
			out = append(out, t.ID)
		}
	}
	return out, nil
}

// intersectIDs narrows a team filter (nil: any team) to the ids of more.
func intersectIDs(have, more []string) []string {
	if have == nil {
		return more
	}
	out := []string{}
	for _, id := range have {
		if slices.Contains(more, id) {
			out = append(out, id)
		}
	}
	return out
}

// checkQueryID checks an optional id filter: a malformed id is a validation error.
func checkQueryID(field, v string) error {
	if v != "" && !model.ValidID(v) {
		return model.Invalid(field, "%s must be a UUID", field)
	}
	return nil
}

// Missions lists a page of p's tenant's missions matching q, newest first (GET
// /v1/missions); the string is the next cursor ("" at the end). It needs missions:view.
// A field operator (see teamRestricted) sees only the missions of the teams it is a
// member of. An unknown status, or a team_id, member_id or event_id that is no UUID, is a
// validation error naming the parameter; an id that names nothing lists nothing.
func (e *Engine) Missions(ctx context.Context, p model.Principal, q model.MissionQuery, pg model.Page) ([]model.Mission, string, error) {
	if err := p.Require(model.PermMissionsView); err != nil {
		return nil, "", err
	}
	if q.Status != "" && !model.ValidMissionState(q.Status) {
		return nil, "", model.Invalid("status", "status must be one of %s", strings.Join(model.MissionStates, ", "))
	}
	for _, c := range [][2]string{{"team_id", q.TeamID}, {"member_id", q.MemberID}, {"event_id", q.EventID}} {
		if err := checkQueryID(c[0], c[1]); err != nil {
			return nil, "", err
		}
	}
	f := model.MissionFilter{Status: q.Status, EventID: q.EventID, Origin: q.Origin}
	if q.TeamID != "" {
		f.TeamIDs = []string{q.TeamID}
	}
	var out []model.Mission
	var next string
	err := e.store.View(ctx, func(tx model.Tx) error {
		if q.MemberID != "" {
			teams, err := tx.Teams(p.TenantID)
			if err != nil {
				return err
			}
			ids := []string{}
			for i := range teams {
				if slices.ContainsFunc(teams[i].Members, func(m model.Member) bool { return m.ID == q.MemberID }) {
					ids = append(ids, teams[i].ID)
				}
			}
			f.TeamIDs = intersectIDs(f.TeamIDs, ids)
		}
		if teamRestricted(p) {
			own, err := ownTeamIDs(tx, p.TenantID, p.UserID)
			if err != nil {
				return err
			}
			f.TeamIDs = intersectIDs(f.TeamIDs, own)
		}
		var err error
		out, next, err = tx.Missions(p.TenantID, f, pg)
		return err
	})
	return out, next, err
}

// Mission returns one mission of p's tenant with its history (GET /v1/missions/:id); it
// needs missions:view. Another tenant's mission, and for a field operator another team's,
// is not found.
func (e *Engine) Mission(ctx context.Context, p model.Principal, id string) (*model.Mission, error) {
	if err := p.Require(model.PermMissionsView); err != nil {
		return nil, err
	}
	var m *model.Mission
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		m, err = e.visibleMission(tx, p, id)
		return err
	})
	return m, err
}

// visibleMission reads a mission p may see: not found when it is another tenant's, or,
// for a field operator, another team's.
func (e *Engine) visibleMission(tx model.Tx, p model.Principal, id string) (*model.Mission, error) {
	if !model.ValidID(id) {
		return nil, model.NotFound("mission")
	}
	m, err := tx.Mission(p.TenantID, id)
	if err != nil {
		return nil, err
	}
	if teamRestricted(p) {
		own, err := ownTeamIDs(tx, p.TenantID, p.UserID)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(own, m.TeamID) {
			return nil, model.NotFound("mission")
		}
	}
	return m, nil
}

// checkFeedback validates optional feedback: absent or null gives nil; anything else must
// be a JSON object of at most 16 KiB, returned compacted.
func checkFeedback(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil, nil
	}
	if len(trimmed) > maxFeedbackBytes {
		return nil, model.Invalid("feedback", "feedback must be at most %d KiB", maxFeedbackBytes>>10)
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, model.Invalid("feedback", "feedback must be a JSON object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, trimmed); err != nil {
		return nil, model.Invalid("feedback", "feedback must be a JSON object")
	}
	return json.RawMessage(buf.Bytes()), nil
}

// UpdateMissionStatus moves a mission of p's tenant (PATCH /v1/missions/:id/status,
// device sync, SMS replies) within tx, and returns it as stored. The permission
// (missions:manage or missions:receive) is the caller's to check: the route table for
// PATCH /v1/missions/:id/status, each item for device sync, the member's
// missions:receive for an SMS reply. What stays here is the rule of the use case, which
// no permission says: a field operator (teamRestricted) moves only the missions of its
// own teams (another team's mission is not found). The move is checked by
// NextMissionState, which still refuses a caller holding neither permission. source is
// one of the MoveSource values. at is when the move happened in the field (a device's
// captured_at); nil means now. A time more than MaxCaptureSkew in the future is a
// validation error on captured_at; one in the near future counts as now; one before the
// mission's last recorded move is invalid_transition.
//
// The move sets its timestamp (ack_at…) once, stores the feedback when given, appends to
// the history (ACK from CREATED records SENT at the same instant first) and fires
// mission.status_updated. COMPLETED and FAILED return the team to available (when it has
// no other active mission) and close the event: COMPLETED always, FAILED when no other
// mission of the event is still active.
//
// A stand-down is a move to FAILED whose feedback holds stood_down true and a reason
// (readStandDown; missions:manage only). Every device of the mission's team but the one
// that made the move (via, a device's id; "" for none) is told in a mission_update, and
// a closed event tells the teams of its other active missions
// (docs/decisions/0148-mission-updates.md).
func (e *Engine) UpdateMissionStatus(ctx context.Context, p model.Principal, id string, in model.MissionStatusInput, source string, at *model.Time, w *model.Write) (*model.Mission, error) {
	return write(ctx, e, p.TenantID, w, func(tx model.Tx) (*model.Mission, error) {
		return e.updateMissionStatus(tx, p, id, in, source, at, p.DeviceID)
	})
}

// updateMissionStatus is UpdateMissionStatus within tx; via is the device that made the
// move ("" for none).
func (e *Engine) updateMissionStatus(tx model.Tx, p model.Principal, id string, in model.MissionStatusInput, source string, at *model.Time, via string) (*model.Mission, error) {
	canManage, canReceive := p.Can(model.PermMissionsManage), p.Can(model.PermMissionsReceive)
	if strings.TrimSpace(in.Status) == "" {
		return nil, model.Invalid("status", "status is required")
	}
	if !model.ValidMissionState(in.Status) {
		return nil, model.Invalid("status", "status must be one of %s", strings.Join(model.MissionStates, ", "))
	}
	feedback, err := checkFeedback(in.Feedback)
	if err != nil {
		return nil, err
	}
	sd, err := readStandDown(feedback, in.Status, canManage)
	if err != nil {
		return nil, err
	}
	now := model.At(e.clock.Now())
	if at != nil && at.Sub(now.Time) > MaxCaptureSkew {
		return nil, model.Invalid("captured_at", "captured_at is more than %s in the future", MaxCaptureSkew)
	}
	m, err := e.visibleMission(tx, p, id)
	if err != nil {
		return nil, err
	}
	next := model.NextMissionState
	if m.Origin != nil {
		next = model.NextFactState
	}
	if err := next(m.Status, in.Status, canManage, canReceive); err != nil {
		return nil, err
	}
	last := m.CreatedAt
	if n := len(m.History); n > 0 {
		last = m.History[n-1].At
	}
	moveAt := now
	if at != nil {
		if at.Before(now.Time) {
			moveAt = model.At(at.Time)
		}
		if moveAt.Before(last.Time) && ackBeforeSent(m, in.Status, moveAt) {
			// The phone acknowledged its queue after its operator tapped ACK (the sync
			// that carries both, or a tap before the acknowledging sync): the ACK is the
			// proof of delivery, recorded at SENT's instant to keep the history in order
			// (docs/decisions/0151-field-app-crew-updates.md).
			moveAt = last
		}
		if moveAt.Before(last.Time) {
			return nil, model.Errorf(model.KindInvalidTransition, "captured before the mission's last recorded move (%s at %s)",
				m.Status, last.UTC().Format(model.TimeLayout))
		}
	} else if moveAt.Before(last.Time) {
		// The last move came from a device whose clock runs slightly ahead: keep the
		// history in order.
		moveAt = last
	}

	actor := p.ActorID()
	from, was := m.Status, m.Status
	if m.Origin != nil {
		// A copy of another node's mission: the move is a fact recorded here, merged with
		// the owner's (docs/decisions/0198-mission-moves-union.md).
		return e.recordRemoteMove(tx, p.TenantID, m, model.MissionMove{From: from, To: in.Status, At: moveAt, Actor: actor,
			Source: source, Feedback: feedback}, now)
	}
	if from == model.MissionCreated && in.Status == model.MissionAck {
		m.History = append(m.History, model.MissionMove{From: model.MissionCreated, To: model.MissionSent, At: moveAt, Actor: actor, Source: source})
		from = model.MissionSent
	}
	m.History = append(m.History, model.MissionMove{From: from, To: in.Status, At: moveAt, Actor: actor, Source: source, Feedback: feedback})
	m.Status = in.Status
	stamp := func(t **model.Time) {
		if *t == nil {
			v := moveAt
			*t = &v
		}
	}
	switch in.Status {
	case model.MissionAck:
		stamp(&m.AckAt)
	case model.MissionOnRoute:
		stamp(&m.OnRouteAt)
	case model.MissionOnSite:
		stamp(&m.OnSiteAt)
	case model.MissionCompleted:
		stamp(&m.CompletedAt)
	case model.MissionFailed:
		stamp(&m.FailedAt)
	}
	if feedback != nil {
		m.Feedback = feedback
	}
	m.UpdatedAt = now
	if err := putMission(tx, p.TenantID, m); err != nil {
		return nil, err
	}
	by, err := changeActor(tx, p)
	if err != nil {
		return nil, err
	}
	change := model.MissionChange{What: model.UpdateStatus, From: was, To: m.Status, By: by, At: moveAt, Channel: source,
		StoodDown: sd.StoodDown}
	if m.Status == model.MissionFailed {
		change.Reason = sd.Reason
	}
	return m, e.missionMoved(tx, p.TenantID, m, moveAt, now, feedback, change, via)
}

// missionMoved does what follows a move of a mission this node owns, once the mission is
// stored with its new status: its timers and their alerts (missionTimers); the usage
// counter; the team's devices but via told of change in a mission_update (and by SMS for
// a stand-down); for a finished mission its code released, its team freed and its event
// closed; mission.status_updated. A move of any actor goes through it: PATCH, a device
// item, an SMS reply, and a move recorded on the central node applied here
// (mergeRemoteMission).
func (e *Engine) missionMoved(tx model.Tx, tenantID string, m *model.Mission, moveAt, now model.Time, feedback json.RawMessage,
	change model.MissionChange, via string) error {
	if err := e.missionTimers(tx, tenantID, m, change.From); err != nil {
		return err
	}
	if err := e.count(tx, tenantID, moveAt.Time, model.UsageDelta{MissionState: m.Status}); err != nil {
		return err
	}
	if err := e.tellCrew(tx, tenantID, m.TeamID, m, via, change); err != nil {
		return err
	}
	if change.StoodDown {
		if err := e.crewSMS(tx, tenantID, m, smscodec.CrewStop, change.Reason); err != nil {
			return err
		}
	}
	if model.MissionFinished(m.Status) {
		if err := releaseMissionCode(tx, tenantID, m); err != nil {
			return err
		}
		if err := e.freeTeam(tx, tenantID, m, now); err != nil {
			return err
		}
		if err := e.closeEvent(tx, tenantID, m, moveAt, now, change.By, change.Channel); err != nil {
			return err
		}
	}
	payload := model.MissionStatusUpdate{MissionID: m.ID, Status: m.Status, Feedback: feedback, EventID: m.EventID,
		TeamID: m.TeamID, At: moveAt}
	if payload.Feedback == nil {
		payload.Feedback = noFeedback
	}
	return e.notify(tx, tenantID, missionStatusHook, payload)
}

// freeTeam returns the team of a finished mission to available, unless it is not on a
// mission (off duty, or already freed) or another of its missions is still active.
func (e *Engine) freeTeam(tx model.Tx, tenantID string, m *model.Mission, now model.Time) error {
	t, err := tx.Team(tenantID, m.TeamID)
	if model.IsKind(err, model.KindNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if t.Status != TeamOnMission {
		return nil
	}
	// Only an available team is dispatched, so another active mission of the team could
	// only be among its newest: the walk stops there instead of reading its whole past.
	others, _, err := tx.Missions(tenantID, model.MissionFilter{TeamIDs: []string{m.TeamID}}, model.Page{Limit: recentTeamMissions})
	if err != nil {
		return err
	}
	for i := range others {
		if others[i].ID != m.ID && others[i].Active() {
			return nil
		}
	}
	if t.RemovedAt != nil {
		// A copy of a central team taken from this site during its mission: it goes now
		// (docs/decisions/0203-removals-down.md).
		return tx.DeleteTeam(tenantID, t.ID)
	}
	t.SetStatus(TeamAvailable, now)
	if err := tx.PutTeam(tenantID, t); err != nil {
		return err
	}
	teamStatusMoved(tx, tenantID, t)
	return e.publish(tx, tenantID, StreamTeamUpdated, model.PermTeamsRead, t.ID, t)
}

// recentTeamMissions bounds the look for a team's other active missions.
const recentTeamMissions = 16

// closeEvent closes the event of a finished mission (docs/rules.md, Mission lifecycle): COMPLETED
// closes it; FAILED closes it when no other mission of the event is still active. A
// closed event stays closed with its first closed_at; its other missions go on, and
// their teams are told (an event_closed change naming m and its team, by who ended m
// through channel), so that the console offers them for stand-down.
func (e *Engine) closeEvent(tx model.Tx, tenantID string, m *model.Mission, at, now model.Time, by model.ChangeActor, channel string) error {
	ev, err := tx.Event(tenantID, m.EventID)
	if model.IsKind(err, model.KindNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if ev.Status == model.EventClosed {
		return nil
	}
	if m.Status == model.MissionFailed {
		missions, err := tx.MissionsOfEvent(tenantID, m.EventID)
		if err != nil {
			return err
		}
		for i := range missions {
			if missions[i].ID != m.ID && missions[i].Active() {
				return nil
			}
		}
	}
	ev.Status, ev.ClosedAt, ev.UpdatedAt = model.EventClosed, &at, now
	if err := putEvent(tx, tenantID, ev); err != nil {
		return err
	}
	if err := e.closeEventAlerts(tx, tenantID, ev.ID); err != nil {
		return err
	}
	if err := e.publish(tx, tenantID, StreamEventClosed, model.PermEventsRead, "", ev); err != nil {
		return err
	}
	name, err := teamName(tx, tenantID, m.TeamID)
	if err != nil {
		return err
	}
	return e.tellOtherMissions(tx, tenantID, m, model.MissionChange{What: model.UpdateEventClosed, By: by, At: at,
		Channel: channel, TeamID: m.TeamID, TeamName: name, MissionID: m.ID, To: m.Status})
}

// markMissionSent records that a mission's notification reached its team through channel
// (rest_full, sms or device), for the delivery engine: CREATED → SENT by the system
// (actor NilID, source system) with channel_used set. A mission past CREATED is left
// alone (nil); no webhook is fired. The team's devices but via (the device whose
// acknowledgement it is; "" for none) are told.
func (e *Engine) markMissionSent(tx model.Tx, tenantID, missionID, channel, via string) error {
	m, err := tx.Mission(tenantID, missionID)
	if err != nil {
		return err
	}
	if m.Status != model.MissionCreated {
		return nil
	}
	now := model.At(e.clock.Now())
	at := now
	if n := len(m.History); n > 0 && at.Before(m.History[n-1].At.Time) {
		at = m.History[n-1].At
	}
	ch := channel
	m.Status, m.ChannelUsed, m.UpdatedAt = model.MissionSent, &ch, now
	m.History = append(m.History, model.MissionMove{From: model.MissionCreated, To: model.MissionSent, At: at, Actor: model.NilID, Source: MoveSourceSystem})
	if err := e.count(tx, tenantID, now.Time, model.UsageDelta{MissionState: model.MissionSent}); err != nil {
		return err
	}
	if err := putMission(tx, tenantID, m); err != nil {
		return err
	}
	if err := e.tellCrew(tx, tenantID, m.TeamID, m, via, model.MissionChange{What: model.UpdateStatus, From: model.MissionCreated,
		To: model.MissionSent, By: systemActor, At: at, Channel: MoveSourceSystem}); err != nil {
		return err
	}
	// No webhook, but the stream shows the move (the console's timeline).
	return e.publish(tx, tenantID, missionStatusHook, model.PermMissionsView, m.TeamID, model.MissionStatusUpdate{MissionID: m.ID,
		Status: m.Status, Feedback: noFeedback, EventID: m.EventID, TeamID: m.TeamID, At: at})
}

// teamName is the name of a team ("" when it is gone).
func teamName(tx model.Tx, tenantID, teamID string) (string, error) {
	t, err := tx.Team(tenantID, teamID)
	if model.IsKind(err, model.KindNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return t.Name, nil
}

// ackBeforeSent reports whether a move to status captured at is an ACK whose only later
// recorded move is the system's SENT: captured after the creation, before the SENT.
func ackBeforeSent(m *model.Mission, status string, at model.Time) bool {
	n := len(m.History)
	if status != model.MissionAck || m.Status != model.MissionSent || n < 2 {
		return false
	}
	sent, created := m.History[n-1], m.History[n-2]
	return sent.Source == MoveSourceSystem && sent.To == model.MissionSent && !at.Before(created.At.Time)
}
