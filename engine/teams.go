package engine

import "github.com/fieldrelay/fieldrelay/engine/teams"

// The use cases of teams are teams.Roster's, embedded in the Engine.

// Team statuses (engine/teams).
const (
	TeamAvailable = teams.TeamAvailable
	TeamOnMission = teams.TeamOnMission
	TeamOffDuty   = teams.TeamOffDuty
)
