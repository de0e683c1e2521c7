package engine

import (
	"encoding/json"

	"github.com/fieldrelay/fieldrelay/engine/alerts"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
	"github.com/fieldrelay/fieldrelay/engine/upstream"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// Mission moves recorded on two nodes (docs/decisions/0198-mission-moves-union.md): a
// node moves its copy of another node's mission as a fact (recordRemoteMove), which goes
// to the owner; the owner merges the facts it receives (mergeRemoteMission) and does what
// only the owner does (free the team, close the event, count) on the derived state.

// nodeIDIn returns this node's id, read (or made, once) within tx.
func nodeIDIn(tx model.Tx) (string, error) {
	v, err := tx.Meta(model.SecretNodeID)
	if err != nil || v != nil {
		return string(v), err
	}
	v = model.NewSecret(model.SecretNodeID)
	return string(v), tx.PutMeta(model.SecretNodeID, v)
}

// recordRemoteMove records mv, a move made here on a copy of another node's mission: the
// fact joins the copy's history, the status is derived, and the mission goes down to its
// owner (and up, when this node has an upstream). Nothing the owner does is done here.
func (e *Engine) recordRemoteMove(tx model.Tx, tenantID string, m *model.Mission, mv model.MissionMove, now model.Time) (*model.Mission, error) {
	node, err := nodeIDIn(tx)
	if err != nil {
		return nil, err
	}
	mv.Node = node
	had := m.TerminalConflict != nil
	model.MergeMoves(m, []model.MissionMove{mv})
	if mv.Feedback != nil {
		m.Feedback = mv.Feedback
	}
	m.UpdatedAt = now
	if err := putMission(tx, tenantID, m); err != nil {
		return nil, err
	}
	writes.Changed(tx, tenantID, model.DownMission, m.ID)
	return m, e.terminalConflict(tx, tenantID, m, had)
}

// recordRemoteMessage records msg, a message written here on a copy of another node's
// mission (a crew's SMS reply through this node's gateway, a supervisor here): it joins
// the copy and the mission goes down to its owner, which tells the crew; here it raises
// or closes the crew_message alert and goes to the webhooks and the stream, as any message.
func (e *Engine) recordRemoteMessage(tx model.Tx, tenantID string, m *model.Mission, msg *model.MissionMessage, fromCrew bool) error {
	model.MergeMessages(m, []model.MissionMessage{*msg})
	m.UpdatedAt = msg.WrittenAt
	if err := putMission(tx, tenantID, m); err != nil {
		return err
	}
	writes.Changed(tx, tenantID, model.DownMission, m.ID)
	if err := e.crewMessageAlert(tx, tenantID, m, msg, fromCrew); err != nil {
		return err
	}
	return e.notify(tx, tenantID, HookMissionMessage, model.MissionMessageNote{MissionID: m.ID, EventID: m.EventID,
		TeamID: m.TeamID, Message: *msg})
}

// remoteMessages does, at the owner, what a message does for the messages another node
// wrote on its copy of m: the team's devices learn each, a crew's raises the
// crew_message alert here too and a control room's closes it and goes by SMS when the
// rule of crewSMS says so; each goes to the webhooks and the stream.
func (e *Engine) remoteMessages(tx model.Tx, tenantID string, m *model.Mission, msgs []model.MissionMessage) error {
	for i := range msgs {
		msg := &msgs[i]
		at := msg.WrittenAt
		if msg.CapturedAt != nil {
			at = *msg.CapturedAt
		}
		if err := e.tellCrew(tx, tenantID, m.TeamID, m, "", model.MissionChange{What: model.UpdateMessage,
			By: model.ChangeActor{ID: msg.AuthorID, Name: msg.AuthorName, Role: msg.Role}, At: at, Channel: msg.Channel,
			MessageID: msg.ID, Text: msg.Text}); err != nil {
			return err
		}
		fromCrew := msg.Role == model.RoleFieldOperator
		if err := e.crewMessageAlert(tx, tenantID, m, msg, fromCrew); err != nil {
			return err
		}
		if !fromCrew && m.Active() {
			if err := e.crewSMS(tx, tenantID, m, smscodec.CrewMsg, msg.Text); err != nil {
				return err
			}
		}
		if err := e.notify(tx, tenantID, HookMissionMessage, model.MissionMessageNote{MissionID: m.ID, EventID: m.EventID,
			TeamID: m.TeamID, Message: *msg}); err != nil {
			return err
		}
	}
	return nil
}

// mergeRemoteMission merges, at the owner, the moves another node recorded on its copy
// of one of this node's missions; the owner's duties follow the derived state through
// missionMoved, as for any move. A mission unknown here, or not this node's, is left.
func (e *Engine) mergeRemoteMission(tx model.Tx, tenantID string, remote *model.Mission) error {
	m, err := tx.Mission(tenantID, remote.ID)
	if model.IsKind(err, model.KindNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if m.Origin != nil || m.EventID != remote.EventID || m.TeamID != remote.TeamID {
		return nil
	}
	prev, had := m.Status, m.TerminalConflict != nil
	added := model.MergeMoves(m, remote.History)
	msgs := model.MergeMessages(m, remote.Messages)
	if len(added) == 0 && len(msgs) == 0 {
		return nil
	}
	now := model.At(e.clock.Now())
	m.UpdatedAt = now
	if err := putMission(tx, tenantID, m); err != nil {
		return err
	}
	if err := e.remoteMessages(tx, tenantID, m, msgs); err != nil {
		return err
	}
	if err := e.terminalConflict(tx, tenantID, m, had); err != nil {
		return err
	}
	if len(added) == 0 || m.Status == prev || (model.MissionFinished(prev) && model.MissionFinished(m.Status)) {
		return nil
	}
	last := added[len(added)-1]
	return e.missionMoved(tx, tenantID, m, last.At, now, last.Feedback, remoteChange(tx, tenantID, prev, m, last), "")
}

// remoteChange is the mission_update change of a move another node recorded: by its user
// when the user is known here (a central-owned user comes down to the site), else by the
// system; the reason of a stand-down or a failure from its feedback.
func remoteChange(tx model.Tx, tenantID, prev string, m *model.Mission, last model.MissionMove) model.MissionChange {
	by := model.ChangeActor{ID: last.Actor, Name: model.ActorRoleSystem, Role: model.ActorRoleSystem}
	if u, err := tx.UserAccount(tenantID, last.Actor); err == nil {
		by = model.ChangeActor{ID: u.ID, Name: u.Name, Role: u.RBACLevel}
	}
	c := model.MissionChange{What: model.UpdateStatus, From: prev, To: m.Status, By: by, At: last.At, Channel: last.Source}
	if sd, err := readStandDown(last.Feedback, m.Status, true); err == nil {
		c.StoodDown = sd.StoodDown
		if m.Status == model.MissionFailed {
			c.Reason = sd.Reason
		}
	}
	return c
}

// terminalConflict reports a mission that has just been found recorded both COMPLETED
// and FAILED (had: it was already): a stream change for the supervisors, and a warning
// in the log once the transaction commits.
func (e *Engine) terminalConflict(tx model.Tx, tenantID string, m *model.Mission, had bool) error {
	tc := m.TerminalConflict
	if tc == nil || had {
		return nil
	}
	tx.OnCommit(func() {
		e.log.Warn("mission: recorded both COMPLETED and FAILED; a supervisor should look", "tenant", tenantID,
			"mission", m.ID, "chosen", tc.Chosen, "chosen_at", tc.ChosenAt.String(), "other", tc.Other,
			"other_at", tc.OtherAt.String())
	})
	if _, err := alerts.Raise(e.Book, tx, tenantID, model.AlertInput{Kind: model.AlertTerminalConflict, Subject: m.ID,
		Priority: m.Priority, EventID: m.EventID, MissionID: m.ID, TeamID: m.TeamID,
		Message: "Recorded both COMPLETED and FAILED on two nodes; kept " + tc.Chosen}); err != nil {
		return err
	}
	return e.publish(tx, tenantID, StreamMissionTerminalConflict, model.PermMissionsView, m.TeamID, m)
}

// applyUpstreamMission applies a node's mission (upstream.Apply) and reports a terminal
// conflict the merge has just found, as the owner does.
func (e *Engine) applyUpstreamMission(tx model.Tx, tenantID string, d *model.Device, it *model.DeviceItem) (bool, error) {
	var id struct {
		ID string `json:"id"`
	}
	had := false
	if json.Unmarshal(it.Payload, &id) == nil && model.ValidID(id.ID) {
		if m, err := tx.Mission(tenantID, id.ID); err == nil {
			had = m.TerminalConflict != nil
		}
	}
	dup, err := upstream.Apply(tx, tenantID, d, it)
	if err != nil || dup {
		return dup, err
	}
	m, err := tx.Mission(tenantID, id.ID)
	if err != nil {
		return false, err
	}
	return false, e.terminalConflict(tx, tenantID, m, had)
}
