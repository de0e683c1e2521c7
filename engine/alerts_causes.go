package engine

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fieldrelay/fieldrelay/engine/alerts"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The alerts the field response raises and closes, each in the transaction of its cause
// (docs/decisions/0172-shared-alerts.md).

// raiseUndispatched raises the alert of a new critical or high event that no team was sent
// to (auto-dispatch off, or it found none). A replica's teams are dispatched where it
// came from.
func (e *Engine) raiseUndispatched(tx model.Tx, tenantID string, ev *model.Event) error {
	if (ev.Priority != model.PriorityCritical && ev.Priority != model.PriorityHigh) || ev.Origin != nil {
		return nil
	}
	_, err := alerts.RaiseNew(e.Book, tx, tenantID, model.AlertInput{Kind: model.AlertEventUndispatched, Subject: ev.ID,
		Priority: ev.Priority, EventID: ev.ID, Message: priorityWord(ev.Priority) + " event not dispatched: " + eventWords(ev)})
	return err
}

// raiseManual raises the alert of an event auto-dispatch or reinforcement found no team for.
func (e *Engine) raiseManual(tx model.Tx, tenantID string, ev *model.Event, missionID *string, reason string) error {
	in := model.AlertInput{Kind: model.AlertRequiresManual, Subject: ev.ID, Priority: ev.Priority, EventID: ev.ID,
		Message: "Needs a manual dispatch: " + eventWords(ev) + " — " + reason}
	if missionID != nil {
		in.MissionID = *missionID
	}
	_, err := alerts.Raise(e.Book, tx, tenantID, in)
	return err
}

// raiseUnacknowledged raises the alert of a mission its team had not acknowledged when the
// tenant's reinforcement timeout ended.
func (e *Engine) raiseUnacknowledged(tx model.Tx, tenantID string, ev *model.Event, m *model.Mission, team string) error {
	_, err := alerts.Raise(e.Book, tx, tenantID, model.AlertInput{Kind: model.AlertMissionUnacknowledged, Subject: m.ID,
		Priority: m.Priority, EventID: m.EventID, MissionID: m.ID, TeamID: m.TeamID,
		Message: "Not acknowledged in time: " + team + " on " + eventWords(ev)})
	return err
}

// closeEventAlerts closes the alerts of an event that a dispatch or its closing ends.
func (e *Engine) closeEventAlerts(tx model.Tx, tenantID, eventID string) error {
	if err := alerts.Close(e.Book, tx, tenantID, model.AlertEventUndispatched, eventID); err != nil {
		return err
	}
	return alerts.Close(e.Book, tx, tenantID, model.AlertRequiresManual, eventID)
}

// crewMessageAlert raises, for a message from the field, or closes, for the control room's
// answer, the crew_message alert of the mission: one a mission, whoever of the crew wrote.
func (e *Engine) crewMessageAlert(tx model.Tx, tenantID string, m *model.Mission, msg *model.MissionMessage, fromCrew bool) error {
	if !fromCrew {
		return alerts.Close(e.Book, tx, tenantID, model.AlertCrewMessage, m.ID)
	}
	_, err := alerts.Raise(e.Book, tx, tenantID, model.AlertInput{Kind: model.AlertCrewMessage, Subject: m.ID,
		Priority: m.Priority, EventID: m.EventID, MissionID: m.ID, TeamID: m.TeamID,
		Message: "Message from " + msg.AuthorName + ": " + msg.Text})
	return err
}

// eventWords names an event in an alert: its type in words and its zone.
func eventWords(ev *model.Event) string {
	s := typeWords(ev.Type)
	if ev.ZoneCode != nil {
		s += " in " + *ev.ZoneCode
	}
	return s
}

func priorityWord(p string) string {
	switch p {
	case model.PriorityCritical:
		return "Critical"
	case model.PriorityHigh:
		return "High"
	}
	return "An"
}

// typeWords writes an event type in words: GAS_LEAK is "Gas leak".
func typeWords(t string) string {
	w := strings.ToLower(strings.ReplaceAll(t, "_", " "))
	r, n := utf8.DecodeRuneInString(w)
	if n == 0 {
		return "Event"
	}
	return string(unicode.ToUpper(r)) + w[n:]
}
