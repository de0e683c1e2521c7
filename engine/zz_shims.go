package engine

// Temporary stand-ins for symbols landing from parallel work; deleted at merge.

func (e *Engine) MarkMissionSent(tx Tx, tenantID, missionID, channel string) error {
	m, err := tx.Mission(tenantID, missionID)
	if err != nil || m.Status != MissionCreated {
		return err
	}
	now := At(e.clock.Now())
	m.Status, m.ChannelUsed, m.UpdatedAt = MissionSent, &channel, now
	m.History = append(m.History, MissionMove{From: MissionCreated, To: MissionSent, At: now, Actor: NilID, Source: MoveSourceSystem})
	return tx.PutMission(tenantID, m)
}
