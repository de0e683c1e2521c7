package engine

import (
	"context"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// MissionCrew says, for each device of a mission's team, whether it has acknowledged the
// mission's latest change and when, or since when one waits in its queue (GET
// /v1/missions/:id/crew; docs/decisions/0152-crew-knows.md). It needs missions:view, and a
// field operator reads its own teams' missions only.
func (e *Engine) MissionCrew(ctx context.Context, p model.Principal, missionID string) (*model.MissionCrew, error) {
	if err := p.Require(model.PermMissionsView); err != nil {
		return nil, err
	}
	var out *model.MissionCrew
	err := e.store.View(ctx, func(tx model.Tx) error {
		m, err := e.visibleMission(tx, p, missionID)
		if err != nil {
			return err
		}
		ids, err := tx.DevicesOfTeam(p.TenantID, m.TeamID)
		if err != nil {
			return err
		}
		out = &model.MissionCrew{MissionID: m.ID, AllAcknowledged: len(ids) > 0, Devices: []model.CrewDevice{}}
		for _, id := range ids {
			d, err := tx.Device(p.TenantID, id)
			if model.IsKind(err, model.KindNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			cd := model.CrewDevice{DeviceID: d.ID, Name: d.Name, State: model.CrewNothingQueued, LastSyncAt: d.Sync.LastSyncAt}
			if a := d.Sync.AckOf(m.ID); a != nil {
				cd.State, cd.AcknowledgedAt = model.CrewAcknowledged, model.PtrTo(a.At)
			}
			pending, err := tx.QueueItems(p.TenantID, d.ID, d.Sync.AckThrough, model.SyncQueueMax)
			if err != nil {
				return err
			}
			for i := range pending {
				if pending[i].MissionID == m.ID && (pending[i].Kind == model.QueueMission || pending[i].Kind == model.QueueMissionUpdate) {
					cd.State, cd.PendingSince = model.CrewNotYetReceived, model.PtrTo(pending[i].QueuedAt)
					break
				}
			}
			if cd.State != model.CrewAcknowledged {
				out.AllAcknowledged = false
			}
			out.Devices = append(out.Devices, cd)
		}
		return nil
	})
	return out, err
}
