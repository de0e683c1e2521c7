package upstream

import (
	"fmt"
	"slices"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/teams"
)

// A central team's status is the site's (docs/decisions/0202-team-status-up.md): the site
// logs each move of a copy's status in its change log (model.ChangeTeamStatus), the push
// sends it as it stands (teamStatusOf), and the central node sets it on its team
// (applyTeamStatus), so that a regional dispatcher sees what the site sees.

// teamStatuses are the statuses a team may report.
var teamStatuses = []string{teams.TeamAvailable, teams.TeamOnMission, teams.TeamOffDuty}

// teamStatusOf is the upstream_team_status payload of a team as it stands in tx.
func teamStatusOf(tx Tx, tenantID, id string) (*model.TeamStatusReport, error) {
	t, err := tx.Team(tenantID, id)
	if err != nil {
		return nil, err
	}
	return &model.TeamStatusReport{TeamID: t.ID, Status: t.Status, StatusSince: t.StatusSince}, nil
}

// applyTeamStatus sets the status a site reports on this node's team routed to it
// (site_id, the sending device). The same status and status_since is a duplicate. A team
// not held here, a copy of another node's, or one routed elsewhere is a conflict: the
// site's report is refused and its sequence number settled. Nothing is logged down: the
// status is not the central node's to send.
func applyTeamStatus(tx Tx, tenantID string, d *model.Device, it *model.DeviceItem) (bool, error) {
	var r model.TeamStatusReport
	if err := decodeUpstream(it.Payload, &r, "status_since"); err != nil {
		return false, err
	}
	if err := requireID("team_id", r.TeamID); err != nil {
		return false, err
	}
	if !slices.Contains(teamStatuses, r.Status) {
		return false, model.Invalid("status", "status must be one of available, on_mission, off_duty")
	}
	t, err := tx.Team(tenantID, r.TeamID)
	if err != nil && !model.IsKind(err, model.KindNotFound) {
		return false, err
	}
	if t == nil || t.Origin != nil || t.SiteID == nil || *t.SiteID != d.ID {
		return false, &model.Error{Kind: model.KindConflict, Field: "team_id",
			Msg: fmt.Sprintf("team %s is not a team of this node routed to this site", r.TeamID)}
	}
	sameSince := (t.StatusSince == nil) == (r.StatusSince == nil) &&
		(t.StatusSince == nil || t.StatusSince.Equal(r.StatusSince.Time))
	if t.Status == r.Status && sameSince {
		return true, nil
	}
	t.Status, t.StatusSince = r.Status, r.StatusSince
	return false, tx.PutTeam(tenantID, t)
}
