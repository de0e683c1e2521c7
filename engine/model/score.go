package model

import (
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

// normaliseRequired returns the required equipment lowercased, trimmed, without empty or
// repeated items. An event's list is already in that form and is returned as it is.
func NormaliseRequired(items []string) []string {
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
func (in ScoreInput) Target(tenant *Tenant) (ScoreTarget, error) {
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
	if len(in.RequiredEquipment) > MaxRequiredEquipment {
		return ScoreTarget{}, Invalid("required_equipment", "required_equipment has more than %d items", MaxRequiredEquipment)
	}
	for _, s := range in.RequiredEquipment {
		s = strings.TrimSpace(s)
		if s == "" || utf8.RuneCountInString(s) > MaxRequiredEquipmentLen {
			return ScoreTarget{}, Invalid("required_equipment", "required_equipment items must have 1 to %d characters", MaxRequiredEquipmentLen)
		}
	}
	return ScoreTarget{Vertical: in.Vertical, Lat: in.Lat, Lng: in.Lng,
		RequiredEquipment: NormaliseRequired(in.RequiredEquipment)}, nil
}
