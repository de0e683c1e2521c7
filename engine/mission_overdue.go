package engine

import (
	"time"

	"github.com/fieldrelay/fieldrelay/engine/alerts"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The on-site timer of a mission (docs/decisions/0260-mission-timers.md): a mission
// acknowledged but not ON_SITE when the tenant's on-site timeout ends raises
// mission_overdue, closed when it reaches ON_SITE or ends. The check is an outbox entry
// (model.OutboxOverdue) armed at the acknowledgement, as the reinforcement check is at
// the dispatch.

// dispatchSettings answers a tenant's dispatch settings.
func dispatchSettings(t *model.Tenant) *model.DispatchSettings {
	return &model.DispatchSettings{DispatchMode: t.FeatureFlags.DispatchMode, DispatchThreshold: t.DispatchThreshold,
		ReinforcementTimeoutMin: t.ReinforcementTimeoutMin, OnSiteTimeoutMin: t.OnSiteTimeout(), AlertEscalationMin: t.AlertEscalationMin}
}

// onTheWay reports whether a mission is one the on-site check watches: acknowledged, not
// yet on site, not replicated (its timers run where it was dispatched).
func onTheWay(m *model.Mission) bool {
	return m.Origin == nil && m.AckAt != nil && (m.Status == model.MissionAck || m.Status == model.MissionOnRoute)
}

// overdueDue is when a mission's on-site check is due under the tenant's timeout.
func overdueDue(t *model.Tenant, m *model.Mission) model.Time {
	return model.At(m.AckAt.Add(time.Duration(t.OnSiteTimeout()) * time.Minute))
}

// armOverdue writes a mission's on-site check into the outbox, due at its acknowledgement
// + the tenant's timeout (at once when that has passed); nothing when the timeout is off.
func (e *Engine) armOverdue(tx model.Tx, t *model.Tenant, m *model.Mission) error {
	if t.OnSiteTimeout() == 0 || !onTheWay(m) {
		return nil
	}
	now := model.At(e.clock.Now())
	due := overdueDue(t, m)
	if due.Before(now.Time) {
		due = now
	}
	return e.enqueue(tx, &model.OutboxEntry{ID: model.NewID(), TenantID: t.ID, Kind: model.OutboxOverdue,
		MissionID: m.ID, EventID: m.EventID, DueAt: due, CreatedAt: now})
}

// rearmOverdue follows a change of the tenant's on-site timeout from before to t's, as
// rearmReinforcement does: a check that runs early arms itself again, one that runs while
// the timeout is off ends, so only a shorter timeout, or one switched on, needs new checks.
func (e *Engine) rearmOverdue(tx model.Tx, t *model.Tenant, before int) error {
	after := t.OnSiteTimeout()
	if after == 0 || (before != 0 && after >= before) {
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
		if err := e.armOverdue(tx, t, m); err != nil {
			return err
		}
	}
	return nil
}

// overdue runs the on-site check of a mission within tx at the time the scheduler says it
// is (see reinforce): still on its way when the timeout in force ends, it raises
// mission_overdue; the timeout grown since, the check is armed again for the time left.
func (e *Engine) overdue(tx model.Tx, tenantID, missionID string, at time.Time) error {
	m, err := tx.Mission(tenantID, missionID)
	if model.IsKind(err, model.KindNotFound) {
		return nil
	}
	if err != nil || !onTheWay(m) {
		return err
	}
	t, err := tx.Tenant(tenantID)
	if err != nil || t.OnSiteTimeout() == 0 {
		return err
	}
	if due := overdueDue(t, m); due.After(at) {
		now := model.At(e.clock.Now())
		return e.enqueue(tx, &model.OutboxEntry{ID: model.NewID(), TenantID: t.ID, Kind: model.OutboxOverdue,
			MissionID: m.ID, EventID: m.EventID, DueAt: model.At(now.Add(due.Sub(at))), CreatedAt: now})
	}
	ev, err := tx.Event(tenantID, m.EventID)
	if err != nil {
		return err
	}
	teamName := "a team"
	if tm, err := tx.Team(tenantID, m.TeamID); err == nil {
		teamName = tm.Name
	}
	_, err = alerts.Raise(e.Book, tx, tenantID, model.AlertInput{Kind: model.AlertMissionOverdue, Subject: m.ID,
		Priority: m.Priority, EventID: m.EventID, MissionID: m.ID, TeamID: m.TeamID,
		Message: "Not on site in time: " + teamName + " on " + eventWords(ev)})
	return err
}

// missionTimers follows a mission's move from was within tx: its acknowledgement arms the
// on-site check; past SENT its mission_unacknowledged alert ends, and on site or ended its
// mission_overdue alert ends.
func (e *Engine) missionTimers(tx model.Tx, tenantID string, m *model.Mission, was string) error {
	if err := alerts.Close(e.Book, tx, tenantID, model.AlertMissionUnacknowledged, m.ID); err != nil {
		return err
	}
	if m.Status != model.MissionAck && m.Status != model.MissionOnRoute {
		return alerts.Close(e.Book, tx, tenantID, model.AlertMissionOverdue, m.ID)
	}
	if was != model.MissionCreated && was != model.MissionSent {
		return nil
	}
	t, err := tx.Tenant(tenantID)
	if err != nil {
		return err
	}
	return e.armOverdue(tx, t, m)
}
