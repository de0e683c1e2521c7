package model

// AppendJSON appends the alert's JSON to b: the document json.Marshal makes, without
// reflection (an alert is written with every critical or high event no team was sent to,
// in the commit loop).
func (a *Alert) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, a.ID)
	b = append(b, `,"kind":`...)
	b = appendString(b, a.Kind)
	b = append(b, `,"key":`...)
	b = appendString(b, a.Key)
	b = append(b, `,"priority":`...)
	b = appendString(b, a.Priority)
	b = append(b, `,"message":`...)
	b = appendString(b, a.Message)
	b = append(b, `,"event_id":`...)
	b = appendStringPtr(b, a.EventID)
	b = append(b, `,"mission_id":`...)
	b = appendStringPtr(b, a.MissionID)
	b = append(b, `,"team_id":`...)
	b = appendStringPtr(b, a.TeamID)
	b = append(b, `,"status":`...)
	b = appendString(b, a.Status)
	b = append(b, `,"raised_at":`...)
	b = AppendTime(b, a.RaisedAt)
	b = append(b, `,"acked_at":`...)
	b = appendTimePtr(b, a.AckedAt)
	b = append(b, `,"acked_by":`...)
	b = appendStringPtr(b, a.AckedBy)
	b = append(b, `,"closed_at":`...)
	b = appendTimePtr(b, a.ClosedAt)
	b = append(b, `,"escalated_at":`...)
	b = appendTimePtr(b, a.EscalatedAt)
	b = append(b, `,"updated_at":`...)
	b = AppendTime(b, a.UpdatedAt)
	return append(b, '}')
}
