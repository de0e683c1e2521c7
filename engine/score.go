package engine

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// ScoreFactors are the four factors of a team's score for an event, and where its
// proximity was measured from.
type ScoreFactors struct {
	Vertical     float64  `json:"vertical"`
	Availability float64  `json:"availability"`
	Proximity    float64  `json:"proximity"`
	DistanceKm   *float64 `json:"distance_km"` // null when either position is unknown
	Equipment    float64  `json:"equipment"`
	// PositionSource says where the team's position came from: PositionMember,
	// PositionZoneCentroid, PositionUnknown or PositionNoEvent.
	PositionSource string `json:"position_source"`
}

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

// TeamScore is one team ranked for an event.
type TeamScore struct {
	TeamID   string  `json:"team_id"`
	TeamName string  `json:"team_name"`
	Score    float64 `json:"score"`
	Eligible bool    `json:"eligible"` // score > 0 and at or above the threshold passed to RankTeams
	// Reason says why the team is not eligible; absent when it is.
	Reason  string       `json:"reason,omitempty"`
	Factors ScoreFactors `json:"factors"`
}

// ScoreTarget is what a score is computed for: an event's vertical, position and required
// equipment, and where to find the centroid of a team's zone.
type ScoreTarget struct {
	Vertical          string
	Lat, Lng          *float64
	RequiredEquipment []string
	// ZoneCentroid returns the centroid of the zone with the code, false when there is no
	// such zone; nil when no zone is known.
	ZoneCentroid func(code string) (LatLng, bool)
}

// unknownProximity is the proximity factor of every team when the event's position is
// unknown.
const unknownProximity = 0.5

// earthRadiusKm is the mean Earth radius DistanceKm uses.
const earthRadiusKm = 6371.0088

// RankTeams scores every team for t and returns them best first; ties go to the nearest
// (unknown distance last), then by name, then id. threshold decides Eligible.
//
// score = vertical × availability × proximity × equipment (API.md "Dispatch score",
// docs/decisions.md "Dispatch score: teams nobody can receive"):
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
func RankTeams(teams []Team, t ScoreTarget, threshold float64) []TeamScore {
	out := make([]TeamScore, len(teams))
	if len(teams) == 0 {
		return out
	}
	required := normaliseRequired(t.RequiredEquipment)
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
	ranked := make([]TeamScore, len(out))
	for i, j := range order {
		ranked[i] = out[j]
	}
	return ranked
}

// ineligibleReason says why a team whose factors are f is not eligible: the first factor
// that is zero, else the threshold.
func ineligibleReason(tm *Team, f *ScoreFactors) string {
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
func compareScores(a, b *TeamScore) int {
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

// normaliseRequired returns the required equipment lowercased, trimmed, without empty or
// repeated items. An event's list is already in that form and is returned as it is.
func normaliseRequired(items []string) []string {
	clean := true
	for i, s := range items {
		if s == "" || strings.TrimSpace(s) != s || strings.ToLower(s) != s || (i > 0 && items[i-1] >= s) {
			clean = false
			break
		}
	}
	if clean {
		return items
	}
	out := make([]string, 0, len(items))
	for _, s := range items {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
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

// ScoreInput is the body of POST /v1/teams/dispatch/score: an event, or the vertical,
// position and required equipment of one.
type ScoreInput struct {
	EventID           string   `json:"event_id"`
	Vertical          string   `json:"vertical"`
	Lat               *float64 `json:"lat"`
	Lng               *float64 `json:"lng"`
	RequiredEquipment []string `json:"required_equipment"`
}

// target checks an input that names no event and returns what it describes.
func (in ScoreInput) target(tenant *Tenant) (ScoreTarget, error) {
	if in.Vertical == "" {
		return ScoreTarget{}, Invalid("vertical", "vertical is required when no event_id is given")
	}
	if !tenant.HasVertical(in.Vertical) {
		return ScoreTarget{}, Invalid("vertical", "vertical %s is not enabled for this tenant", Quote(in.Vertical))
	}
	switch {
	case in.Lat == nil && in.Lng != nil:
		return ScoreTarget{}, Invalid("lat", "lat and lng go together")
	case in.Lat != nil && in.Lng == nil:
		return ScoreTarget{}, Invalid("lng", "lat and lng go together")
	case in.Lat != nil:
		if !ValidLatLng(*in.Lat, 0) {
			return ScoreTarget{}, Invalid("lat", "lat must be within -90..90")
		}
		if !ValidLatLng(0, *in.Lng) {
			return ScoreTarget{}, Invalid("lng", "lng must be within -180..180")
		}
	}
	if len(in.RequiredEquipment) > maxRequiredEquipment {
		return ScoreTarget{}, Invalid("required_equipment", "required_equipment has more than %d items", maxRequiredEquipment)
	}
	for _, s := range in.RequiredEquipment {
		s = strings.TrimSpace(s)
		if s == "" || utf8.RuneCountInString(s) > maxRequiredEquipmentLen {
			return ScoreTarget{}, Invalid("required_equipment", "required_equipment items must have 1 to %d characters", maxRequiredEquipmentLen)
		}
	}
	return ScoreTarget{Vertical: in.Vertical, Lat: in.Lat, Lng: in.Lng,
		RequiredEquipment: normaliseRequired(in.RequiredEquipment)}, nil
}

// ScoreTeams ranks p's tenant's teams for an event (in.EventID) or for the vertical,
// position and equipment in the input, against the tenant's dispatch_threshold. With an
// event_id the other fields are ignored.
func (e *Engine) ScoreTeams(ctx context.Context, p Principal, in ScoreInput) ([]TeamScore, error) {
	if in.EventID != "" && !ValidID(in.EventID) {
		return nil, Invalid("event_id", "event_id must be an event's id")
	}
	var out []TeamScore
	err := e.store.View(ctx, func(tx Tx) error {
		cfg, err := e.tenantConfig(tx, p.TenantID)
		if err != nil {
			return err
		}
		tenant := cfg.tenant
		var target ScoreTarget
		if in.EventID != "" {
			ev, err := tx.Event(p.TenantID, in.EventID)
			if err != nil {
				return err
			}
			target = ScoreTarget{Vertical: ev.Vertical, Lat: ev.Lat, Lng: ev.Lng, RequiredEquipment: ev.RequiredEquipment}
		} else if target, err = in.target(tenant); err != nil {
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
