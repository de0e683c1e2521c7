package model

// AppendJSON appends the score's JSON to b: the document json.Marshal makes, without
// reflection (a score answer lists every team of the tenant).
func (s *TeamScore) AppendJSON(b []byte) []byte {
	b = append(b, `{"team_id":`...)
	b = appendString(b, s.TeamID)
	b = append(b, `,"team_name":`...)
	b = appendString(b, s.TeamName)
	b = append(b, `,"score":`...)
	b = appendFloatPtr(b, &s.Score)
	if s.Eligible {
		b = append(b, `,"eligible":true`...)
	} else {
		b = append(b, `,"eligible":false`...)
	}
	if s.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendString(b, s.Reason)
	}
	f := &s.Factors
	b = append(b, `,"factors":{"vertical":`...)
	b = appendFloatPtr(b, &f.Vertical)
	b = append(b, `,"availability":`...)
	b = appendFloatPtr(b, &f.Availability)
	b = append(b, `,"proximity":`...)
	b = appendFloatPtr(b, &f.Proximity)
	b = append(b, `,"distance_km":`...)
	b = appendFloatPtr(b, f.DistanceKm)
	b = append(b, `,"equipment":`...)
	b = appendFloatPtr(b, &f.Equipment)
	b = append(b, `,"position_source":`...)
	b = appendString(b, f.PositionSource)
	return append(b, "}}"...)
}
