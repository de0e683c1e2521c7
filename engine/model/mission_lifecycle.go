package model

import (
	"slices"
	"strings"
)

// ValidMissionState reports whether s names a mission state.
func ValidMissionState(s string) bool { return slices.Contains(MissionStates, s) }

// MissionFinished reports whether s is a terminal state (COMPLETED or FAILED): a mission
// in it never changes again.
func MissionFinished(s string) bool { return s == MissionCompleted || s == MissionFailed }

// missionNextStep is the one step forward of each non-terminal state on the field path.
var missionNextStep = map[string]string{
	MissionCreated: MissionAck, // ACK proves delivery: SENT is recorded at the same instant
	MissionSent:    MissionAck,
	MissionAck:     MissionOnRoute,
	MissionOnRoute: MissionOnSite,
	MissionOnSite:  MissionCompleted,
}

// AllowedMissionMoves lists the states a client (missions:manage or missions:receive)
// may ask for from state from, in lifecycle order: the next step forward and FAILED.
// CREATED and SENT are never among them: the system sets those. A finished or unknown
// state allows nothing.
func AllowedMissionMoves(from string) []string {
	next, ok := missionNextStep[from]
	if !ok {
		return nil
	}
	return []string{next, MissionFailed}
}

// NextMissionState checks a move of a mission from state from to state to asked by a
// client holding missions:manage (canManage) and/or missions:receive (canReceive), per
// docs/rules.md, Mission lifecycle. It returns nil when the move is allowed, else:
//   - forbidden when the caller holds neither permission;
//   - validation_error on `status` when to is not a mission state;
//   - mission_closed when from is COMPLETED or FAILED (any change to a finished mission);
//   - invalid_transition for anything else that is not one step forward, FAILED from a
//     non-terminal state, or ACK from CREATED — backwards, skipping, the same state
//     again, and CREATED or SENT asked by a client. The message names the allowed next
//     states.
//
// missions:receive moves a mission only along the field path (ACK, ON_ROUTE, ON_SITE,
// COMPLETED, FAILED); missions:manage moves it along the same path (the system alone sets
// CREATED and SENT), so the two differ only in which missions they may touch (the team
// restriction lives in UpdateMissionStatus), not in the moves.
func NextMissionState(from, to string, canManage, canReceive bool) error {
	if !canManage && !canReceive {
		return Errorf(KindForbidden, "this operation needs the %s or %s permission", PermMissionsManage, PermMissionsReceive)
	}
	if !ValidMissionState(to) {
		return Invalid("status", "status must be one of %s", strings.Join(MissionStates, ", "))
	}
	if MissionFinished(from) {
		return Errorf(KindMissionClosed, "the mission is %s: a finished mission cannot change", from)
	}
	allowed := AllowedMissionMoves(from)
	if allowed == nil {
		return Errorf(KindInvalidTransition, "the mission is in an unknown state %s", Quote(from))
	}
	if !slices.Contains(allowed, to) {
		return Errorf(KindInvalidTransition, "%s → %s is not allowed; allowed next: %s", from, to, strings.Join(allowed, ", "))
	}
	return nil
}
