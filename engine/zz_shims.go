package engine

// Temporary stand-ins for symbols landing from parallel work; deleted at merge.

type TeamScore struct {
	TeamID   string  `json:"team_id"`
	TeamName string  `json:"team_name"`
	Score    float64 `json:"score"`
	Eligible bool    `json:"eligible"`
}

type ScoreTarget struct {
	Vertical          string
	Lat, Lng          *float64
	RequiredEquipment []string
}

func RankTeams(teams []Team, t ScoreTarget, threshold float64) []TeamScore {
	var out []TeamScore
	for _, tm := range teams {
		s := 0.0
		if tm.Status == TeamAvailable {
			for _, v := range tm.Verticals {
				if v == t.Vertical {
					s = 0.5
				}
			}
		}
		out = append(out, TeamScore{TeamID: tm.ID, TeamName: tm.Name, Score: s, Eligible: s > 0 && s >= threshold})
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Score > out[j-1].Score; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

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
