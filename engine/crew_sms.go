package engine

import (
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// CrewSMSQuiet is how long a team's devices may all go without a sync before the crew's
// updates also go by SMS (docs/decisions/0153-crew-sms.md).
const CrewSMSQuiet = 10 * time.Minute

// crewSMS sends a crew SMS (smscodec.EncodeCrewSMS: a stand-down, a backup, a control
// room's message) about mission m to each phone of its team's members, through the SMS
// outbox (usage, the per-recipient limits and a critical mission's exemption as every
// SMS), when the gateway is set and the phones may not learn it otherwise: the team's
// zone is degraded, or no device of the team synced within CrewSMSQuiet (a team without
// devices included). A mission without a code (dispatched before codes) gets none.
func (e *Engine) crewSMS(tx model.Tx, tenantID string, m *model.Mission, kind, text string) error {
	if !e.sender.SMSAvailable() || m.Code == "" {
		return nil
	}
	team, err := tx.Team(tenantID, m.TeamID)
	if model.IsKind(err, model.KindNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	now := model.At(e.clock.Now())
	reachable, err := crewReachable(tx, tenantID, team, now.Time)
	if err != nil || reachable {
		return err
	}
	line, err := smscodec.EncodeCrewSMS(m.Code, m.Priority, kind, text)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, mb := range team.Members {
		if mb.Phone == "" || seen[mb.Phone] {
			continue
		}
		seen[mb.Phone] = true
		if err := e.enqueue(tx, &model.OutboxEntry{ID: model.NewID(), TenantID: tenantID, Kind: model.OutboxSMS, To: mb.Phone,
			Text: line, MissionID: m.ID, DueAt: now, CreatedAt: now}); err != nil {
			return err
		}
	}
	return nil
}

// crewReachable reports whether a team's phones learn of a change through their queue:
// its zone is not degraded and one of its devices synced within CrewSMSQuiet.
func crewReachable(tx model.Tx, tenantID string, team *model.Team, now time.Time) (bool, error) {
	if team.ZoneCode != "" {
		z, err := tx.Zone(tenantID, team.ZoneCode)
		if err != nil && !model.IsKind(err, model.KindNotFound) {
			return false, err
		}
		if err == nil && zoneState(z, now) == model.ConnDegraded {
			return false, nil
		}
	}
	ids, err := tx.DevicesOfTeam(tenantID, team.ID)
	if err != nil {
		return false, err
	}
	for _, id := range ids {
		d, err := tx.Device(tenantID, id)
		if model.IsKind(err, model.KindNotFound) {
			continue
		}
		if err != nil {
			return false, err
		}
		if d.Sync.LastSyncAt != nil && now.Sub(d.Sync.LastSyncAt.Time) <= CrewSMSQuiet {
			return true, nil
		}
	}
	return false, nil
}
