package upstream

import (
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/teams"
)

// Removals come down (docs/decisions/0203-removals-down.md): a central zone or team that
// no longer goes to the site (deleted, routed to another site) comes as null, or is
// absent from a snapshot; the site removes its copy. A team on a mission here stays, read
// only as before and marked removed_at, until the mission ends: the crew's work is the
// site's.

// removeTeam removes old, the site's copy of a central team (nil: none) that the owner's
// change at version no longer sends here; a copy newer than the change, the site's own
// team or another owner's is left.
func (u *Runner) removeTeam(tx model.Tx, tenantID, owner string, version int64, old *model.Team) error {
	if old == nil || old.Origin == nil || *old.Origin != owner || old.OriginVersion > version {
		return nil
	}
	if old.Status == teams.TeamOnMission {
		if old.RemovedAt == nil {
			now := model.At(u.clock.Now())
			old.RemovedAt = &now
		}
		old.OriginVersion = version
		return tx.PutTeam(tenantID, old)
	}
	return tx.DeleteTeam(tenantID, old.ID)
}

// removeAbsent removes, after a snapshot of owner's records, the copies of the owner's
// zones and teams the snapshot does not hold: what was deleted or routed elsewhere while
// the site could not follow the log.
func (u *Runner) removeAbsent(tx model.Tx, tenantID string, ans *model.DownPull) error {
	held := map[string]map[string]bool{model.DownZone: {}, model.DownTeam: {}}
	for i := range ans.Changes {
		if m := held[ans.Changes[i].Kind]; m != nil {
			m[ans.Changes[i].Key] = true
		}
	}
	zs, err := tx.Zones(tenantID)
	if err != nil {
		return err
	}
	for i := range zs {
		if z := &zs[i]; z.Origin != nil && *z.Origin == ans.NodeID && !held[model.DownZone][z.Code] {
			if err := tx.DeleteZone(tenantID, z.Code); err != nil {
				return err
			}
		}
	}
	ts, err := tx.Teams(tenantID)
	if err != nil {
		return err
	}
	for i := range ts {
		if t := &ts[i]; t.Origin != nil && *t.Origin == ans.NodeID && !held[model.DownTeam][t.ID] {
			if err := u.removeTeam(tx, tenantID, ans.NodeID, ans.Through, t); err != nil {
				return err
			}
		}
	}
	return nil
}
