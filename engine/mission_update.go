package engine

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// maxStandDownReason bounds the reason of a stand-down (feedback.reason).
const maxStandDownReason = 500

// standDown is what a move's feedback says of a stand-down or a failure
// (docs/decisions/0149-stand-down.md): stood_down true and a reason.
type standDown struct {
	StoodDown bool
	Reason    string
}

// readStandDown reads feedback.stood_down and feedback.reason of a move to status. A
// stood_down that is not a boolean, a stand-down whose status is not FAILED or whose
// reason is missing or too long is a validation error; stood_down from a caller without
// missions:manage is forbidden. A reason that is no string is left alone (feedback is the
// client's object): it names no reason.
func readStandDown(feedback json.RawMessage, status string, canManage bool) (standDown, error) {
	var out standDown
	if feedback == nil {
		return out, nil
	}
	var f struct {
		StoodDown json.RawMessage `json:"stood_down"`
		Reason    json.RawMessage `json:"reason"`
	}
	if err := json.Unmarshal(feedback, &f); err != nil {
		return out, model.Invalid("feedback", "feedback must be a JSON object")
	}
	var reason string
	if json.Unmarshal(f.Reason, &reason) == nil {
		out.Reason = strings.TrimSpace(reason)
	}
	if model.IsNullJSON(f.StoodDown) {
		return out, nil
	}
	if json.Unmarshal(f.StoodDown, &out.StoodDown) != nil {
		return out, model.Invalid("feedback.stood_down", "feedback.stood_down must be a boolean")
	}
	if !out.StoodDown {
		return out, nil
	}
	if !canManage {
		return out, model.Errorf(model.KindForbidden, "a stand-down (feedback.stood_down) needs the %s permission", model.PermMissionsManage)
	}
	if status != model.MissionFailed {
		return out, model.Invalid("feedback.stood_down", "a stand-down moves the mission to FAILED")
	}
	if out.Reason == "" {
		return out, model.Invalid("feedback.reason", "a stand-down needs a reason (feedback.reason)")
	}
	if utf8.RuneCountInString(out.Reason) > maxStandDownReason {
		return out, model.Invalid("feedback.reason", "feedback.reason must be at most %d characters", maxStandDownReason)
	}
	return out, nil
}

// systemActor is the ChangeActor of the system's own changes.
var systemActor = model.ChangeActor{ID: model.NilID, Name: model.ActorRoleSystem, Role: model.ActorRoleSystem}

// changeActor names p for a change: its user's name and role, or its key's name.
func changeActor(tx model.Tx, p model.Principal) (model.ChangeActor, error) {
	switch {
	case p.UserID != "":
		a := model.ChangeActor{ID: p.UserID, Role: p.Role}
		u, err := tx.UserAccount(p.TenantID, p.UserID)
		if err == nil {
			a.Name = u.Name
		} else if !model.IsKind(err, model.KindNotFound) {
			return a, err
		}
		return a, nil
	case p.KeyID != "":
		a := model.ChangeActor{ID: p.KeyID, Role: model.ActorRoleAPIKey}
		k, err := tx.APIKey(p.TenantID, p.KeyID)
		if err == nil {
			a.Name = k.Name
		} else if !model.IsKind(err, model.KindNotFound) {
			return a, err
		}
		return a, nil
	}
	return systemActor, nil
}

// tellCrew puts a mission_update about m telling c into the queue of every device of
// team teamID but skip (the device that made the change), in tx
// (docs/decisions/0148-mission-updates.md). A device's pending update of the same mission
// is coalesced: it is taken out and its changes, then c, go into the new item at the end
// of the queue, so the device learns every change once and in order.
func (e *Engine) tellCrew(tx model.Tx, tenantID, teamID string, m *model.Mission, skip string, c model.MissionChange) error {
	ids, err := tx.DevicesOfTeam(tenantID, teamID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if id == skip {
			continue
		}
		changes := []model.MissionChange{c}
		if !e.noCoalesce {
			prev, err := tx.TakeQueueItem(tenantID, id, model.QueueMissionUpdate, m.ID)
			if err != nil {
				return err
			}
			if prev != nil {
				changes = append(prev.Changes, c)
			}
		}
		if _, err := e.queueForDevices(tx, tenantID, []string{id}, "", model.QueueItem{Kind: model.QueueMissionUpdate,
			MissionID: m.ID, EventID: m.EventID, Changes: changes}); err != nil {
			return err
		}
	}
	return nil
}

// tellOtherMissions tells the teams of the event's other active missions (not m's) of c
// (a backup naming m's team, the event closed); a backup also goes by SMS when the rule
// of crewSMS says so.
func (e *Engine) tellOtherMissions(tx model.Tx, tenantID string, m *model.Mission, c model.MissionChange) error {
	missions, err := tx.MissionsOfEvent(tenantID, m.EventID)
	if err != nil {
		return err
	}
	for i := range missions {
		o := &missions[i]
		if o.ID == m.ID || !o.Active() {
			continue
		}
		if err := e.tellCrew(tx, tenantID, o.TeamID, o, "", c); err != nil {
			return err
		}
		if c.What == model.UpdateBackup || c.What == model.UpdateReinforcement {
			if err := e.crewSMS(tx, tenantID, o, smscodec.CrewBackup, c.TeamName); err != nil {
				return err
			}
		}
	}
	return nil
}
