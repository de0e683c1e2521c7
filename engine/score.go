package engine

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Where a team's position comes from, for its proximity (ScoreFactors.PositionSource).
const (
	// PositionMember: the nearest member with a known position.
	PositionMember = "member"
	// PositionZoneCentroid: no member has a known position; the centroid of the team's zone.
	PositionZoneCentroid = "zone_centroid"
	// PositionUnknown: no member has a known position and the team has no zone: proximity
	// 0, so the team ranks below every team with a known position and is never eligible.
	PositionUnknown = "unknown"
	// PositionNoEvent: the event has no position; proximity is 0.5 for every team.
	PositionNoEvent = "event_unknown"
)

// Why a team is not eligible (TeamScore.Reason): the first that applies, in this order.
const (
	ReasonNoMembers      = "the team has no members: nobody would receive the mission"
	ReasonOnMission      = "the team is on a mission"
	ReasonOffDuty        = "the team is off duty"
	ReasonNotAvailable   = "the team is not available"
	ReasonVertical       = "the team does not serve the event's vertical"
	ReasonNoPosition     = "no member of the team has a known position and the team has no zone to measure from"
	ReasonNoEquipment    = "the team holds none of the required equipment"
	ReasonBelowThreshold = "the score is below the dispatch threshold"
)

// unknownProximity is the proximity factor of every team when the event's position is
// unknown.
const unknownProximity = 0.5

// earthRadiusKm is the mean Earth radius DistanceKm uses.
const earthRadiusKm = 6371.0088

// RankTeams scores every team for t and returns them best first; ties go to the nearest
// (unknown distance last), then by name, then id. threshold decides Eligible.
//
// score = vertical × availability × proximity × equipment (docs/rules.md "Dispatch score",
// docs/decisions/0076-score-teams-nobody-receives.md):
//   - availability is 1 for an `available` team with at least one member, else 0: a team
//     with no members is never eligible;
//   - proximity = 1 / (1 + d/10), d the great-circle distance in km from the event to the
//     nearest member with a known position; when no member has one, to the centroid of
//     the team's zone; when the team has no zone either, proximity is 0, so the team
//     ranks below every team with a known position and is never eligible. When the event
//     has no position, proximity is 0.5 for every team.
//
// The numbers are not rounded, so that the order and Eligible always agree with what is
// shown. The required equipment is compared case-insensitively and without surrounding
// blanks; repeated items count once. teams is only read.
func RankTeams(teams []model.Team, t model.ScoreTarget, threshold float64) []model.TeamScore {
	out := make([]model.TeamScore, len(teams))
	if len(teams) == 0 {
		return out
	}
	required := model.NormaliseRequired(t.RequiredEquipment)
	// Haversine terms of the event's position, computed once for every member.
	known := t.Lat != nil && t.Lng != nil
	var evLat, evLng, evCos float64
	if known {
		evLat, evLng = *t.Lat*(math.Pi/180), *t.Lng*(math.Pi/180)
		evCos = math.Cos(evLat)
	}
	// haversine is the term h of a point, which grows with its distance to the event.
	haversine := func(lat, lng float64) float64 {
		lat, lng = lat*(math.Pi/180), lng*(math.Pi/180)
		sLat, sLng := math.Sin((lat-evLat)/2), math.Sin((lng-evLng)/2)
		return sLat*sLat + evCos*math.Cos(lat)*sLng*sLng
	}
	// One backing array for every distance: no allocation per team.
	dists := make([]float64, len(teams))
	for i := range teams {
		tm := &teams[i]
		s := &out[i]
		s.TeamID, s.TeamName = tm.ID, tm.Name
		f := &s.Factors
		if slices.Contains(tm.Verticals, t.Vertical) {
			f.Vertical = 1
		}
		if tm.Status == TeamAvailable && len(tm.Members) > 0 {
			f.Availability = 1
		}
		if known {
			// The nearest member minimises h: one asin per team, not per member.
			best := math.Inf(1)
			for j := range tm.Members {
				m := &tm.Members[j]
				if m.Lat != nil && m.Lng != nil {
					best = math.Min(best, haversine(*m.Lat, *m.Lng))
				}
			}
			f.PositionSource = PositionMember
			if math.IsInf(best, 1) && tm.ZoneCode != "" && t.ZoneCentroid != nil {
				if c, ok := t.ZoneCentroid(tm.ZoneCode); ok {
					best, f.PositionSource = haversine(c.Lat, c.Lng), PositionZoneCentroid
				}
			}
			if math.IsInf(best, 1) {
				f.Proximity, f.PositionSource = 0, PositionUnknown
			} else {
				d := 2 * earthRadiusKm * math.Asin(math.Min(1, math.Sqrt(best)))
				dists[i] = d
				f.DistanceKm = &dists[i]
				f.Proximity = 1 / (1 + d/10)
			}
		} else {
			f.Proximity, f.PositionSource = unknownProximity, PositionNoEvent
		}
		f.Equipment = equipmentShare(tm.Equipment, required)
		s.Score = f.Vertical * f.Availability * f.Proximity * f.Equipment
		s.Eligible = s.Score > 0 && s.Score >= threshold
		if !s.Eligible {
			s.Reason = ineligibleReason(tm, f)
		}
	}
	// Sort an index, not the scores: a score is ~100 bytes, copied at every compare and
	// swap of a sort of the records themselves.
	order := make([]int32, len(out))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return compareScores(&out[a], &out[b]) })
	ranked := make([]model.TeamScore, len(out))
	for i, j := range order {
		ranked[i] = out[j]
	}
	return ranked
}

// ineligibleReason says why a team whose factors are f is not eligible: the first factor
// that is zero, else the threshold.
func ineligibleReason(tm *model.Team, f *model.ScoreFactors) string {
	switch {
	case len(tm.Members) == 0:
		return ReasonNoMembers
	case tm.Status == TeamOnMission:
		return ReasonOnMission
	case tm.Status == TeamOffDuty:
		return ReasonOffDuty
	case tm.Status != TeamAvailable:
		return ReasonNotAvailable
	case f.Vertical == 0:
		return ReasonVertical
	case f.PositionSource == PositionUnknown:
		return ReasonNoPosition
	case f.Equipment == 0:
		return ReasonNoEquipment
	}
	return ReasonBelowThreshold
}

// compareScores orders best first: higher score, then nearer (unknown distance last),
// then name, then id.
func compareScores(a, b *model.TeamScore) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	da, db := a.Factors.DistanceKm, b.Factors.DistanceKm
	switch {
	case da != nil && db != nil:
		if c := cmp.Compare(*da, *db); c != 0 {
			return c
		}
	case da != nil:
		return -1
	case db != nil:
		return 1
	}
	if c := strings.Compare(a.TeamName, b.TeamName); c != 0 {
		return c
	}
	return strings.Compare(a.TeamID, b.TeamID)
}

// equipmentShare is the share of required (normalised) that held covers, compared
// case-insensitively; 1 when nothing is required.
func equipmentShare(held, required []string) float64 {
	if len(required) == 0 {
		return 1
	}
	n := 0
	for _, r := range required {
		for _, h := range held {
			if strings.EqualFold(strings.TrimSpace(h), r) {
				n++
				break
			}
		}
	}
	return float64(n) / float64(len(required))
}

// ScoreTeams ranks p's tenant's teams for an event (in.EventID) or for the vertical,
// position and equipment in the input, against the tenant's dispatch_threshold. With an
// event_id the other fields are ignored.
func (e *Engine) ScoreTeams(ctx context.Context, p model.Principal, in model.ScoreInput) ([]model.TeamScore, error) {
	if in.EventID != "" && !model.ValidID(in.EventID) {
		return nil, model.Invalid("event_id", "event_id must be an event's id")
	}
	var out []model.TeamScore
	err := e.store.View(ctx, func(tx model.Tx) error {
		cfg, err := e.tenantConfig(tx, p.TenantID)
		if err != nil {
			return err
		}
		tenant := cfg.tenant
		var target model.ScoreTarget
		if in.EventID != "" {
			ev, err := tx.Event(p.TenantID, in.EventID)
			if err != nil {
				return err
			}
			target = model.ScoreTarget{Vertical: ev.Vertical, Lat: ev.Lat, Lng: ev.Lng, RequiredEquipment: ev.RequiredEquipment}
		} else if target, err = in.Target(tenant); err != nil {
			return err
		}
		teams, err := tx.Teams(p.TenantID)
		if err != nil {
			return err
		}
		target.ZoneCentroid = cfg.centroid
		out = RankTeams(teams, target, tenant.DispatchThreshold)
		return nil
	})
	return out, err
}
