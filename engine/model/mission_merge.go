package model

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Mission moves are facts merged by union (docs/decisions/0198-mission-moves-union.md):
// any node may record a move on its copy of a mission; the copies exchange their
// histories; each node keeps every fact once and derives the status and the times from
// them, the same on every node whatever the order in which the facts arrived.

// TerminalConflict says a mission was recorded both COMPLETED and FAILED: Chosen is the
// terminal state the mission took (the earlier field time, then the smaller node), Other
// the one set aside; both facts stay in the history.
type TerminalConflict struct {
	Chosen   string `json:"chosen"`
	Other    string `json:"other"`
	ChosenAt Time   `json:"chosen_at"`
	OtherAt  Time   `json:"other_at"`
}

// stateRank is a state's place in the lifecycle: COMPLETED and FAILED share the last.
func stateRank(s string) int {
	switch s {
	case MissionCreated:
		return 0
	case MissionSent:
		return 1
	case MissionAck:
		return 2
	case MissionOnRoute:
		return 3
	case MissionOnSite:
		return 4
	case MissionCompleted, MissionFailed:
		return 5
	}
	return -1
}

// factKey identifies a move: the same fact from two copies is kept once.
func factKey(mv *MissionMove) string {
	var fb bytes.Buffer
	if !IsNullJSON(mv.Feedback) && json.Compact(&fb, mv.Feedback) != nil {
		fb.Reset()
		fb.Write(mv.Feedback)
	}
	return strings.Join([]string{mv.From, mv.To, mv.At.UTC().Format(TimeLayout), mv.Actor, mv.Source, mv.Node, fb.String()}, "\x00")
}

// MergeMoves adds to m the facts of moves it does not hold yet and derives m's status,
// times, implied states and terminal conflict from all of them. It returns the facts
// added, in history order. No fact of m is changed or removed.
func MergeMoves(m *Mission, moves []MissionMove) []MissionMove {
	held := make(map[string]bool, len(m.History))
	for i := range m.History {
		held[factKey(&m.History[i])] = true
	}
	var added []MissionMove
	for _, mv := range moves {
		if k := factKey(&mv); !held[k] && stateRank(mv.To) >= 0 {
			held[k] = true
			added = append(added, mv)
		}
	}
	if len(added) > 0 {
		m.History = append(m.History, added...)
		// One order on every node: field time, then lifecycle place, then node.
		slices.SortStableFunc(m.History, func(a, b MissionMove) int {
			if c := a.At.Compare(b.At.Time); c != 0 {
				return c
			}
			if c := stateRank(a.To) - stateRank(b.To); c != 0 {
				return c
			}
			return strings.Compare(a.Node, b.Node)
		})
	}
	DeriveMission(m)
	return added
}

// DeriveMission sets m's status (the furthest state of its history), each *_at (the
// earliest time recorded for its state), the implied states and the terminal conflict.
func DeriveMission(m *Mission) {
	first := map[string]*MissionMove{}
	for i := range m.History {
		mv := &m.History[i]
		if f := first[mv.To]; f == nil || mv.At.Before(f.At.Time) || (mv.At.Equal(f.At.Time) && mv.Node < f.Node) {
			first[mv.To] = mv
		}
	}
	status, rank := m.Status, stateRank(m.Status)
	for s, mv := range first {
		if r := stateRank(s); r > rank {
			status, rank = mv.To, r
		}
	}
	m.TerminalConflict = nil
	c, f := first[MissionCompleted], first[MissionFailed]
	if c != nil && f != nil {
		chosen, other := c, f
		if f.At.Before(c.At.Time) || (f.At.Equal(c.At.Time) && f.Node < c.Node) {
			chosen, other = f, c
		}
		status = chosen.To
		m.TerminalConflict = &TerminalConflict{Chosen: chosen.To, Other: other.To, ChosenAt: chosen.At, OtherAt: other.At}
	}
	m.Status = status
	at := func(s string) *Time {
		if mv := first[s]; mv != nil {
			v := mv.At
			return &v
		}
		return nil
	}
	m.AckAt, m.OnRouteAt, m.OnSiteAt = at(MissionAck), at(MissionOnRoute), at(MissionOnSite)
	m.CompletedAt, m.FailedAt = at(MissionCompleted), at(MissionFailed)
	m.Implied = nil
	for _, s := range []string{MissionSent, MissionAck, MissionOnRoute, MissionOnSite} {
		if stateRank(s) < stateRank(status) && first[s] == nil {
			m.Implied = append(m.Implied, s)
		}
	}
}

// NextFactState checks a move recorded on a copy of another node's mission: the same
// permissions as NextMissionState and a finished copy is closed, but any state further in
// the lifecycle may be recorded (the owner may have moved on already: the union decides).
func NextFactState(from, to string, canManage, canReceive bool) error {
	if err := NextMissionState(from, to, canManage, canReceive); err == nil || !IsKind(err, KindInvalidTransition) {
		return err
	}
	if stateRank(to) <= stateRank(from) {
		return Errorf(KindInvalidTransition, "the mission is %s already: %s is not further", from, to)
	}
	return nil
}
