// Package teams holds a tenant's teams: create, change, members and their positions, read
// and list. A team's change goes to the stream.
//
// A Roster is built from the store, the clock and what it needs of the engine as
// functions (the write frame, the stream). It never sees the engine:
// engine/layering_test.go holds it. The engine embeds it, so that its use cases are the
// Engine's.
package teams

import (
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// StreamUpdated names the stream's change of a team (its status, members or a member's
// position); its data is the Team.
const StreamUpdated = "team.updated"

// Roster runs the use cases of teams.
type Roster struct {
	store   model.Store
	clock   model.Clock
	frame   writes.Frame
	publish func(tx model.TxCommit, tenantID, name string, perm model.Permission, teamID string, payload any) error
}

// New returns the Roster of an engine: frame is the engine's write frame, publish sends a
// change of a tenant to its stream once tx commits.
func New(store model.Store, clock model.Clock, frame writes.Frame,
	publish func(tx model.TxCommit, tenantID, name string, perm model.Permission, teamID string, payload any) error) *Roster {
	return &Roster{store: store, clock: clock, frame: frame, publish: publish}
}

// Create creates a team of a tenant within tx (a new tenant's teams). A function, not a
// method, so that the Engine that embeds a Roster does not show it.
func Create(r *Roster, tx model.Tx, tenantID string, in model.TeamInput) (*model.Team, error) {
	return r.createTeam(tx, tenantID, in)
}
